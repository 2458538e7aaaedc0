package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
)

// splitGroup parses TENANT/GROUP.
func splitGroup(s string) (string, string, error) {
	t, g, ok := strings.Cut(s, "/")
	if !ok || t == "" || g == "" || strings.Contains(g, "/") {
		return "", "", usageError{fmt.Errorf("%q: want TENANT/GROUP", s)}
	}
	return t, g, nil
}

// startFlags are the flags that say where a group starts or is reset to.
type startFlags struct {
	at        *string
	positions *[]string
}

func addStartFlags(c *cobra.Command, name, def, usage string) startFlags {
	fl := c.Flags()
	return startFlags{
		at: fl.String(name, def, usage),
		positions: fl.StringArray("position", nil,
			"start segment STREAM/SEGMENT at `STREAM/SEGMENT=OFFSET` (repeatable; the other segments start at head); "+
				"a position set saved from `silt group describe -o json`"),
	}
}

// parse turns the flags into a start: head, tail, an RFC 3339 time, or
// saved positions.
func (f startFlags) parse(flagName string) (client.GroupStart, error) {
	if len(*f.positions) > 0 {
		st := client.GroupStart{Kind: client.StartPositions}
		for _, p := range *f.positions {
			ref, off, ok := strings.Cut(p, "=")
			stream, seg, ok2 := strings.Cut(ref, "/")
			n, err := strconv.ParseUint(off, 10, 64)
			if !ok || !ok2 || stream == "" || seg == "" || err != nil {
				return st, usageError{fmt.Errorf("--position %q: want STREAM/SEGMENT=OFFSET", p)}
			}
			st.Positions = append(st.Positions, client.Position{Stream: stream, Segment: seg, Offset: n})
		}
		return st, nil
	}
	switch v := *f.at; v {
	case client.StartHead, client.StartTail:
		return client.GroupStart{Kind: v}, nil
	case "":
		return client.GroupStart{}, usageError{fmt.Errorf("--%s is required: head, tail or a time (RFC 3339), or give --position", flagName)}
	default:
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return client.GroupStart{}, usageError{fmt.Errorf("--%s %q: want head, tail or a time such as 2026-01-02T15:04:05Z", flagName, v)}
		}
		return client.StartAt(t), nil
	}
}

func (a *app) groupCmd() *cobra.Command {
	create := &cobra.Command{
		Use:   "create TENANT/GROUP --stream STREAM...",
		Short: "create a reader group",
		Long: `Creates a reader group: readers that join it share the reading of its streams,
segment by segment, and commit how far they got, so that a reader that stops
is replaced by the others from its last commit (at-least-once). Creating a
group needs admin on every stream it reads.

--start says where the group begins: head (the oldest event still held, the
default), tail (only events appended from now on) or a time (the first event
appended at or after it). --position gives saved positions instead.`,
		Example: `  silt group create acme/billing --stream orders
  silt group create acme/audit --stream orders --stream refunds --start tail
  silt group create acme/replay --stream orders --start 2026-01-02T15:04:05Z --session-timeout 30s`,
		Args: args(1, 1),
	}
	streams := create.Flags().StringArray("stream", nil, "`STREAM` of the tenant the group reads (repeatable)")
	timeout := create.Flags().Duration("session-timeout", 0, "how long a reader may go without a heartbeat before its segments go to the others (default: the server's, 10s)")
	start := addStartFlags(create, "start", client.StartHead, "where the group begins: `head`, tail or an RFC 3339 time")
	create.RunE = func(cmd *cobra.Command, args []string) error {
		tenant, name, err := splitGroup(args[0])
		if err != nil {
			return err
		}
		if len(*streams) == 0 {
			return usageError{errors.New("name the streams the group reads with --stream")}
		}
		st, err := start.parse("start")
		if err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		g, err := cl.CreateGroup(cmd.Context(), tenant, client.GroupSpec{Name: name, Streams: *streams, SessionTimeout: *timeout, Start: st})
		if err != nil {
			return err
		}
		return a.print(g, func(w io.Writer) {
			fmt.Fprintf(w, "created group %s/%s over %s (session timeout %s)\n", g.Tenant, g.Name, strings.Join(g.Streams, ", "), g.SessionTimeout)
		})
	}

	list := &cobra.Command{
		Use:     "list TENANT",
		Short:   "list a tenant's reader groups",
		Long:    "Lists the tenant's reader groups over streams you hold admin on, with their live readers.",
		Example: "  silt group list acme\n  silt group list acme -o json",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			gs, err := cl.ListGroups(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(gs, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tSTREAMS\tREADERS\tGENERATION\tCREATED")
				for _, g := range gs {
					fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", g.Name, strings.Join(g.Streams, ","), len(g.Members), g.Generation, fmtTime(g.Created))
				}
			})
		},
	}

	describe := &cobra.Command{
		Use:   "describe TENANT/GROUP",
		Short: "show a group's readers, their segments and the committed positions",
		Long: `Shows a reader group: its streams, session timeout and generation (which
changes with every rebalance), each live reader with its segments and last
heartbeat, and the committed position of every segment (the next offset to
read). -o json gives positions that silt group reset --position takes back.`,
		Example: "  silt group describe acme/billing\n  silt group describe acme/billing -o json | jq .positions",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant, name, err := splitGroup(args[0])
			if err != nil {
				return err
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			g, err := cl.GetGroup(cmd.Context(), tenant, name)
			if err != nil {
				return err
			}
			return a.print(g, func(w io.Writer) { describeGroup(w, g) })
		},
	}

	lag := &cobra.Command{
		Use:   "lag TENANT/GROUP",
		Short: "show how far a group is behind",
		Long: `Shows how far a reader group is behind, per segment and in total: events not
yet committed (exact), their bytes (estimated from the segment's mean record
size), and the age of the oldest uncommitted event. It is computed from the
committed positions without reading the backlog, and is exact as soon as a
commit returns.

With --watch the table is refreshed every --interval until Ctrl-C: redrawn
in place on a terminal, appended (each after a line with the time; with
-o json one object per line) when output goes to a file or a pipe.`,
		Example: "  silt group lag acme/billing\n  silt group lag acme/billing -o json | jq .events_behind\n  silt group lag acme/billing --watch --interval 5s",
		Args:    args(1, 1),
	}
	watchLag := lag.Flags().Bool("watch", false, "refresh the table every --interval until Ctrl-C")
	lagWatch := addWatchFlags(lag, "--watch")
	lag.RunE = func(cmd *cobra.Command, args []string) error {
		tenant, name, err := splitGroup(args[0])
		if err != nil {
			return err
		}
		if !*watchLag && (cmd.Flags().Changed("interval") || cmd.Flags().Changed("count")) {
			return usageError{errors.New("--interval and -n go with --watch")}
		}
		if err := lagWatch.validate(); err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		next := func(ctx context.Context, _ bool) (frame, error) {
			l, err := cl.GroupLag(ctx, tenant, name)
			return frame{v: l, text: func(w io.Writer) { lagTable(w, l) }}, err
		}
		if *watchLag {
			ctx, cancel := signalContext()
			defer cancel()
			return a.watch(ctx, lagWatch, next, false)
		}
		fr, err := next(cmd.Context(), false)
		if err != nil {
			return err
		}
		return a.print(fr.v, fr.text)
	}

	reset := &cobra.Command{
		Use:   "reset TENANT/GROUP --to head|tail|TIME",
		Short: "move a group's positions to head, tail, a time or saved positions",
		Long: `Moves every committed position of a reader group: to head (the oldest event
still held), tail (the current end: skip the backlog), a time (the first
event appended at or after it), or saved positions (--position). While
readers are live the server refuses; --force drops them, and they rejoin at
the new positions.`,
		Example: `  silt group reset acme/billing --to tail
  silt group reset acme/billing --to 2026-01-02T15:04:05Z --force
  silt group reset acme/billing --position orders/0=1200 --position orders/1=980`,
		Args: args(1, 1),
	}
	to := addStartFlags(reset, "to", "", "where to move: `head`, tail or an RFC 3339 time")
	forceReset := reset.Flags().Bool("force", false, "reset even while readers are live (they are dropped and rejoin)")
	reset.RunE = func(cmd *cobra.Command, args []string) error {
		tenant, name, err := splitGroup(args[0])
		if err != nil {
			return err
		}
		st, err := to.parse("to")
		if err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		g, err := cl.ResetGroup(cmd.Context(), tenant, name, st, *forceReset)
		if err != nil {
			return err
		}
		return a.print(g, func(w io.Writer) {
			fmt.Fprintf(w, "reset group %s/%s\n", g.Tenant, g.Name)
			printPositions(w, g.Positions)
		})
	}

	del := &cobra.Command{
		Use:   "delete TENANT/GROUP",
		Short: "delete a reader group and its positions",
		Long: `Deletes a reader group and its committed positions (the streams are not
touched). While readers are live the server refuses; --force deletes anyway.
On a terminal silt asks first; --yes does not ask.`,
		Example: "  silt group delete acme/billing\n  silt group delete acme/billing --force --yes",
		Args:    args(1, 1),
	}
	forceDel := del.Flags().Bool("force", false, "delete even while readers are live")
	addYesFlag(del)
	del.RunE = func(cmd *cobra.Command, args []string) error {
		tenant, name, err := splitGroup(args[0])
		if err != nil {
			return err
		}
		if err := a.confirm(cmd, fmt.Sprintf("Delete reader group %s/%s and its positions?", tenant, name)); err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		if err := cl.DeleteGroup(cmd.Context(), tenant, name, *forceDel); err != nil {
			return err
		}
		return a.done(map[string]string{"deleted": "group", "tenant": tenant, "group": name}, fmt.Sprintf("deleted group %s/%s", tenant, name))
	}
	return group("group", "manage reader groups (shared reading with committed positions)",
		"  silt group create acme/billing --stream orders\n  silt group lag acme/billing\n  silt read acme --group billing",
		create, list, describe, lag, reset, del)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func describeGroup(w io.Writer, g client.Group) {
	fmt.Fprintf(w, "group\t%s/%s\nstreams\t%s\nsession timeout\t%s\ngeneration\t%d\ncreated\t%s\n",
		g.Tenant, g.Name, strings.Join(g.Streams, ", "), g.SessionTimeout, g.Generation, fmtTime(g.Created))
	fmt.Fprintln(w, "\nREADER\tSEGMENTS\tLAST HEARTBEAT")
	for _, m := range g.Members {
		var segs []string
		for _, s := range m.Segments {
			segs = append(segs, s.Stream+"/"+s.Segment)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", m.ID, strings.Join(segs, ","), fmtTime(m.LastHeartbeat))
	}
	fmt.Fprintln(w)
	printPositions(w, g.Positions)
}

func printPositions(w io.Writer, ps []client.Position) {
	fmt.Fprintln(w, "STREAM\tSEGMENT\tPOSITION\tCOMMITTED")
	for _, p := range ps {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", p.Stream, p.Segment, p.Offset, fmtTime(p.Committed))
	}
}

// readGroup reads the reader's share of a group up to now, committing
// after each batch is written out, and leaves the group at the end.
func (a *app) readGroup(ctx context.Context, cl *client.Client, tenant, group, member string, max int) error {
	// A minute of retries carries the reader over a restart of the server
	// or a network blip; longer, and a script is better told.
	r, err := cl.NewGroupReader(ctx, tenant, group, client.GroupReaderOptions{Member: member, Max: 1000,
		RetryTimeout: time.Minute, OnRetry: retryNotice(a.stderr, "silt read", "not answered", 5*time.Second)})
	if err != nil {
		return err
	}
	leave := func() {
		// A fresh context: after Ctrl-C the reader should still leave at
		// once rather than hold its segments for a session timeout.
		lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Close(lctx); err != nil {
			fmt.Fprintf(a.stderr, "silt: leaving group %s: %v\n", group, err)
		}
	}
	defer leave()
	out := bufio.NewWriterSize(a.stdout, 64<<10)
	defer out.Flush()
	emitters := map[string]func(*bufio.Writer, client.Event) error{}
	printed := 0
	for max <= 0 || printed < max {
		evs, err := r.Next(ctx)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break // caught up
		}
		if max > 0 && printed+len(evs) > max {
			// Commit only what is printed: the rest is read again.
			evs = evs[:max-printed]
			if err := a.emitGroup(ctx, cl, out, emitters, tenant, evs); err != nil {
				return err
			}
			last := evs[len(evs)-1] // one Next reads one segment
			return r.CommitPositions(ctx, []client.Position{{Stream: last.Stream, Segment: last.Segment, Offset: last.Offset + 1}})
		}
		if err := a.emitGroup(ctx, cl, out, emitters, tenant, evs); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if err := r.Commit(ctx); err != nil && !errors.Is(err, client.ErrRebalanced) {
			return err
		}
		printed += len(evs)
	}
	return nil
}

func (a *app) emitGroup(ctx context.Context, cl *client.Client, out *bufio.Writer, emitters map[string]func(*bufio.Writer, client.Event) error, tenant string, evs []client.GroupEvent) error {
	for _, ev := range evs {
		emit, ok := emitters[ev.Stream]
		if !ok {
			var err error
			if emit, err = a.emitter(ctx, cl, tenant, ev.Stream); err != nil {
				return err
			}
			emitters[ev.Stream] = emit
		}
		if err := emit(out, ev.Event); err != nil {
			return err
		}
	}
	return out.Flush()
}

// runGroupRead is silt read TENANT --group GROUP.
func (a *app) runGroupRead(cmd *cobra.Command, tenant, group, member string, max int) error {
	for _, f := range []string{"cursor", "segment", "from", "from-end"} {
		if cmd.Flags().Changed(f) {
			return usageError{fmt.Errorf("--%s does not go with --group: a group reads from its committed positions (see silt group reset)", f)}
		}
	}
	if strings.Contains(tenant, "/") {
		return usageError{fmt.Errorf("%q: with --group, give the TENANT only (the group names its streams)", tenant)}
	}
	cl, err := a.client(cmd)
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	return a.readGroup(ctx, cl, tenant, group, member, max)
}

func lagTable(w io.Writer, l client.GroupLag) {
	fmt.Fprintln(w, "STREAM\tSEGMENT\tREADER\tCOMMITTED\tNEXT\tEVENTS BEHIND\tBYTES BEHIND (EST.)\tSECONDS BEHIND")
	for _, s := range l.Segments {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.1f\n", s.Stream, s.Segment, orDash(s.Reader), s.Committed, s.Next, s.EventsBehind, s.BytesBehind, s.SecondsBehind)
	}
	fmt.Fprintf(w, "total\t\t\t\t\t%d\t%d\t%.1f\n", l.EventsBehind, l.BytesBehind, l.SecondsBehind)
}
