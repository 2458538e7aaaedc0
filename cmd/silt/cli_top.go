package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
)

// silt top samples what the native API already answers — each stream's
// segment state (next offsets and bytes) and each reader group's lag and
// committed positions — and turns two samples into rates. It needs no
// metrics endpoint and sees exactly what the caller may read.

// topStream is one row of silt top's stream table.
type topStream struct {
	Tenant       string  `json:"tenant"`
	Stream       string  `json:"stream"`
	Events       uint64  `json:"events"` // ever appended: the sum of next offsets
	EventsPerSec float64 `json:"events_per_second"`
	// Tier1Bytes is what the stream holds in tier 1 (not yet tiered). It
	// shrinks as tiering moves data, so it gives no append rate.
	Tier1Bytes int64 `json:"tier1_bytes"`
}

// topGroup is one row of silt top's group table.
type topGroup struct {
	Tenant        string  `json:"tenant"`
	Group         string  `json:"group"`
	Readers       int     `json:"readers"`
	EventsPerSec  float64 `json:"events_per_second"` // committed per second
	EventsBehind  uint64  `json:"events_behind"`
	BytesBehind   int64   `json:"bytes_behind"`
	SecondsBehind float64 `json:"seconds_behind"`
}

// topFrame is what one refresh shows (and -o json prints).
type topFrame struct {
	Time     time.Time   `json:"time"`
	Interval float64     `json:"interval_seconds"` // between the two samples
	Streams  []topStream `json:"streams"`
	Groups   []topGroup  `json:"groups"`
}

// topSample is the raw state at one moment.
type topSample struct {
	at        time.Time
	streams   map[string]topStream // "tenant/stream"
	committed map[string]uint64    // "tenant/group" -> sum of committed offsets
	groups    map[string]topGroup
}

func (a *app) topCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "top [TENANT...]",
		Short: "show the busiest streams and reader groups, live",
		Long: `Shows the busiest streams (events appended per second, events in all, bytes
still in tier 1) and reader groups (events committed per second, events,
bytes and seconds behind), like top: refreshed every --interval until Ctrl-C, redrawn in place on a terminal
and appended when output goes to a file or a pipe (-o json: one object per
line). Rates come from two samples of the native API, --interval apart, so
the first table appears after one interval. --once (or -n 1) prints one
table and exits, for scripts.

It looks at the given tenants, or every tenant the caller can see, and only
at what the caller may read (groups: those it administers). Each refresh
reads every such stream's state and every group's lag, up to --max-streams
streams: name tenants on installations with many streams.`,
		Example: `  silt top
  silt top acme --interval 5s
  silt top acme --once -o json | jq '.streams[0]'`,
	}
	wf := addWatchFlags(cmd, "the tables")
	once := cmd.Flags().Bool("once", false, "print one table (two samples --interval apart) and exit (-n 1)")
	limit := cmd.Flags().Int("limit", 10, "show the busiest `N` streams and groups")
	maxStreams := cmd.Flags().Int("max-streams", 1000, "read at most `N` streams' state a refresh")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := wf.validate(); err != nil {
			return err
		}
		if *once {
			if cmd.Flags().Changed("count") && *wf.count != 1 {
				return usageError{fmt.Errorf("--once and -n %d disagree", *wf.count)}
			}
			*wf.count = 1
		}
		if *limit < 1 || *maxStreams < 1 {
			return usageError{errors.New("--limit and --max-streams: want 1 or more")}
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		ctx, cancel := signalContext()
		defer cancel()
		t := &topper{a: a, cl: cl, tenants: args, limit: *limit, maxStreams: *maxStreams}
		return a.watch(ctx, wf, t.next, true)
	}
	return cmd
}

type topper struct {
	a          *app
	cl         *client.Client
	tenants    []string
	limit      int
	maxStreams int
	prev       *topSample
	warned     bool
}

func (t *topper) next(ctx context.Context, first bool) (frame, error) {
	cur, err := t.sample(ctx)
	if err != nil {
		return frame{}, err
	}
	prev := t.prev
	t.prev = cur
	if first {
		return frame{}, nil
	}
	f := rates(prev, cur, t.limit)
	return frame{v: f, text: func(w io.Writer) { topText(w, f) }}, nil
}

func (t *topper) sample(ctx context.Context) (*topSample, error) {
	s := &topSample{streams: map[string]topStream{}, committed: map[string]uint64{}, groups: map[string]topGroup{}}
	tenants := t.tenants
	if len(tenants) == 0 {
		ts, err := t.cl.ListTenants(ctx)
		if err != nil {
			return nil, err
		}
		for _, tn := range ts {
			tenants = append(tenants, tn.Name)
		}
	}
	n := 0
	for _, tenant := range tenants {
		for st, err := range t.cl.Streams(ctx, tenant) {
			if err != nil {
				return nil, err
			}
			if n >= t.maxStreams {
				if !t.warned {
					fmt.Fprintf(t.a.stderr, "silt top: showing the first %d streams only (--max-streams); name tenants to narrow\n", t.maxStreams)
					t.warned = true
				}
				break
			}
			n++
			full, err := t.cl.GetStream(ctx, tenant, st.Name)
			if client.IsNotFound(err) {
				continue // deleted since it was listed
			}
			if err != nil {
				return nil, err
			}
			row := topStream{Tenant: tenant, Stream: st.Name}
			for _, sg := range full.Segments {
				row.Events += sg.NextOffset
				row.Tier1Bytes += sg.Bytes
			}
			s.streams[tenant+"/"+st.Name] = row
		}
		groups, err := t.cl.ListGroups(ctx, tenant)
		if err != nil && !client.IsForbidden(err) {
			return nil, err
		}
		for _, g := range groups {
			l, err := t.cl.GroupLag(ctx, tenant, g.Name)
			if client.IsNotFound(err) || client.IsForbidden(err) || client.IsConflict(err) {
				continue // gone, not readable, or over a deleted stream
			}
			if err != nil {
				return nil, err
			}
			k := tenant + "/" + g.Name
			var sum uint64
			for _, sg := range l.Segments {
				sum += sg.Committed
			}
			s.committed[k] = sum
			s.groups[k] = topGroup{Tenant: tenant, Group: g.Name, Readers: len(g.Members),
				EventsBehind: l.EventsBehind, BytesBehind: l.BytesBehind, SecondsBehind: l.SecondsBehind}
		}
	}
	s.at = time.Now()
	return s, nil
}

// rates turns two samples into the busiest rows. A stream or group that
// appears only in cur (created in between) gets no rate yet; counts that
// went down (a stream deleted and created again, a group reset) give 0.
func rates(prev, cur *topSample, limit int) topFrame {
	secs := cur.at.Sub(prev.at).Seconds()
	f := topFrame{Time: cur.at.UTC(), Interval: secs, Streams: []topStream{}, Groups: []topGroup{}}
	per := func(now, before uint64) float64 {
		if now < before || secs <= 0 {
			return 0
		}
		return float64(now-before) / secs
	}
	for k, row := range cur.streams {
		if p, ok := prev.streams[k]; ok {
			row.EventsPerSec = per(row.Events, p.Events)
		}
		f.Streams = append(f.Streams, row)
	}
	for k, row := range cur.groups {
		if p, ok := prev.committed[k]; ok {
			row.EventsPerSec = per(cur.committed[k], p)
		}
		f.Groups = append(f.Groups, row)
	}
	slices.SortFunc(f.Streams, func(a, b topStream) int {
		return cmp.Or(cmp.Compare(b.EventsPerSec, a.EventsPerSec), cmp.Compare(b.Tier1Bytes, a.Tier1Bytes),
			strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Stream, b.Stream))
	})
	slices.SortFunc(f.Groups, func(a, b topGroup) int {
		return cmp.Or(cmp.Compare(b.EventsBehind, a.EventsBehind), cmp.Compare(b.EventsPerSec, a.EventsPerSec),
			strings.Compare(a.Tenant, b.Tenant), strings.Compare(a.Group, b.Group))
	})
	f.Streams = f.Streams[:min(limit, len(f.Streams))]
	f.Groups = f.Groups[:min(limit, len(f.Groups))]
	return f
}

func topText(w io.Writer, f topFrame) {
	fmt.Fprintf(w, "busiest streams (rates over %.1fs)\n", f.Interval)
	fmt.Fprintln(w, "STREAM\tEVENTS/S\tEVENTS\tTIER-1 BYTES")
	for _, s := range f.Streams {
		fmt.Fprintf(w, "%s/%s\t%.1f\t%d\t%s\n", s.Tenant, s.Stream, s.EventsPerSec, s.Events, humanBytes(float64(s.Tier1Bytes)))
	}
	fmt.Fprintln(w, "\nreader groups, most behind first")
	fmt.Fprintln(w, "GROUP\tREADERS\tCOMMITTED/S\tEVENTS BEHIND\tBYTES BEHIND (EST.)\tSECONDS BEHIND")
	for _, g := range f.Groups {
		fmt.Fprintf(w, "%s/%s\t%d\t%.1f\t%d\t%s\t%.1f\n", g.Tenant, g.Group, g.Readers, g.EventsPerSec, g.EventsBehind, humanBytes(float64(g.BytesBehind)), g.SecondsBehind)
	}
}

// humanBytes writes n bytes in binary units (1.5 KiB).
func humanBytes(n float64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	div, exp := float64(unit), 0
	for n/div >= unit && exp < 5 {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", n/div, "KMGTPE"[exp])
}
