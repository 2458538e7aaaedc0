package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
)

func (a *app) appendCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "append TENANT/STREAM",
		Short: "append events from stdin or a file",
		Long: `Appends events from stdin or --file through a batching, idempotent producer:
a batch that is retried is stored once. The input splits into events by
--input: lines (one event per line), framed (4-byte big-endian length +
bytes) or whole (the entire input is one event).

A server that refuses appends for a while (503 while its tier-2 backlog is
full) or is not reachable (not started yet, restarting) is retried until
--delivery-timeout.`,
		Example: `  printf '{"user":1}\n{"user":2}\n' | silt append acme/clicks --key user-1
  silt append acme/clicks --file events.ndjson
  silt append acme/clicks --file big.ndjson --delivery-timeout 10m
  silt append acme/blobs --input whole --file picture.png`,
		Args: args(1, 1),
	}
	fl := cmd.Flags()
	file := fl.StringP("file", "f", "", "read events from `FILE` instead of stdin")
	key := fl.StringP("key", "k", "", "routing `KEY`: events with one key keep their order (default: spread over segments)")
	input := fl.String("input", "lines", "how the input splits into events: `lines|framed|whole`")
	progress := fl.Bool("progress", isTerminal(a.stderr), "show progress on stderr (default: when stderr is a terminal)")
	deliveryTimeout := fl.Duration("delivery-timeout", 2*time.Minute, "give up on a batch the server has not acknowledged after this long of retrying (503 while tier 2 is backed up, server unreachable); 0 retries until interrupted")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		tenant, stream, err := splitStream(args[0])
		if err != nil {
			return err
		}
		split, err := splitter(*input)
		if err != nil {
			return usageError{err}
		}
		in, total := a.stdin, int64(-1)
		if *file != "" {
			f, err := os.Open(*file)
			if err != nil {
				return err
			}
			defer f.Close()
			if st, err := f.Stat(); err == nil {
				total = st.Size()
			}
			in = f
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		return a.runAppend(cl, tenant, stream, appendOptions{
			in: in, total: total, split: split, key: *key, progress: *progress, deliveryTimeout: *deliveryTimeout,
		})
	}
	return cmd
}

type appendOptions struct {
	in              io.Reader
	total           int64 // input size, -1 if unknown
	split           func(r *bufio.Reader, fn func([]byte) error) error
	key             string
	progress        bool
	deliveryTimeout time.Duration
}

func (a *app) runAppend(cl *client.Client, tenant, stream string, o appendOptions) error {
	ctx, cancel := signalContext()
	defer cancel()
	prod, err := cl.NewProducer(tenant, stream, client.ProducerOptions{
		DeliveryTimeout: o.deliveryTimeout,
		OnRetry:         retryNotice(a.stderr, "silt append", "not acknowledged", 5*time.Second),
	})
	if err != nil {
		return err
	}
	counter := &countingReader{r: o.in}
	var (
		sent    int
		acked   int
		firstEr error
		mu      sync.Mutex
		pending = make(chan *client.Future, 4096)
		waited  = make(chan struct{})
	)
	go func() { // collect acknowledgements in order; the channel bounds memory
		defer close(waited)
		for f := range pending {
			_, err := f.Wait(ctx)
			mu.Lock()
			if err != nil && firstEr == nil {
				firstEr = err
			}
			if err == nil {
				acked++
			}
			mu.Unlock()
		}
	}()
	stop := make(chan struct{})
	if o.progress {
		go showProgress(a.stderr, stop, counter, o.total, func() int { mu.Lock(); defer mu.Unlock(); return acked })
	}
	readErr := o.split(bufio.NewReaderSize(counter, 1<<20), func(ev []byte) error {
		mu.Lock()
		e := firstEr
		mu.Unlock()
		if e != nil {
			return e
		}
		f, err := prod.Send(ctx, o.key, ev)
		if err != nil {
			return err
		}
		sent++
		pending <- f
		return nil
	})
	close(pending)
	flushErr := prod.Close(ctx)
	<-waited
	close(stop)
	if o.progress {
		fmt.Fprintln(a.stderr)
	}
	// A failed batch fails its futures and Close with the same error,
	// and the input loop stops on it: say it once.
	var errs []error
	for _, e := range []error{readErr, firstEr, flushErr} {
		if e != nil && !slices.ContainsFunc(errs, func(x error) bool { return x == e || x.Error() == e.Error() }) {
			errs = append(errs, e)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if sent == 0 {
			return err
		}
		return fmt.Errorf("%d of %d events acknowledged before the error: %w", acked, sent, err)
	}
	if a.output == "json" {
		return json.NewEncoder(a.stdout).Encode(map[string]any{"events": acked, "writer_id": prod.WriterID()})
	}
	fmt.Fprintf(a.stderr, "appended %d events to %s/%s\n", acked, tenant, stream)
	return nil
}

// retryNotice returns a retry callback (Producer, GroupReader) that tells
// the user, at most once per interval, why verb is waiting: without it a
// server refusing appends (503 while its tier-2 backlog is full) or one
// that is unreachable looks like a hang.
func retryNotice(w io.Writer, verb, what string, every time.Duration) func(error, int, time.Duration) {
	var (
		mu   sync.Mutex
		last time.Time
	)
	return func(err error, attempt int, wait time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) >= every {
			last = now
			fmt.Fprintf(w, "%s: %s yet (attempt %d: %v); retrying in %s\n", verb, what, attempt, err, wait.Round(time.Millisecond))
		}
	}
}

func splitter(kind string) (func(r *bufio.Reader, fn func([]byte) error) error, error) {
	switch kind {
	case "lines":
		return func(r *bufio.Reader, fn func([]byte) error) error {
			for {
				line, err := r.ReadBytes('\n')
				if len(line) > 0 {
					if line[len(line)-1] == '\n' {
						line = line[:len(line)-1]
					}
					if err := fn(line); err != nil {
						return err
					}
				}
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
			}
		}, nil
	case "framed":
		return func(r *bufio.Reader, fn func([]byte) error) error {
			var hdr [4]byte
			for {
				if _, err := io.ReadFull(r, hdr[:]); err == io.EOF {
					return nil
				} else if err != nil {
					return fmt.Errorf("framed input: truncated length: %w", err)
				}
				ev := make([]byte, binary.BigEndian.Uint32(hdr[:]))
				if _, err := io.ReadFull(r, ev); err != nil {
					return fmt.Errorf("framed input: truncated event: %w", err)
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
		}, nil
	case "whole":
		return func(r *bufio.Reader, fn func([]byte) error) error {
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			return fn(b)
		}, nil
	}
	return nil, fmt.Errorf("--input %q: want lines, framed or whole", kind)
}

type countingReader struct {
	r  io.Reader
	mu sync.Mutex
	n  int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	c.n += int64(n)
	c.mu.Unlock()
	return n, err
}

func (c *countingReader) count() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func showProgress(w io.Writer, stop <-chan struct{}, r *countingReader, total int64, acked func() int) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		n := r.count()
		rate := float64(n) / time.Since(start).Seconds() / (1 << 20)
		if total > 0 {
			fmt.Fprintf(w, "\r%5.1f%%  %d/%d MiB  %d events acknowledged  %.1f MiB/s ", 100*float64(n)/float64(total), n>>20, total>>20, acked(), rate)
		} else {
			fmt.Fprintf(w, "\r%d MiB read  %d events acknowledged  %.1f MiB/s ", n>>20, acked(), rate)
		}
	}
}

func (a *app) readCmd(follow bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "read TENANT/STREAM",
		Short: "read events from any position",
		Long: `Reads a stream's events up to now, from the beginning, a cursor or an offset
in one segment, and prints the cursor to resume from on stderr.

-o text prints each event on a line (on a terminal, an event with control
characters or invalid UTF-8 is printed Go-quoted); -o json prints one object
per event with its segment, offset and base64 data; -o raw prints the stream's
encoding as it is stored (framed streams: 4-byte big-endian length + bytes),
which is refused on a terminal for framed streams.

With --group the argument is the TENANT: silt joins reader group GROUP,
reads the segments the group assigns to it from the group's committed
positions up to now, commits after each batch is printed (at-least-once: a
batch printed and not committed is read again), and leaves the group.`,
		Example: `  silt read acme/clicks
  silt read acme/clicks --segment 2 --from 100 --max 10
  silt read acme/clicks --cursor MDo2LDE6MTA -o json
  silt read acme/blobs -o raw > blobs.framed
  silt read acme --group billing --member billing-1`,
		Args:        args(1, 1),
		Annotations: map[string]string{annotRaw: "true"},
	}
	if follow {
		cmd.Use = "tail TENANT/STREAM"
		cmd.Short = "follow new events"
		cmd.Long = `Follows a stream: prints events as they are appended, from now on, from the
beginning, or from a cursor, until interrupted. -o works as for silt read.`
		cmd.Example = `  silt tail acme/clicks
  silt tail acme/clicks --from-beginning -o json
  silt tail acme/clicks --cursor MDo2LDE6MTA`
	}
	fl := cmd.Flags()
	cursor := fl.String("cursor", "", "resume from a `CURSOR` printed by an earlier read")
	// --format is -o's old name, kept for scripts. Not pflag's
	// MarkDeprecated: cobra prints its notice on stdout, into the events.
	format := fl.String("format", "", "old name of -o")
	fl.MarkHidden("format")
	var (
		segment            *string
		from               *uint64
		max                *int
		fromEnd, fromStart *bool
		readGroup, member  *string
	)
	if follow {
		fromStart = fl.Bool("from-beginning", false, "print the whole stream first, then follow")
	} else {
		segment = fl.String("segment", "", "read one `SEGMENT` (with --from)")
		from = fl.Uint64("from", 0, "`OFFSET` in --segment to start at")
		max = fl.Int("max", 0, "stop after this many events (default: everything up to now)")
		fromEnd = fl.Bool("from-end", false, "start at the current end: print no events, only the cursor to resume from later")
		readGroup = fl.String("group", "", "read as a reader of reader group `GROUP` (silt read TENANT --group GROUP): the segments the group assigns to this reader, from the group's committed positions, committing as events are printed")
		member = fl.String("member", "", "reader session `ID` for --group (default: a new one each run)")
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if cmd.Flags().Changed("format") {
			if cmd.Flags().Changed("output") && *format != a.output {
				return usageError{fmt.Errorf("--format %s and -o %s disagree; --format is the old name of -o, give only -o", *format, a.output)}
			}
			switch *format {
			case "text", "json", "raw":
				a.output = *format
			default:
				return usageError{fmt.Errorf("--format %q: want text, json or raw", *format)}
			}
			fmt.Fprintf(a.stderr, "silt: --format is deprecated, use -o %s\n", *format)
		}
		if !follow && *readGroup != "" {
			return a.runGroupRead(cmd, args[0], *readGroup, *member, *max)
		}
		if !follow && *member != "" {
			return usageError{errors.New("--member is for --group")}
		}
		tenant, stream, err := splitStream(args[0])
		if err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		ctx, cancel := signalContext()
		defer cancel()
		emit, err := a.emitter(ctx, cl, tenant, stream)
		if err != nil {
			return err
		}
		out := bufio.NewWriterSize(a.stdout, 64<<10)
		defer out.Flush()
		if follow {
			cur := *cursor
			if cur == "" && !*fromStart {
				cur = "end"
			}
			err := cl.Follow(ctx, tenant, stream, cur, func(e client.Event) error {
				if err := emit(out, e); err != nil {
					return err
				}
				return out.Flush()
			})
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		opts := client.ReadOptions{Cursor: *cursor, Segment: *segment, From: *from, FromEnd: *fromEnd}
		printed := 0
		for {
			if *max > 0 {
				opts.Max = min(*max-printed, 1000)
			}
			b, err := cl.Read(ctx, tenant, stream, opts)
			if err != nil {
				return err
			}
			for _, e := range b.Events {
				if err := emit(out, e); err != nil {
					return err
				}
			}
			printed += len(b.Events)
			switch {
			case opts.Segment != "" && len(b.Events) > 0:
				// A cursor names only the segments it has seen and reads the
				// others from their start, so a one-segment read goes on by
				// offset instead.
				opts.From = b.Events[len(b.Events)-1].Offset + 1
			case opts.Segment == "" && b.NextCursor != "":
				opts = client.ReadOptions{Cursor: b.NextCursor}
			}
			if len(b.Events) == 0 || (*max > 0 && printed >= *max) {
				out.Flush()
				if b.NextCursor != "" {
					fmt.Fprintf(a.stderr, "next cursor: %s\n", b.NextCursor)
				}
				return nil
			}
		}
	}
	return cmd
}

// emitter returns the function that prints one event as -o asks.
func (a *app) emitter(ctx context.Context, cl *client.Client, tenant, stream string) (func(*bufio.Writer, client.Event) error, error) {
	tty := isTerminal(a.stdout)
	switch a.output {
	case "json":
		return func(out *bufio.Writer, e client.Event) error {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			out.Write(b)
			return out.WriteByte('\n')
		}, nil
	case "raw":
		st, err := cl.GetStream(ctx, tenant, stream)
		if err != nil {
			return nil, err
		}
		if st.Config.Encoding != client.EncodingFramed {
			break
		}
		if tty {
			// Length prefixes and binary payloads would garble the
			// terminal (and could drive it: escape sequences).
			return nil, usageError{fmt.Errorf("%s/%s is a framed stream: -o raw writes binary frames, not to a terminal; redirect stdout to a file or a pipe, or use -o text or -o json", tenant, stream)}
		}
		return func(out *bufio.Writer, e client.Event) error {
			var hdr [4]byte
			binary.BigEndian.PutUint32(hdr[:], uint32(len(e.Data)))
			out.Write(hdr[:])
			_, err := out.Write(e.Data)
			return err
		}, nil
	case "text":
		if tty {
			return func(out *bufio.Writer, e client.Event) error {
				out.Write(terminalSafe(e.Data))
				return out.WriteByte('\n')
			}, nil
		}
	}
	return func(out *bufio.Writer, e client.Event) error {
		out.Write(e.Data)
		return out.WriteByte('\n')
	}, nil
}

// terminalSafe returns data as it is when it is printable text, and
// Go-quoted otherwise: an event with control characters could move the
// cursor, rewrite the screen or set the terminal's title, and one with a
// newline would look like two events.
func terminalSafe(data []byte) []byte {
	if utf8.Valid(data) && !bytes.ContainsFunc(data, func(r rune) bool { return r != '\t' && unicode.IsControl(r) }) {
		return data
	}
	return strconv.AppendQuote(nil, string(data))
}
