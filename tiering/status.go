package tiering

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/silt-io/silt/core"
)

// StreamStatus is a stream's tiering state, for describe.
type StreamStatus struct {
	Tenant   string          `json:"tenant"`
	Stream   string          `json:"stream"`
	Segments []SegmentStatus `json:"segments"`
}

// SegmentStatus is one segment's tiering state.
type SegmentStatus struct {
	Segment string `json:"segment"`
	// TieredOffset is the offset after the last event in tier 2.
	TieredOffset uint64 `json:"tiered_offset"`
	// FirstTieredOffset is the first offset still in tier 2; retention
	// has deleted what was below it.
	FirstTieredOffset uint64 `json:"first_tiered_offset"`
	Chunks            int    `json:"chunks"`
	TieredBytes       int64  `json:"tiered_bytes"`
	// PendingBytes are encoded bytes acknowledged but not yet in tier 2
	// (as of the last scan).
	PendingBytes int64 `json:"pending_bytes"`
	// Lag is the age of the oldest event not yet in tier 2.
	Lag           time.Duration `json:"lag_ns"`
	LastSeal      time.Time     `json:"last_seal,omitzero"`
	LastError     string        `json:"last_error,omitempty"`
	LastErrorTime time.Time     `json:"last_error_time,omitzero"`
	RetryAt       time.Time     `json:"retry_at,omitzero"`
}

// Status describes a stream's tiering. A stream with no pending work is
// not held in memory: its state comes from the catalog.
func (t *Tierer) Status(tenant, stream string) (StreamStatus, error) {
	out := StreamStatus{Tenant: tenant, Stream: stream}
	now := t.now()
	t.mu.Lock()
	ss := t.mu.streams[tenant+"/"+stream]
	if ss != nil {
		for _, s := range ss.segs {
			st := SegmentStatus{
				Segment: s.id, TieredOffset: s.rec.Tiered, FirstTieredOffset: s.rec.First, Chunks: s.rec.Chunks, TieredBytes: s.rec.Bytes,
				PendingBytes: s.pending, LastSeal: s.rec.LastSeal, RetryAt: s.retryAt,
			}
			if s.pending > 0 && !s.oldest.IsZero() {
				st.Lag = max(now.Sub(s.oldest), 0)
			}
			if s.lastErr != nil {
				st.LastError, st.LastErrorTime = s.lastErr.Error(), s.lastErrAt
			}
			out.Segments = append(out.Segments, st)
		}
	}
	t.mu.Unlock()
	if ss != nil {
		return out, nil
	}
	st, err := t.store.GetStream(context.Background(), tenant, stream)
	if err != nil {
		return StreamStatus{}, err
	}
	for _, seg := range st.Segments {
		r, err := GetSegment(t.cat, tenant, stream, seg.ID)
		if err != nil {
			return StreamStatus{}, err
		}
		out.Segments = append(out.Segments, SegmentStatus{
			Segment: seg.ID, TieredOffset: r.Tiered, FirstTieredOffset: r.First, Chunks: r.Chunks, TieredBytes: r.Bytes, LastSeal: r.LastSeal,
		})
	}
	return out, nil
}

// Backpressure reports whether appends to a stream should be refused
// because tier 1 is short of space or too much is not yet in tier 2 (tier
// 2 down or too slow), and slows the append first as either nears
// (diskspace.go). The error wraps core.ErrUnavailable, which the API
// answers with 503 and Retry-After.
func (t *Tierer) Backpressure(tenant, stream string) error {
	p := t.diskPressure()
	if p.refuse != nil {
		t.m.refused.Inc()
		return p.refuse
	}
	if t.cfg.MaxBacklogBytes > 0 {
		if err := t.streamBacklog(tenant, stream); err != nil {
			t.m.refused.Inc()
			return err
		}
	}
	if p.pace > 0 {
		t.m.slowed.Inc()
		time.Sleep(p.pace)
	}
	return nil
}

// streamBacklog applies the fixed per-stream bound, max_backlog_bytes.
func (t *Tierer) streamBacklog(tenant, stream string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := t.mu.streams[tenant+"/"+stream]
	if ss == nil {
		return nil
	}
	var pending int64
	var lastErr error
	for _, s := range ss.segs {
		pending += s.pending
		if s.lastErr != nil {
			lastErr = s.lastErr
		}
	}
	if pending <= t.cfg.MaxBacklogBytes {
		return nil
	}
	cause := ""
	if lastErr != nil {
		cause = fmt.Sprintf("; last tiering error: %v", lastErr)
	}
	return fmt.Errorf("%w: stream %s/%s has %d bytes not yet in tier 2, above tiering.max_backlog_bytes (%d)%s",
		core.ErrUnavailable, tenant, stream, pending, t.cfg.MaxBacklogBytes, cause)
}

// eachSegment calls fn for every tracked segment under the lock.
func (t *Tierer) eachSegment(fn func(*streamState, *segState)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, ss := range t.mu.streams {
		for _, s := range ss.segs {
			fn(ss, s)
		}
	}
}

// StreamStatus is Status in the form the native API's describe embeds.
func (t *Tierer) StreamStatus(tenant, stream string) (any, error) {
	return t.Status(tenant, stream)
}

// TenantBytes adds up the bytes of committed chunks each tenant holds in
// tier 2, from the catalog's segment records: one range scan over a record
// per segment, reading no chunk record and no object. It is for the
// storage metrics, which call it on their own schedule.
func (t *Tierer) TenantBytes(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := t.cat.Scan([]byte(keySegment), nil, func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		tenant, _, ok := strings.Cut(string(k[len(keySegment):]), "/")
		if !ok {
			return nil
		}
		var r SegmentRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		out[tenant] += r.Bytes
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tiering: tier-2 bytes per tenant: %w", err)
	}
	return out, nil
}
