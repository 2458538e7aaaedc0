package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// watchFlags are the flags of a view that refreshes (silt group lag
// --watch, silt top).
type watchFlags struct {
	interval *time.Duration
	count    *int
}

func addWatchFlags(c *cobra.Command, what string) watchFlags {
	fl := c.Flags()
	return watchFlags{
		interval: fl.Duration("interval", 2*time.Second, "time between refreshes of "+what),
		count:    fl.IntP("count", "n", 0, "stop after `N` refreshes (default: until Ctrl-C)"),
	}
}

func (f watchFlags) validate() error {
	if *f.interval <= 0 {
		return usageError{fmt.Errorf("--interval %s: want a positive duration such as 2s", *f.interval)}
	}
	if *f.count < 0 {
		return usageError{fmt.Errorf("-n %d: want 0 (until Ctrl-C) or more", *f.count)}
	}
	return nil
}

// frame is one refresh: v for -o json, text for people.
type frame struct {
	v    any
	text func(w io.Writer)
}

// watch shows next's frames every interval until Ctrl-C (which exits 0)
// or count frames have been shown. On a terminal each frame replaces the
// last (cursor home, clear screen), as top and watch do; otherwise frames
// are appended — text after a line with the time, -o json as one object
// per line — so that a log or a pipe keeps every snapshot. next is called
// once before the first frame is due (for views that need two samples)
// with first true; that call shows nothing.
func (a *app) watch(ctx context.Context, f watchFlags, next func(ctx context.Context, first bool) (frame, error), primed bool) error {
	tty := isTerminal(a.stdout)
	t := time.NewTicker(*f.interval)
	defer t.Stop()
	if primed {
		if _, err := next(ctx, true); err != nil {
			return quietCancel(ctx, err)
		}
		if err := wait(ctx, t.C); err != nil {
			return nil
		}
	}
	for shown := 0; ; {
		fr, err := next(ctx, false)
		if err != nil {
			return quietCancel(ctx, err)
		}
		if err := a.show(fr, tty); err != nil {
			return err
		}
		if shown++; *f.count > 0 && shown >= *f.count {
			return nil
		}
		if err := wait(ctx, t.C); err != nil {
			return nil // Ctrl-C: a normal way to stop watching
		}
	}
}

func (a *app) show(fr frame, tty bool) error {
	var buf bytes.Buffer
	switch {
	case a.output == "json":
		b, err := json.Marshal(fr.v)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	default:
		if tty {
			buf.WriteString("\x1b[H\x1b[2J")
		}
		fmt.Fprintf(&buf, "%s\n", time.Now().UTC().Format(time.RFC3339))
		tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
		fr.text(tw)
		tw.Flush()
		if !tty {
			buf.WriteByte('\n')
		}
	}
	_, err := a.stdout.Write(buf.Bytes())
	return err
}

func wait(ctx context.Context, c <-chan time.Time) error {
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// quietCancel turns an error caused by Ctrl-C into a clean exit.
func quietCancel(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
