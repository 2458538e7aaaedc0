package client

import "sort"

// KeyHash is the routing-key hash the server uses: 32-bit FNV-1a of the
// key's bytes (docs/api.md). A key belongs to the segment whose
// [KeyLow, KeyHigh] holds its hash, so a client can send each batch to the
// segment the server would have picked.
func KeyHash(key string) uint32 {
	const (
		offset32 = 2166136261
		prime32  = 16777619
	)
	h := uint32(offset32)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= prime32
	}
	return h
}

// segmentFor returns the index in segs (sorted by KeyLow) of the segment
// owning hash h, or -1 when none does.
func segmentFor(segs []Segment, h uint32) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].KeyHigh >= h })
	if i < len(segs) && segs[i].KeyLow <= h {
		return i
	}
	return -1
}
