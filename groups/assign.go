package groups

import (
	"slices"
	"sort"
)

// assignable returns the segments that may be handed to readers: those not
// done whose predecessors are all done. Segments do not split or merge yet,
// so today preds is empty for every segment and every segment not done is
// assignable; the rule is here so that positions written now keep their
// meaning when they do.
func assignable(segs []SegmentRef, preds func(SegmentRef) []SegmentRef, done func(SegmentRef) bool) []SegmentRef {
	var out []SegmentRef
	for _, s := range segs {
		if done(s) {
			continue
		}
		ready := true
		for _, p := range preds(s) {
			if !done(p) {
				ready = false
				break
			}
		}
		if ready {
			out = append(out, s)
		}
	}
	return out
}

// assign spreads segs over the members (ids), keeping as many of each
// member's previous segments as the even spread allows, so that a
// rebalance moves as few segments as possible. Every member gets
// len(segs)/len(members) segments, or one more; the members that held
// the most keep the extra ones. The result is keyed by member id and
// every list is sorted.
func assign(segs []SegmentRef, members []string, prev map[string][]SegmentRef) map[string][]SegmentRef {
	out := make(map[string][]SegmentRef, len(members))
	if len(members) == 0 {
		return out
	}
	want := make(map[SegmentRef]bool, len(segs))
	for _, s := range segs {
		want[s] = true
	}
	// What each member may keep: its previous segments still wanted, each
	// segment once.
	taken := make(map[SegmentRef]bool, len(segs))
	kept := make(map[string][]SegmentRef, len(members))
	ids := slices.Clone(members)
	slices.Sort(ids)
	for _, id := range ids {
		old := slices.Clone(prev[id])
		sort.Slice(old, func(i, j int) bool { return old[i].less(old[j]) })
		for _, s := range old {
			if want[s] && !taken[s] {
				taken[s] = true
				kept[id] = append(kept[id], s)
			}
		}
	}
	// Quotas: the members holding the most get the extra segments.
	sort.SliceStable(ids, func(i, j int) bool { return len(kept[ids[i]]) > len(kept[ids[j]]) })
	base, extra := len(segs)/len(ids), len(segs)%len(ids)
	quota := make(map[string]int, len(ids))
	for i, id := range ids {
		quota[id] = base
		if i < extra {
			quota[id]++
		}
	}
	var pool []SegmentRef
	for _, id := range ids {
		k := kept[id]
		if len(k) > quota[id] {
			for _, s := range k[quota[id]:] {
				taken[s] = false
			}
			k = k[:quota[id]]
		}
		out[id] = k
	}
	sorted := slices.Clone(segs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].less(sorted[j]) })
	for _, s := range sorted {
		if !taken[s] {
			pool = append(pool, s)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		for len(out[id]) < quota[id] && len(pool) > 0 {
			out[id] = append(out[id], pool[0])
			pool = pool[1:]
		}
		sort.Slice(out[id], func(i, j int) bool { return out[id][i].less(out[id][j]) })
	}
	return out
}
