package groups

import (
	"fmt"
	"testing"
)

func refs(n int) []SegmentRef {
	var out []SegmentRef
	for i := range n {
		out = append(out, SegmentRef{"s", fmt.Sprint(i)})
	}
	return out
}

// moved counts the segments whose owner differs between two assignments.
func moved(a, b map[string][]SegmentRef) int {
	owner := map[SegmentRef]string{}
	for id, ss := range a {
		for _, s := range ss {
			owner[s] = id
		}
	}
	n := 0
	for id, ss := range b {
		for _, s := range ss {
			if owner[s] != id {
				n++
			}
		}
	}
	return n
}

func TestAssignSticky(t *testing.T) {
	start := assign(refs(12), []string{"a", "b", "c"}, nil)
	for _, tc := range []struct {
		name      string
		members   []string
		segs      int
		wantMoved int
		wantSizes map[string]int
	}{
		{"join", []string{"a", "b", "c", "d"}, 12, 3, map[string]int{"a": 3, "b": 3, "c": 3, "d": 3}},
		{"leave", []string{"a", "c"}, 12, 4, map[string]int{"a": 6, "c": 6}},
		{"uneven join", []string{"a", "b", "c", "d", "e"}, 12, 4, nil},
		{"same members", []string{"c", "b", "a"}, 12, 0, map[string]int{"a": 4, "b": 4, "c": 4}},
		{"more members than segments", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m"}, 12, 9, nil},
		{"segments go away", []string{"a", "b", "c"}, 6, 2, map[string]int{"a": 2, "b": 2, "c": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := assign(refs(tc.segs), tc.members, start)
			total := 0
			seen := map[SegmentRef]bool{}
			lo, hi := tc.segs, 0
			for _, id := range tc.members {
				n := len(got[id])
				lo, hi = min(lo, n), max(hi, n)
				total += n
				for _, s := range got[id] {
					if seen[s] {
						t.Errorf("segment %v given twice", s)
					}
					seen[s] = true
				}
				if want, ok := tc.wantSizes[id]; ok && n != want {
					t.Errorf("member %s got %d segments, want %d", id, n, want)
				}
			}
			if total != tc.segs {
				t.Errorf("assigned %d segments, want %d", total, tc.segs)
			}
			if hi-lo > 1 {
				t.Errorf("uneven: sizes between %d and %d", lo, hi)
			}
			if m := moved(start, got); m != tc.wantMoved {
				t.Errorf("moved %d segments, want %d", m, tc.wantMoved)
			}
		})
	}
}

// TestAssignableSuccessors writes the rule for split and merged segments
// (which core does not make yet) on a made-up lineage: 0 split into 1 and
// 2, which merged into 3.
func TestAssignableSuccessors(t *testing.T) {
	r := func(id string) SegmentRef { return SegmentRef{"s", id} }
	preds := map[SegmentRef][]SegmentRef{r("1"): {r("0")}, r("2"): {r("0")}, r("3"): {r("1"), r("2")}}
	all := []SegmentRef{r("0"), r("1"), r("2"), r("3")}
	for _, tc := range []struct {
		name string
		done []string
		want []string
	}{
		{"nothing done", nil, []string{"0"}},
		{"parent done", []string{"0"}, []string{"1", "2"}},
		{"one of two predecessors done", []string{"0", "1"}, []string{"2"}},
		{"both predecessors done", []string{"0", "1", "2"}, []string{"3"}},
		{"all done", []string{"0", "1", "2", "3"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := map[SegmentRef]bool{}
			for _, d := range tc.done {
				done[r(d)] = true
			}
			got := assignable(all, func(s SegmentRef) []SegmentRef { return preds[s] }, func(s SegmentRef) bool { return done[s] })
			var ids []string
			for _, s := range got {
				ids = append(ids, s.Segment)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
				t.Errorf("assignable = %v, want %v", ids, tc.want)
			}
		})
	}
}
