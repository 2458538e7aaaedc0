package query

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// memSource holds streams in memory: the input data of the language
// tests. The scan over the real store is tested in gateways/api.
type memSource map[string]map[string][]Event // "tenant/stream" → segment → events

func (m memSource) Segments(_ context.Context, tenant, stream string) ([]Segment, error) {
	segs, ok := m[tenant+"/"+stream]
	if !ok {
		return nil, fmt.Errorf("no stream %s/%s", tenant, stream)
	}
	var out []Segment
	for id, evs := range segs {
		out = append(out, Segment{ID: id, First: 0, Next: uint64(len(evs))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (m memSource) Read(_ context.Context, tenant, stream, seg string, from uint64, maxEvents, _ int) ([]Event, uint64, error) {
	evs := m[tenant+"/"+stream][seg]
	end := min(int(from)+maxEvents, len(evs))
	if int(from) >= end {
		return nil, from, nil
	}
	return evs[from:end], uint64(end), nil
}

var t0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

// seg builds a segment's events from lines, the i-th at t0 + secs[i]s.
func seg(secs []int, lines ...string) []Event {
	out := make([]Event, len(lines))
	for i, l := range lines {
		out[i] = Event{Offset: uint64(i), Time: t0.Add(time.Duration(secs[i]) * time.Second), Data: []byte(l)}
	}
	return out
}

func runText(t *testing.T, src Source, text string, lim Limits) ([]string, Result, error) {
	t.Helper()
	q, err := Parse(text, lim)
	if err != nil {
		return nil, Result{}, err
	}
	var lines []string
	res, err := q.Run(context.Background(), src, RunOptions{Now: t0.Add(time.Hour)}, func(b []byte) error {
		lines = append(lines, string(b))
		return nil
	})
	return lines, res, err
}

func joinLines(l []string) string { return strings.Join(l, "\n") }
