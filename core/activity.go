package core

import "sync"

// Activity is the seam between the engine and tiering that keeps tiering in
// proportion to pending work: instead of walking every stream each pass,
// tiering takes the set of segments that may hold events not yet in tier 2.
//
// The store marks a segment after each commit to it; at open it marks every
// segment that may hold such events. A consumer Takes the set, works on
// those segments, and must Mark again (or keep in its own set) any segment
// it could not finish, since Take clears what it returns.
type Activity struct {
	mu    sync.Mutex
	set   map[SegmentRef]struct{}
	ready chan struct{} // closed while set is non-empty
}

// SegmentRef names one segment of one incarnation of a stream.
type SegmentRef struct {
	Tenant, Stream, Segment string
	// Incarnation is the stream's Stream.Incarnation(), so that a segment
	// of a deleted stream is never taken for one of its successor.
	Incarnation int64
}

func newActivity() *Activity {
	return &Activity{set: map[SegmentRef]struct{}{}, ready: make(chan struct{})}
}

// Mark adds ref to the set.
func (a *Activity) Mark(ref SegmentRef) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.set) == 0 {
		close(a.ready)
	}
	a.set[ref] = struct{}{}
}

// Take returns the marked segments, in no order, and clears the set.
func (a *Activity) Take() []SegmentRef {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.set) == 0 {
		return nil
	}
	out := make([]SegmentRef, 0, len(a.set))
	for ref := range a.set {
		out = append(out, ref)
	}
	clear(a.set)
	a.ready = make(chan struct{})
	return out
}

// Ready returns a channel that is closed while the set is non-empty: take
// it, then Take, so that a Mark in between still wakes the consumer.
func (a *Activity) Ready() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ready
}

// Len is the number of marked segments.
func (a *Activity) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.set)
}
