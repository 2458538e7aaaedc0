package api

import (
	"encoding/base64"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	for name, pos := range map[string][]position{
		"one":       {{"0", 17}},
		"several":   {{"1", 4}, {"0", 17}, {"10", 0}},
		"max":       {{"0", 1<<64 - 1}},
		"odd names": {{"a:b", 1}, {"c,d", 2}, {"%", 3}, {"é", 4}},
	} {
		t.Run(name, func(t *testing.T) {
			s := encodeCursor(pos)
			if strings.ContainsAny(s, "+/=") {
				t.Fatalf("cursor %q is not unpadded base64url", s)
			}
			got, err := decodeCursor(s)
			if err != nil {
				t.Fatal(err)
			}
			if !samePositions(got, pos) {
				t.Fatalf("round trip: %v → %q → %v", pos, s, got)
			}
		})
	}
	// The documented plain form.
	raw, _ := base64.RawURLEncoding.DecodeString(encodeCursor([]position{{"1", 4}, {"0", 17}}))
	if string(raw) != "0:17,1:4" {
		t.Fatalf("plain form %q", raw)
	}
}

func TestCursorRejects(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for name, s := range map[string]string{
		"empty":          "",
		"not base64":     "!!",
		"padded":         enc("0:1") + "=",
		"no colon":       enc("0"),
		"empty id":       enc(":1"),
		"bad escape":     enc("%zz:1"),
		"negative":       enc("0:-1"),
		"plus sign":      enc("0:+1"),
		"overflow":       enc("0:18446744073709551616"),
		"duplicate":      enc("0:1,0:2"),
		"trailing comma": enc("0:1,"),
		"huge":           strings.Repeat("A", maxCursorLen+1),
	} {
		if _, err := decodeCursor(s); !errors.Is(err, errBadCursor) {
			t.Errorf("%s: decodeCursor(%.20q) = %v", name, s, err)
		}
	}
}

func samePositions(a, b []position) bool {
	key := func(p []position) []position {
		c := slices.Clone(p)
		slices.SortFunc(c, func(x, y position) int { return strings.Compare(x.segment, y.segment) })
		return c
	}
	return slices.Equal(key(a), key(b))
}

func FuzzCursor(f *testing.F) {
	f.Add(encodeCursor([]position{{"0", 17}, {"1", 4}}))
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("0:1,%41:2")))
	f.Add("end")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := decodeCursor(s)
		if err != nil {
			if !errors.Is(err, errBadCursor) {
				t.Fatalf("error %v does not wrap errBadCursor", err)
			}
			return
		}
		again, err := decodeCursor(encodeCursor(pos))
		if err != nil {
			t.Fatalf("re-encoded cursor of %v does not decode: %v", pos, err)
		}
		if !samePositions(pos, again) {
			t.Fatalf("round trip changed %v into %v", pos, again)
		}
	})
}
