package s3

import "testing"

// FuzzParseRange: whatever the header, the answer is the whole object, a
// range inside it, or unsatisfiable, never a panic or bytes outside it.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=-0", "bytes=5-", "bytes=3-1", "items=0-1", "bytes=0-1,2-3", "bytes=99999999999999999999-", "BYTES = 1-2"} {
		f.Add(s, int64(100))
		f.Add(s, int64(0))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			return
		}
		start, n, res := parseRange(h, size)
		switch res {
		case rangeNone:
			if start != 0 || n != size {
				t.Fatalf("%q of %d: whole object as %d+%d", h, size, start, n)
			}
		case rangePartial:
			if start < 0 || n < 1 || start > size-n {
				t.Fatalf("%q of %d: range %d+%d outside the object", h, size, start, n)
			}
		case rangeUnsatisfiable:
		default:
			t.Fatalf("%q: result %d", h, res)
		}
	})
}
