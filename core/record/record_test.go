package record

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func sample() []Record {
	return []Record{
		{TimeUnixNano: 1, WriterID: "w", Seq: 7, Events: [][]byte{[]byte("a"), []byte("bc")}},
		{TimeUnixNano: -5, Events: [][]byte{{}}},
		{TimeUnixNano: 1 << 60, WriterID: "writer-2", Seq: 1 << 63, Events: [][]byte{bytes.Repeat([]byte{0}, 1000)}},
		{TimeUnixNano: 3, WriterID: "w", Owner: "alice", Seq: 8, Events: [][]byte{[]byte("owned")}},
	}
}

func TestRoundTrip(t *testing.T) {
	var buf []byte
	for _, r := range sample() {
		buf = Append(buf, r)
	}
	rd := NewReader(bytes.NewReader(buf), 0, int64(len(buf)), 1<<20)
	for i, want := range sample() {
		got, err := rd.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got.TimeUnixNano != want.TimeUnixNano || got.WriterID != want.WriterID || got.Owner != want.Owner || got.Seq != want.Seq || len(got.Events) != len(want.Events) {
			t.Fatalf("record %d = %+v, want %+v", i, got, want)
		}
		for j := range want.Events {
			if !bytes.Equal(got.Events[j], want.Events[j]) {
				t.Fatalf("record %d event %d differs", i, j)
			}
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("after last record: %v, want EOF", err)
	}
}

func TestTornAndDamagedTails(t *testing.T) {
	var buf []byte
	for _, r := range sample() {
		buf = Append(buf, r)
	}
	first := len(Append(nil, sample()[0]))
	for cut := first + 1; cut < len(buf); cut++ {
		rd := NewReader(bytes.NewReader(buf[:cut]), 0, int64(cut), 1<<20)
		if _, err := rd.Next(); err != nil {
			t.Fatalf("cut %d: first record: %v", cut, err)
		}
		for {
			_, err := rd.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("cut %d: %v, want ErrCorrupt", cut, err)
				}
				break
			}
		}
		if rd.Pos() > int64(cut) {
			t.Fatalf("cut %d: pos %d beyond end", cut, rd.Pos())
		}
	}
	for i := 0; i < len(buf); i++ {
		dam := bytes.Clone(buf)
		dam[i] ^= 0x01
		rd := NewReader(bytes.NewReader(dam), 0, int64(len(dam)), 1<<20)
		n := 0
		var err error
		for ; ; n++ {
			if _, err = rd.Next(); err != nil {
				break
			}
		}
		if err == io.EOF {
			t.Fatalf("flip at byte %d went unnoticed", i)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, r := range sample() {
		f.Add(Append(nil, r))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rd := NewReader(bytes.NewReader(data), 0, int64(len(data)), 1<<16)
		for i := 0; i < 100; i++ {
			r, err := rd.Next()
			if err != nil {
				return
			}
			// Whatever decodes must re-encode to the same bytes.
			again := Append(nil, r)
			rd2 := NewReader(bytes.NewReader(again), 0, int64(len(again)), 1<<16)
			if _, err := rd2.Next(); err != nil {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
		}
	})
}

// TestVersionByOwner checks that only records with an owner use version
// 2, so that logs without owned writers stay readable by older releases,
// and that Size covers the owner.
func TestVersionByOwner(t *testing.T) {
	cases := map[string]struct {
		r       Record
		version byte
	}{
		"no writer":         {Record{Events: [][]byte{[]byte("a")}}, 1},
		"writer, no owner":  {Record{WriterID: "w", Seq: 1, Events: [][]byte{[]byte("a")}}, 1},
		"writer and owner":  {Record{WriterID: "w", Owner: "alice", Seq: 1, Events: [][]byte{[]byte("a")}}, 2},
		"long owner fields": {Record{WriterID: string(bytes.Repeat([]byte("w"), 128)), Owner: string(bytes.Repeat([]byte("o"), 64)), Seq: 1 << 62, Events: [][]byte{{}}}, 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := Append(nil, c.r)
			if b[HeaderSize] != c.version {
				t.Fatalf("version %d, want %d", b[HeaderSize], c.version)
			}
			if n := Size(c.r.WriterID, c.r.Owner, c.r.Events); len(b) > n {
				t.Fatalf("encoded %d bytes, Size said %d", len(b), n)
			}
			got, err := Decode(b[HeaderSize:])
			if err != nil || got.Owner != c.r.Owner || got.WriterID != c.r.WriterID {
				t.Fatalf("decoded %+v, %v", got, err)
			}
		})
	}
}
