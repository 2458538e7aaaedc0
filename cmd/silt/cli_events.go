package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/silt-io/silt/client"
)

// runAppend sends events from stdin or a file through the batching,
// idempotent Producer. Input is split into events by --input: lines (one
// event per line, the default), framed (4-byte big-endian length + bytes)
// or whole (the entire input is one event).
func runAppend(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCLI("append", "append TENANT/STREAM [--file F] [--key K] [--input lines|framed|whole]", stdin, stdout, stderr)
	file := c.fs.StringP("file", "f", "", "read events from this file instead of stdin")
	key := c.fs.StringP("key", "k", "", "routing key: events with one key keep their order (default: spread over segments)")
	input := c.fs.String("input", "lines", "how the input splits into events: lines, framed or whole")
	progress := c.fs.Bool("progress", isTerminal(stderr), "show progress on stderr (default: when stderr is a terminal)")
	deliveryTimeout := c.fs.Duration("delivery-timeout", 2*time.Minute, "give up on a batch the server has not acknowledged after this long of retrying (503 while tier 2 is backed up, server unreachable); 0 retries until interrupted")
	rest, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	tenant, stream, err := splitStream(rest[0])
	if err != nil {
		return err
	}
	in, total := stdin, int64(-1)
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
	split, err := splitter(*input)
	if err != nil {
		return usageError{err}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	prod, err := cl.NewProducer(tenant, stream, client.ProducerOptions{
		DeliveryTimeout: *deliveryTimeout,
		OnRetry:         retryNotice(stderr, 5*time.Second),
	})
	if err != nil {
		return err
	}
	counter := &countingReader{r: in}
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
	if *progress {
		go showProgress(stderr, stop, counter, total, func() int { mu.Lock(); defer mu.Unlock(); return acked })
	}
	readErr := split(bufio.NewReaderSize(counter, 1<<20), func(ev []byte) error {
		mu.Lock()
		e := firstEr
		mu.Unlock()
		if e != nil {
			return e
		}
		f, err := prod.Send(ctx, *key, ev)
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
	if *progress {
		fmt.Fprintln(stderr)
	}
	if err := errors.Join(readErr, firstEr, flushErr); err != nil {
		return fmt.Errorf("%d of %d events acknowledged before the error: %w", acked, sent, err)
	}
	if c.output == "json" {
		return json.NewEncoder(stdout).Encode(map[string]any{"events": acked, "writer_id": prod.WriterID()})
	}
	fmt.Fprintf(stderr, "appended %d events to %s/%s\n", acked, tenant, stream)
	return nil
}

// retryNotice returns a Producer retry callback that tells the user, at
// most once per interval, why the append is waiting: without it a server
// refusing appends (503 while its tier-2 backlog is full) looks like a hang.
func retryNotice(w io.Writer, every time.Duration) func(error, int, time.Duration) {
	var (
		mu   sync.Mutex
		last time.Time
	)
	return func(err error, attempt int, wait time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if now := time.Now(); now.Sub(last) >= every {
			last = now
			fmt.Fprintf(w, "silt append: not acknowledged yet (attempt %d: %v); retrying in %s\n", attempt, err, wait.Round(time.Millisecond))
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

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// runRead prints events; with follow (silt tail) it keeps following.
func runRead(args []string, stdin io.Reader, stdout, stderr io.Writer, follow bool) error {
	verb := "read"
	synopsis := "read TENANT/STREAM [--cursor C | --segment S --from N | --from-end] [--max N] [--format text|json|raw]"
	if follow {
		verb = "tail"
		synopsis = "tail TENANT/STREAM [--from-beginning | --cursor C] [--format text|json|raw]"
	}
	c := newCLI(verb, synopsis, stdin, stdout, stderr)
	cursor := c.fs.String("cursor", "", "resume from a cursor printed by an earlier read")
	format := c.fs.String("format", "text", "text (each event on a line), json (one object per event) or raw (the stream's encoding)")
	var segment *string
	var from *uint64
	var max *int
	var fromEnd, fromStart *bool
	if follow {
		fromStart = c.fs.Bool("from-beginning", false, "print the whole stream first, then follow")
	} else {
		segment = c.fs.String("segment", "", "read one segment (with --from)")
		from = c.fs.Uint64("from", 0, "offset in --segment to start at")
		max = c.fs.Int("max", 0, "stop after this many events (default: everything up to now)")
		fromEnd = c.fs.Bool("from-end", false, "start at the current end (prints nothing unless --wait)")
	}
	rest, err := c.parse(args, 1, 1)
	if err != nil {
		return err
	}
	tenant, stream, err := splitStream(rest[0])
	if err != nil {
		return err
	}
	if *format != "text" && *format != "json" && *format != "raw" {
		return usageError{fmt.Errorf("--format %q: want text, json or raw", *format)}
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	out := bufio.NewWriterSize(stdout, 64<<10)
	defer out.Flush()
	enc := ""
	if *format == "raw" {
		st, err := cl.GetStream(ctx, tenant, stream)
		if err != nil {
			return err
		}
		enc = st.Config.Encoding
	}
	emit := func(e client.Event) error {
		switch *format {
		case "json":
			b, _ := json.Marshal(e)
			out.Write(b)
			return out.WriteByte('\n')
		case "raw":
			if enc == client.EncodingFramed {
				var hdr [4]byte
				binary.BigEndian.PutUint32(hdr[:], uint32(len(e.Data)))
				out.Write(hdr[:])
				_, err := out.Write(e.Data)
				return err
			}
		}
		out.Write(e.Data)
		return out.WriteByte('\n')
	}
	if follow {
		cur := *cursor
		if cur == "" && !*fromStart {
			cur = "end"
		}
		err := cl.Follow(ctx, tenant, stream, cur, func(e client.Event) error {
			if err := emit(e); err != nil {
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
			if err := emit(e); err != nil {
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
				fmt.Fprintf(stderr, "next cursor: %s\n", b.NextCursor)
			}
			return nil
		}
	}
}
