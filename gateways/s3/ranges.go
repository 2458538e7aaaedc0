package s3

import (
	"math"
	"strings"
)

// rangeResult is what a Range header asks of an object.
type rangeResult int

const (
	rangeNone          rangeResult = iota // no range S3 honours: the whole object, 200
	rangePartial                          // one satisfiable range: 206
	rangeUnsatisfiable                    // one range that selects no byte: 416
)

// parseRange reads a Range header as S3 does. S3 honours exactly one
// range of bytes, as "first-last", "first-" or "-suffix"; anything else
// (another unit, several ranges, last before first, a sign, no digits)
// is ignored and the whole object is sent. A range of that form is
// unsatisfiable when it starts at or beyond the end, or asks for the
// last 0 bytes; any range of an empty object is. start and n are the
// bytes to send for rangePartial.
func parseRange(h string, size int64) (start, n int64, res rangeResult) {
	unit, spec, ok := strings.Cut(h, "=")
	if !ok || !strings.EqualFold(strings.TrimSpace(unit), "bytes") || strings.Contains(spec, ",") {
		return 0, size, rangeNone
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, size, rangeNone
	}
	if first == "" {
		suffix, ok := digits(last)
		if !ok {
			return 0, size, rangeNone
		}
		if suffix == 0 || size == 0 {
			return 0, size, rangeUnsatisfiable
		}
		suffix = min(suffix, size)
		return size - suffix, suffix, rangePartial
	}
	a, ok := digits(first)
	if !ok {
		return 0, size, rangeNone
	}
	b := int64(math.MaxInt64)
	if last != "" {
		if b, ok = digits(last); !ok || b < a {
			return 0, size, rangeNone
		}
	}
	if a >= size {
		return 0, size, rangeUnsatisfiable
	}
	b = min(b, size-1)
	return a, b - a + 1, rangePartial
}

// digits parses a non-empty run of decimal digits. Positions past the
// largest int64 are still positions (beyond any object), so the value
// saturates instead of failing.
func digits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if v > (math.MaxInt64-d)/10 {
			v = math.MaxInt64
			continue
		}
		v = v*10 + d
	}
	return v, true
}
