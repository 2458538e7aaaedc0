package groups

import (
	"testing"
	"time"
)

// FuzzDecodeGroup: whatever the catalog holds under a group key, decoding
// returns a group or an error, and what decodes encodes back to the same.
func FuzzDecodeGroup(f *testing.F) {
	f.Add(encodeGroup(Group{Tenant: "acme", Name: "g", Streams: []string{"orders"}, SessionTimeout: 10 * time.Second,
		Generation: 3, Members: []Member{{ID: "a", Segments: []SegmentRef{{"orders", "0"}}}}, Incarnations: map[string]int64{"orders": 1}}))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"members":null}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := decodeGroup(b)
		if err != nil {
			return
		}
		again, err := decodeGroup(encodeGroup(g))
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if string(encodeGroup(again)) != string(encodeGroup(g)) {
			t.Fatalf("round trip changed the group: %s vs %s", encodeGroup(again), encodeGroup(g))
		}
	})
}

// TestKeysSortUnderTheirGroup: a group's positions are one prefix, which
// no other group's keys share (so delete and load scan exactly them).
func TestKeysSortUnderTheirGroup(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		group, other, stream string
	}{
		{"prefix names", "g", "g2", "s"},
		{"dotted names", "g", "g.1", "a.b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := positionKey("acme", tc.other, SegmentRef{tc.stream, "0"})
			p := positionsPrefix("acme", tc.group)
			if len(k) >= len(p) && k[:len(p)] == p {
				t.Fatalf("position key %q of group %q is under group %q's prefix %q", k, tc.other, tc.group, p)
			}
		})
	}
}
