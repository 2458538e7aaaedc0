package core

import "testing"

func TestSegmentIndexMatchesRanges(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16, 255, 256} {
		segs := segmentRanges(n)
		if segs[0].KeyLow != 0 || segs[n-1].KeyHigh != ^uint32(0) {
			t.Fatalf("n=%d: ranges do not cover the hash space: %+v", n, segs)
		}
		for i := 1; i < n; i++ {
			if segs[i].KeyLow != segs[i-1].KeyHigh+1 {
				t.Fatalf("n=%d: gap between %d and %d", n, i-1, i)
			}
		}
		for _, h := range []uint32{0, 1, 1 << 31, ^uint32(0), segs[n-1].KeyLow, segs[n/2].KeyHigh} {
			i := segmentIndexFor(n, h)
			if h < segs[i].KeyLow || h > segs[i].KeyHigh {
				t.Fatalf("n=%d h=%d: index %d range [%d,%d]", n, h, i, segs[i].KeyLow, segs[i].KeyHigh)
			}
		}
	}
}
