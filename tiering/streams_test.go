package tiering

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// gatedFinishBackend (fault injection) holds every chunk upload's Finish
// until the test releases it, as a distant S3 or HDFS would hold it for a
// while, and counts how many are held at once. Releasing uploads in
// rounds, instead of sleeping, lets a test count how many went together
// without depending on the machine's speed.
type gatedFinishBackend struct {
	Backend
	arrived     chan chan struct{}
	now, maxNow atomic.Int64
}

func newGatedFinishBackend(be Backend) *gatedFinishBackend {
	return &gatedFinishBackend{Backend: be, arrived: make(chan chan struct{}, 1024)}
}

func (b *gatedFinishBackend) Create(ctx context.Context, key string) (Writer, error) {
	w, err := b.Backend.Create(ctx, key)
	if err != nil || isManifest(key) {
		return w, err
	}
	return &gatedWriter{Writer: w, b: b}, nil
}

type gatedWriter struct {
	Writer
	b *gatedFinishBackend
}

func (w *gatedWriter) Finish() error {
	n := w.b.now.Add(1)
	for {
		m := w.b.maxNow.Load()
		if n <= m || w.b.maxNow.CompareAndSwap(m, n) {
			break
		}
	}
	release := make(chan struct{})
	w.b.arrived <- release
	<-release
	// Counted out before returning: whatever the tierer starts next is
	// caused by this return, so it cannot overlap this upload.
	w.b.now.Add(-1)
	return w.Writer.Finish()
}

// gateWait is how long a round may take to gather its uploads before the
// test is taken for hung; it bounds a failure, never a pass.
const gateWait = time.Minute

// releaseInRounds lets total uploads through: each round waits until
// perRound uploads (fewer in the last) are held at once, then releases
// them together. It returns the number of rounds, and fails the test if a
// round never gathers its uploads (they are not running together) or scan
// does not end once all were released.
func releaseInRounds(t *testing.T, b *gatedFinishBackend, total, perRound int, scan func()) int {
	t.Helper()
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		scan()
	}()
	rounds := 0
	for released := 0; released < total; {
		want := min(perRound, total-released)
		held := make([]chan struct{}, 0, want)
		timeout := time.After(gateWait)
		for len(held) < want {
			select {
			case r := <-b.arrived:
				held = append(held, r)
			case <-timeout:
				for _, r := range held {
					close(r)
				}
				t.Fatalf("round %d: timed out waiting for %d uploads at once; %d arrived (%d released before)",
					rounds+1, want, len(held), released)
			}
		}
		rounds++
		for _, r := range held {
			close(r)
		}
		released += want
	}
	select {
	case <-scanned:
	case <-time.After(gateWait):
		t.Fatal("timed out waiting for the pass to end after every upload was released")
	}
	if n := len(b.arrived); n != 0 {
		t.Fatalf("%d uploads more than the %d expected", n, total)
	}
	return rounds
}

// With tiering.streams = 4, eight streams that each have a chunk to seal
// upload four at a time, in two rounds, not eight; with 1 they go one by
// one.
func TestStreamsUploadConcurrently(t *testing.T) {
	for _, streams := range []int{1, 4} {
		t.Run(fmt.Sprint(streams), func(t *testing.T) {
			cfg := testConfig()
			cfg.Streams = streams
			e := newEnv(t, cfg)
			gb := newGatedFinishBackend(e.fs)
			e.be = gb
			e.restart()
			for i := 0; i < 8; i++ {
				name := fmt.Sprintf("s%d", i)
				e.createStream("acme", name, core.EncodingLines, 1)
				e.append("acme", name, "0", "x")
			}
			e.clock.Advance(cfg.MaxLag)
			rounds := releaseInRounds(t, gb, 8, streams, e.scan)
			for i := 0; i < 8; i++ {
				st, err := e.tr.Status("acme", fmt.Sprintf("s%d", i))
				if err != nil || st.Segments[0].Chunks != 1 {
					t.Fatalf("stream s%d after the pass: %+v %v", i, st, err)
				}
			}
			if got := int(gb.maxNow.Load()); got != streams {
				t.Fatalf("at most %d uploads at once, want %d", got, streams)
			}
			if want := 8 / streams; rounds != want {
				t.Fatalf("%d rounds of uploads, want %d", rounds, want)
			}
		})
	}
}
