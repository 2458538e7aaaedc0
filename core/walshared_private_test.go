package core

import "testing"

// The marks of a segment keep, through tiering, the oldest log position
// whose frames tier 2 may lack.
func TestSharedMarks(t *testing.T) {
	ref := SegmentRef{Tenant: "t", Stream: "s", Segment: "0"}
	for name, tc := range map[string]struct {
		logged [][3]uint64 // pos, first, next
		tiered uint64
		want   uint64 // oldest position kept (^0: none)
	}{
		"nothing tiered":    {[][3]uint64{{0, 0, 10}, {markEvery, 10, 20}}, 0, 0},
		"first span tiered": {[][3]uint64{{0, 0, 10}, {markEvery, 10, 20}, {2 * markEvery, 20, 30}}, 15, markEvery},
		"all tiered":        {[][3]uint64{{0, 0, 10}, {markEvery, 10, 20}}, 20, ^uint64(0)},
		"frames closer than the spacing share a mark": {[][3]uint64{{0, 0, 10}, {100, 10, 20}}, 15, 0},
		// A copy of an older frame after newer ones (adoption) must not
		// let the newer ones go.
		"an older copy adds no mark": {[][3]uint64{{0, 100, 200}, {markEvery, 0, 100}, {2 * markEvery, 200, 300}}, 150, 0},
	} {
		t.Run(name, func(t *testing.T) {
			sh := newSharedState()
			for _, l := range tc.logged {
				sh.logged(ref, l[0], l[1], l[2])
			}
			sh.tiered(ref, tc.tiered)
			if got := sh.oldest(^uint64(0)); got != tc.want {
				t.Fatalf("oldest kept %d, want %d (marks %v)", got, tc.want, sh.marks[ref])
			}
		})
	}
}
