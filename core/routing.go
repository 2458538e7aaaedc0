package core

import (
	"hash/fnv"
	"strconv"
)

// KeyHash is the routing-key hash: 32-bit FNV-1a of the key's bytes. It is
// part of the API contract (docs/api.md) so that clients can pick the same
// segment the server would.
func KeyHash(key string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return h.Sum32()
}

// segmentRanges splits the 32-bit hash space into n contiguous ranges;
// segment i is named strconv.Itoa(i).
func segmentRanges(n int) []SegmentInfo {
	segs := make([]SegmentInfo, n)
	span := uint64(1) << 32
	for i := range segs {
		// lo is the smallest h with h*n>>32 == i, matching segmentIndexFor.
		lo := (span*uint64(i) + uint64(n) - 1) / uint64(n)
		hi := (span*uint64(i+1)+uint64(n)-1)/uint64(n) - 1
		segs[i] = SegmentInfo{ID: strconv.Itoa(i), KeyLow: uint32(lo), KeyHigh: uint32(hi)}
	}
	return segs
}

// segmentIndexFor returns the index of the range that holds hash h.
func segmentIndexFor(n int, h uint32) int {
	return int(uint64(h) * uint64(n) >> 32)
}
