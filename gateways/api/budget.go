package api

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// budget is the admission limit on append bytes held in memory. core.Append
// needs a whole batch in memory, so the only way to bound the memory of
// many concurrent producers is to refuse, early and cheaply, the requests
// that would go beyond the limit. Refusal never blocks: a blocked request
// would hold its connection and its client's retry budget, while a 503 with
// Retry-After lets the client back off.
type budget struct {
	max   int64
	used  atomic.Int64
	gauge prometheus.Gauge
}

func newBudget(max int64, gauge prometheus.Gauge) *budget {
	return &budget{max: max, gauge: gauge}
}

func (b *budget) tryAdd(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			b.gauge.Add(float64(n))
			return true
		}
	}
}

func (b *budget) sub(n int64) {
	b.used.Add(-n)
	b.gauge.Sub(float64(n))
}

// reservation is one request's share of the budget.
type reservation struct {
	b *budget
	n int64
}

// reserve takes n bytes, or reports that the budget cannot spare them.
func (b *budget) reserve(n int64) (*reservation, bool) {
	if !b.tryAdd(n) {
		return nil, false
	}
	return &reservation{b: b, n: n}, true
}

// cover grows the reservation to at least held bytes; parsing calls it as
// events accumulate, since their memory (slice headers included) can
// exceed the body size that was reserved up front. A batch that needs more
// than the whole budget could not be taken by an idle server either: that
// is a 413 naming the limit, since a 503 would have clients that honour
// Retry-After send it again forever.
func (r *reservation) cover(held int64) error {
	if held <= r.n {
		return nil
	}
	if held > r.b.max {
		return tooLarge("the batch needs more than %d bytes of memory to parse (its event bytes plus %d bytes per event), more than api.max_inflight_bytes (%d) allows for all appends together; send fewer events per request",
			held, eventOverhead, r.b.max)
	}
	if !r.b.tryAdd(held - r.n) {
		return errOverloaded
	}
	r.n = held
	return nil
}

func (r *reservation) release() {
	r.b.sub(r.n)
	r.n = 0
}

var errOverloaded = &httpError{
	status: http.StatusServiceUnavailable,
	code:   "overloaded",
	msg:    "the server holds as many append bytes as api.max_inflight_bytes allows; retry after a moment",
}
