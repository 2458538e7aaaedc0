package fh

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

var key = []byte("0123456789abcdef")

func TestRoundTrip(t *testing.T) {
	c, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string][]string{
		"root":     nil,
		"tenant":   {"acme"},
		"chunk":    {"acme", "clicks", "segment=0", "00000000000000000000-00000000000000000002.txt"},
		"bigoff":   {"acme", "clicks", "segment=12", "18446744073709551615-18446744073709551615.txt"},
		"manifest": {"acme", "clicks", "_manifest.json"},
		"digits":   {"a1", "007", "12", "0000"},
		"odd":      {"x\x00y", "ü", "segment="},
		"long run": {strings.Repeat("9", 25)},
	} {
		t.Run(name, func(t *testing.T) {
			h, err := c.Encode(3, "id", p)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) > MaxSize || len(h)%4 != 0 {
				t.Fatalf("handle of %d bytes", len(h))
			}
			got, err := c.Decode("id", h)
			if err != nil || !slices.Equal(got, p) {
				t.Fatalf("Decode = %q, %v; want %q", got, err, p)
			}
			if exp, _ := Export(h); exp != 3 {
				t.Fatalf("Export = %d", exp)
			}
		})
	}
}

func TestRejects(t *testing.T) {
	c, _ := New(key)
	other, _ := New(bytes.Repeat([]byte{1}, 16))
	h, _ := c.Encode(0, "id", []string{"acme", "clicks"})
	if _, err := other.Decode("id", h); !errors.Is(err, ErrInvalid) {
		t.Fatalf("other key: %v", err)
	}
	if _, err := c.Decode("other export", h); !errors.Is(err, ErrInvalid) {
		t.Fatalf("other export identity: %v", err)
	}
	for i := range h {
		b := bytes.Clone(h)
		b[i] ^= 0x40
		if _, err := c.Decode("id", b); err == nil {
			t.Fatalf("flipping byte %d still decodes", i)
		}
	}
	if _, err := c.Encode(0, "id", []string{"acme", strings.Repeat("s", 200)}); !errors.Is(err, ErrTooLong) {
		t.Fatalf("200-char stream: %v", err)
	}
	if _, err := New([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

func FuzzDecode(f *testing.F) {
	c, _ := New(key)
	h, _ := c.Encode(1, "id", []string{"acme", "clicks", "segment=0", "00000000000000000000-00000000000000000002.txt"})
	f.Add(h)
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := c.Decode("id", b)
		if err != nil {
			return
		}
		again, err := c.Encode(int(b[1]), "id", p)
		if err != nil {
			t.Fatalf("decoded path %q does not encode: %v", p, err)
		}
		if q, err := c.Decode("id", again); err != nil || !slices.Equal(p, q) {
			t.Fatalf("re-encoded %q decodes to %q, %v", p, q, err)
		}
	})
}
