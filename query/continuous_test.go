package query

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// growingSource is memSource that a test appends to while a query runs.
type growingSource struct {
	mu  sync.Mutex
	src memSource
}

func (g *growingSource) Segments(ctx context.Context, tenant, stream string) ([]Segment, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.src.Segments(ctx, tenant, stream)
}

func (g *growingSource) Read(ctx context.Context, tenant, stream, seg string, from uint64, maxEvents, maxBytes int) ([]Event, uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.src.Read(ctx, tenant, stream, seg, from, maxEvents, maxBytes)
}

func (g *growingSource) append(sec int, line string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	evs := g.src["a1b/x"]["0"]
	g.src["a1b/x"]["0"] = append(evs, Event{Offset: uint64(len(evs)), Time: t0.Add(time.Duration(sec) * time.Second), Data: []byte(line)})
}

func TestContinuousEmitsClosedWindows(t *testing.T) {
	src := &growingSource{src: memSource{"a1b/x": {"0": seg([]int{0, 10, 70}, `{"v":1}`, `{"v":2}`, `{"v":3}`)}}}
	q, err := Parse(`from a1b/x | window tumbling 1m | stats count(), sum(v) by window_start | eval late = false`, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	clock := t0.Add(65 * time.Second)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	rows := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := q.Run(ctx, src, RunOptions{Continuous: true, Poll: time.Millisecond, Clock: now}, func(b []byte) error {
			rows <- string(b)
			return nil
		})
		done <- err
	}()
	// The clock is past 10:01 (the first window's end), not past 10:02.
	if got := <-rows; got != `{"window_start":"2026-01-02T10:00:00Z","count":2,"sum_v":3,"late":false}` {
		t.Fatalf("first window: %s", got)
	}
	src.append(100, `{"v":4}`)
	mu.Lock()
	clock = t0.Add(125 * time.Second)
	mu.Unlock()
	if got := <-rows; got != `{"window_start":"2026-01-02T10:01:00Z","count":2,"sum_v":7,"late":false}` {
		t.Fatalf("second window: %s", got)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	select {
	case r := <-rows:
		t.Fatalf("a row after the open windows: %s", r)
	default:
	}
}

func TestCheckContinuous(t *testing.T) {
	for q, want := range map[string]string{
		`from a1b/x | window tumbling 1m | stats count() by window_start`:                          "",
		`from a1b/x | where v > 1 | window sliding 2m every 1m | stats count() by window_start, k`: "",
		`from a1b/x | stats count()`:                                                   "it needs one stats after its window",
		`from a1b/x | window tumbling 1m | stats count() by k`:                         "its stats must be by window_start",
		`from a1b/x | window tumbling 1m | stats count() by window_start | sort count`: "sort, head, top and join need the whole input",
		`from a1b/x | window tumbling 1m on ts | stats count() by window_start`:        "its window must be over _time",
		`from a1b/x | where v > 1`:                                                     "it needs a window and a stats",
	} {
		p, err := Parse(q, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		err = p.CheckContinuous()
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", q, err, want)
		}
	}
}
