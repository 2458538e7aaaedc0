package tiering

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// slowFinishBackend (fault injection) makes every chunk upload's Finish
// take delay and counts how many run at once, as a distant S3 or HDFS
// would.
type slowFinishBackend struct {
	Backend
	delay       time.Duration
	now, maxNow atomic.Int64
}

func (b *slowFinishBackend) Create(ctx context.Context, key string) (Writer, error) {
	w, err := b.Backend.Create(ctx, key)
	if err != nil || isManifest(key) {
		return w, err
	}
	return &slowWriter{Writer: w, b: b}, nil
}

type slowWriter struct {
	Writer
	b *slowFinishBackend
}

func (w *slowWriter) Finish() error {
	n := w.b.now.Add(1)
	defer w.b.now.Add(-1)
	for {
		m := w.b.maxNow.Load()
		if n <= m || w.b.maxNow.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(w.b.delay)
	return w.Writer.Finish()
}

// With tiering.streams = 4, eight streams that each have a chunk to seal
// upload four at a time: the pass takes about two upload times, not
// eight; with 1 they go one by one.
func TestStreamsUploadConcurrently(t *testing.T) {
	const delay = 200 * time.Millisecond
	for _, streams := range []int{1, 4} {
		t.Run(fmt.Sprint(streams), func(t *testing.T) {
			cfg := testConfig()
			cfg.Streams = streams
			e := newEnv(t, cfg)
			sb := &slowFinishBackend{Backend: e.fs, delay: delay}
			e.be = sb
			e.restart()
			for i := 0; i < 8; i++ {
				name := fmt.Sprintf("s%d", i)
				e.createStream("acme", name, core.EncodingLines, 1)
				e.append("acme", name, "0", "x")
			}
			e.clock.Advance(cfg.MaxLag)
			start := time.Now()
			e.scan()
			took := time.Since(start)
			for i := 0; i < 8; i++ {
				st, err := e.tr.Status("acme", fmt.Sprintf("s%d", i))
				if err != nil || st.Segments[0].Chunks != 1 {
					t.Fatalf("stream s%d after the pass: %+v %v", i, st, err)
				}
			}
			if got := int(sb.maxNow.Load()); got != streams {
				t.Fatalf("at most %d uploads at once, want %d", got, streams)
			}
			if rounds := 8 / streams; took < time.Duration(rounds)*delay || took > time.Duration(rounds+2)*delay {
				t.Fatalf("pass took %v; want about %d upload times (%v each)", took, rounds, delay)
			}
		})
	}
}
