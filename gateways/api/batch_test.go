package api

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// Fuzz limits: small enough that the fuzzer reaches them.
var fuzzLimits = batchLimits{maxEvent: 64, maxBatch: 256}

func refused(err error, status int) bool {
	var he *httpError
	return errors.As(err, &he) && he.status == status
}

func FuzzParseNDJSON(f *testing.F) {
	f.Add([]byte("a\nbb\n"))
	f.Add([]byte("a\n\nb"))
	f.Add([]byte("no newline"))
	f.Add([]byte(strings.Repeat("x", 70) + "\n"))
	f.Add([]byte("\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseNDJSON(bytes.NewReader(body), fuzzLimits)
		// The reference: split on '\n', a final '\n' ends the last line.
		lines := bytes.Split(body, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		total, empty, large := 0, false, false
		for _, l := range lines {
			total += len(l)
			empty = empty || len(l) == 0
			large = large || len(l) > fuzzLimits.maxEvent
		}
		large = large || total > fuzzLimits.maxBatch
		if err != nil {
			if !refused(err, 400) && !refused(err, 413) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if !empty && !large && len(lines) > 0 {
				t.Fatalf("refused a valid body %q: %v", body, err)
			}
			return
		}
		if empty || large || len(lines) == 0 {
			t.Fatalf("accepted %q (empty line %v, over a limit %v)", body, empty, large)
		}
		if len(got) != len(lines) {
			t.Fatalf("%d events, want %d", len(got), len(lines))
		}
		for i := range got {
			if !bytes.Equal(got[i], lines[i]) {
				t.Fatalf("event %d = %q, want %q", i, got[i], lines[i])
			}
		}
	})
}

func FuzzParseFramed(f *testing.F) {
	f.Add(framed("a", "", "bc"))
	f.Add(framed("x")[:3])
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add(framed(strings.Repeat("y", 65)))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseFramed(bytes.NewReader(body), fuzzLimits)
		// The reference decoder.
		var want [][]byte
		ok, total, rest := true, 0, body
		for len(rest) > 0 {
			if len(rest) < 4 {
				ok = false
				break
			}
			n := int(binary.BigEndian.Uint32(rest))
			rest = rest[4:]
			if n > fuzzLimits.maxEvent || total+n > fuzzLimits.maxBatch || n > len(rest) {
				ok = false
				break
			}
			total += n
			want = append(want, rest[:n])
			rest = rest[n:]
		}
		ok = ok && len(want) > 0
		if err != nil {
			if !refused(err, 400) && !refused(err, 413) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			if ok {
				t.Fatalf("refused a valid body %x: %v", body, err)
			}
			return
		}
		if !ok {
			t.Fatalf("accepted invalid body %x", body)
		}
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("event %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}

func TestParseWhole(t *testing.T) {
	lim := batchLimits{maxEvent: 10, maxBatch: 100}
	for _, hint := range []int64{0, 3, 5, 100} {
		got, err := parseWhole(iotest.OneByteReader(strings.NewReader("hello")), batchLimits{maxEvent: 10, maxBatch: 100, sizeHint: hint})
		if err != nil || len(got) != 1 || string(got[0]) != "hello" {
			t.Fatalf("hint %d: %q %v", hint, got, err)
		}
	}
	if _, err := parseWhole(strings.NewReader(strings.Repeat("x", 11)), lim); !refused(err, 413) {
		t.Fatalf("over max_event_bytes: %v", err)
	}
	if got, err := parseWhole(strings.NewReader(strings.Repeat("x", 10)), lim); err != nil || len(got[0]) != 10 {
		t.Fatalf("exactly max_event_bytes: %v", err)
	}
	if _, err := parseWhole(strings.NewReader(""), lim); !refused(err, 400) {
		t.Fatalf("empty: %v", err)
	}
	boom := errors.New("boom")
	if _, err := parseWhole(iotest.ErrReader(boom), lim); !errors.Is(err, boom) {
		t.Fatalf("read error: %v", err)
	}
}

func TestParseLongLines(t *testing.T) {
	// Lines longer than the read buffer are gathered piecewise.
	long := strings.Repeat("z", readBuffer*2+3)
	lim := batchLimits{maxEvent: len(long), maxBatch: 4 * len(long)}
	got, err := parseNDJSON(strings.NewReader(long+"\nshort\n"+long), lim)
	if err != nil || len(got) != 3 || string(got[0]) != long || string(got[1]) != "short" || string(got[2]) != long {
		t.Fatalf("%d events, %v", len(got), err)
	}
	lim.maxEvent--
	if _, err := parseNDJSON(strings.NewReader(long+"\n"), lim); !refused(err, 413) {
		t.Fatalf("long line over the limit: %v", err)
	}
}

func TestParseChargesBudget(t *testing.T) {
	var held int64
	lim := batchLimits{maxEvent: 100, maxBatch: 1000, hold: func(n int64) error {
		if n > 200 {
			return errOverloaded
		}
		held = n
		return nil
	}}
	body := strings.Repeat("ab\n", 3)
	lim.sizeHint = int64(len(body))
	if _, err := parseNDJSON(strings.NewReader(body), lim); err != nil {
		t.Fatal(err)
	}
	if held < 6 {
		t.Fatalf("held %d bytes for 3 events", held)
	}
	// Many tiny events cost their overhead too.
	lim.sizeHint = 100
	_, err := parseNDJSON(strings.NewReader(strings.Repeat("a\n", 50)), lim)
	if !errors.Is(err, error(errOverloaded)) {
		t.Fatalf("tiny events over budget: %v", err)
	}
	if _, err := parseFramed(io.MultiReader(bytes.NewReader(framed("x")), iotest.ErrReader(http.ErrBodyReadAfterClose)), lim); !errors.Is(err, http.ErrBodyReadAfterClose) {
		t.Fatalf("framed read error: %v", err)
	}
}
