package introspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

// Reader reads the system streams back for Health: from tier 1, or tier 2
// below what tier 1 holds (api.Server's ReadSegment and OldestOffset).
type Reader interface {
	ReadSegment(ctx context.Context, req core.ReadRequest) (core.ReadResult, error)
	OldestOffset(ctx context.Context, tenant, stream string, sg core.SegmentInfo) (uint64, error)
}

// Lister finds the system streams to read (core.Store).
type Lister interface {
	ListStreams(ctx context.Context, tenant string) ([]core.Stream, error)
	GetStream(ctx context.Context, tenant, name string) (core.Stream, error)
}

// maxHealthEvents bounds one summary's scan over all the streams it reads;
// past it the report says it is partial.
const maxHealthEvents = 500_000

// HealthReport summarises the introspection events of a window.
type HealthReport struct {
	Tenant string    `json:"tenant,omitempty"` // "" for the whole server
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	// Scanned is how many events were read; Partial is set when the
	// scan stopped at its bound (the oldest part of the window is then
	// missing).
	Scanned int  `json:"scanned"`
	Partial bool `json:"partial,omitempty"`
	// Dropped is this node's count of events not stored since it started
	// (they are missing from the figures).
	Dropped float64       `json:"dropped_events"`
	Heads   []HeadHealth  `json:"heads"`
	Slowest []OpLatency   `json:"slowest"`
	Tiering TieringHealth `json:"tiering"`
	Denials []DenialCount `json:"denials"`
}

// HeadHealth is one head on one node.
type HeadHealth struct {
	Head         string  `json:"head"`
	Node         string  `json:"node"`
	Requests     int     `json:"requests"`
	ClientErrors int     `json:"client_errors"`
	ServerErrors int     `json:"server_errors"`
	ClientRate   float64 `json:"client_error_rate"`
	ServerRate   float64 `json:"server_error_rate"`
	Bytes        int64   `json:"bytes"`
	Denials      int     `json:"denials"`
}

// OpLatency is the latency of one operation of a head.
type OpLatency struct {
	Head      string  `json:"head"`
	Operation string  `json:"operation"`
	Count     int     `json:"count"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
}

// TieringHealth sums the tiering events.
type TieringHealth struct {
	Uploaded int     `json:"chunks_uploaded"`
	Failed   int     `json:"failures"`
	Bytes    int64   `json:"bytes"`
	P99LagMS float64 `json:"p99_lag_ms"`
	MaxLagMS float64 `json:"max_lag_ms"`
	// LastError is the newest failure's message.
	LastError string `json:"last_error,omitempty"`
}

// DenialCount counts the denials of one principal on one resource.
type DenialCount struct {
	Head      string `json:"head"`
	Principal string `json:"principal"`
	Tenant    string `json:"tenant,omitempty"`
	Stream    string `json:"stream,omitempty"`
	Action    string `json:"action"`
	Count     int    `json:"count"`
}

// maxSlowest and maxDenials bound the report's lists.
const (
	maxSlowest = 10
	maxDenials = 20
)

// UseReader connects the readers Health needs; without them Health
// fails. Call it before serving.
func (r *Recorder) UseReader(rd Reader, ls Lister) { r.reader, r.lister = rd, ls }

// Health summarises the events of the last window, of tenant's streams, or
// of every system stream for "". It reads the streams back (a bounded
// scan from the window's start, found by bisecting append times), so it
// sees what was stored, on every node that writes them.
func (r *Recorder) Health(ctx context.Context, tenant string, window time.Duration) (any, error) {
	if r.reader == nil || r.lister == nil {
		return nil, errNoReader
	}
	now := time.Now().UTC()
	rep := &HealthReport{Tenant: tenant, Since: now.Add(-window), Until: now, Dropped: counterValue(r.droppedFull) + counterValue(r.droppedWrite)}
	var streams []string
	if tenant != "" {
		for _, k := range []string{KindRequest, KindDenial, KindTiering} {
			streams = append(streams, StreamName(tenant, k))
		}
	} else {
		all, err := r.lister.ListStreams(ctx, names.SystemTenant)
		if err != nil {
			return nil, err
		}
		for _, s := range all {
			if !strings.HasSuffix(s.Name, "."+KindMetrics) {
				streams = append(streams, s.Name)
			}
		}
	}
	agg := newAggregate()
	budget := maxHealthEvents
	for _, name := range streams {
		st, err := r.lister.GetStream(ctx, names.SystemTenant, name)
		if errors.Is(err, core.ErrNotFound) {
			continue // nothing recorded yet
		}
		if err != nil {
			return nil, err
		}
		for _, sg := range st.Segments {
			n, partial, err := r.scan(ctx, name, sg, rep.Since, budget, agg.add)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", name, err)
			}
			rep.Scanned += n
			budget -= n
			rep.Partial = rep.Partial || partial
		}
	}
	agg.fill(rep)
	return rep, nil
}

// scan feeds fn the events of one segment appended since since, at most
// budget of them.
func (r *Recorder) scan(ctx context.Context, stream string, sg core.SegmentInfo, since time.Time, budget int, fn func(*Event)) (n int, partial bool, err error) {
	lo, err := r.reader.OldestOffset(ctx, names.SystemTenant, stream, sg)
	if err != nil {
		return 0, false, err
	}
	hi := sg.NextOffset
	// The first offset appended at or after since: append times do not
	// decrease along a segment (tier 2 interpolates them, keeping order).
	for lo < hi {
		mid := lo + (hi-lo)/2
		res, err := r.reader.ReadSegment(ctx, core.ReadRequest{Tenant: names.SystemTenant, Stream: stream, Segment: sg.ID, From: mid, MaxEvents: 1})
		if errors.Is(err, core.ErrOutOfRange) {
			lo = mid + 1 // dropped by retention meanwhile
			continue
		}
		if err != nil {
			return 0, false, err
		}
		if len(res.Events) == 0 || !res.Events[0].Time.Before(since) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	for from := lo; from < sg.NextOffset; {
		if n >= budget {
			return n, true, nil
		}
		res, err := r.reader.ReadSegment(ctx, core.ReadRequest{Tenant: names.SystemTenant, Stream: stream, Segment: sg.ID, From: from, MaxEvents: min(1000, budget-n)})
		if err != nil {
			return n, false, err
		}
		if len(res.Events) == 0 {
			break
		}
		for _, e := range res.Events {
			var ev Event
			if json.Unmarshal(e.Data, &ev) != nil || ev.Time.Before(since) {
				continue
			}
			fn(&ev)
		}
		n += len(res.Events)
		from = res.Next
	}
	return n, false, nil
}

type headKey struct{ head, node string }
type opKey struct{ head, op string }
type denialKey struct{ head, principal, tenant, stream, action string }

type aggregate struct {
	heads   map[headKey]*HeadHealth
	ops     map[opKey][]float64
	lags    []float64
	tier    TieringHealth
	lastErr time.Time
	denials map[denialKey]int
}

func newAggregate() *aggregate {
	return &aggregate{heads: map[headKey]*HeadHealth{}, ops: map[opKey][]float64{}, denials: map[denialKey]int{}}
}

func (a *aggregate) head(e *Event) *HeadHealth {
	k := headKey{e.Head, e.Node}
	h := a.heads[k]
	if h == nil {
		h = &HeadHealth{Head: e.Head, Node: e.Node}
		a.heads[k] = h
	}
	return h
}

func (a *aggregate) add(e *Event) {
	switch e.Kind {
	case KindRequest:
		h := a.head(e)
		h.Requests++
		h.Bytes += e.Bytes
		switch e.Class {
		case "client_error":
			h.ClientErrors++
		case "server_error":
			h.ServerErrors++
		}
		k := opKey{e.Head, e.Operation}
		a.ops[k] = append(a.ops[k], e.LatencyMS)
	case KindDenial:
		a.head(e).Denials++
		a.denials[denialKey{e.Head, e.Principal, e.Tenant, e.Stream, e.Action}]++
	case KindTiering:
		if e.Outcome == "failed" {
			a.tier.Failed++
			if !e.Time.Before(a.lastErr) {
				a.lastErr, a.tier.LastError = e.Time, e.Error
			}
			return
		}
		a.tier.Uploaded++
		a.tier.Bytes += e.Bytes
		a.lags = append(a.lags, e.LagMS)
	}
}

func (a *aggregate) fill(rep *HealthReport) {
	rep.Heads = []HeadHealth{}
	for _, h := range a.heads {
		if h.Requests > 0 {
			h.ClientRate = float64(h.ClientErrors) / float64(h.Requests)
			h.ServerRate = float64(h.ServerErrors) / float64(h.Requests)
		}
		rep.Heads = append(rep.Heads, *h)
	}
	sort.Slice(rep.Heads, func(i, j int) bool {
		a, b := rep.Heads[i], rep.Heads[j]
		return a.Head < b.Head || a.Head == b.Head && a.Node < b.Node
	})
	rep.Slowest = []OpLatency{}
	for k, ls := range a.ops {
		p99, mx := percentile(ls, 0.99)
		rep.Slowest = append(rep.Slowest, OpLatency{Head: k.head, Operation: k.op, Count: len(ls), P99MS: p99, MaxMS: mx})
	}
	sort.Slice(rep.Slowest, func(i, j int) bool {
		a, b := rep.Slowest[i], rep.Slowest[j]
		if a.P99MS != b.P99MS {
			return a.P99MS > b.P99MS
		}
		return a.Head+a.Operation < b.Head+b.Operation
	})
	if len(rep.Slowest) > maxSlowest {
		rep.Slowest = rep.Slowest[:maxSlowest]
	}
	rep.Tiering = a.tier
	rep.Tiering.P99LagMS, rep.Tiering.MaxLagMS = percentile(a.lags, 0.99)
	rep.Denials = []DenialCount{}
	for k, n := range a.denials {
		rep.Denials = append(rep.Denials, DenialCount{Head: k.head, Principal: k.principal, Tenant: k.tenant, Stream: k.stream, Action: k.action, Count: n})
	}
	sort.Slice(rep.Denials, func(i, j int) bool {
		a, b := rep.Denials[i], rep.Denials[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Principal+a.Tenant+a.Stream < b.Principal+b.Tenant+b.Stream
	})
	if len(rep.Denials) > maxDenials {
		rep.Denials = rep.Denials[:maxDenials]
	}
}

// percentile is the nearest-rank q-quantile of vs, and their maximum.
func percentile(vs []float64, q float64) (p, mx float64) {
	if len(vs) == 0 {
		return 0, 0
	}
	sort.Float64s(vs)
	i := int(math.Ceil(q*float64(len(vs)))) - 1
	return vs[max(i, 0)], vs[len(vs)-1]
}
