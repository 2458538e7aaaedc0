package tiering

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		ok     bool
	}{
		{"defaults", func(*Config) {}, true},
		{"unknown backend", func(c *Config) { c.Backend = "tape" }, false},
		{"zero chunk", func(c *Config) { c.MaxChunkBytes = 0 }, false},
		{"interval too long for the lag", func(c *Config) { c.Interval = time.Second }, false},
		{"zero interval", func(c *Config) { c.Interval = 0 }, false},
		{"backlog below a chunk", func(c *Config) { c.MaxBacklogBytes = c.MaxChunkBytes - 1 }, false},
		{"retry max below initial", func(c *Config) { c.Retry.Max = c.Retry.Initial / 2 }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.modify(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestFSBackend(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	put := func(key, data string) {
		t.Helper()
		w, err := b.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	put("t/s/segment=0/a", "hello")
	put("t/s/segment=0/a", "again") // a re-upload replaces
	put("t/s/segment=1/b", "x")
	put("t/s2/segment=0/c", "y")

	// An aborted upload leaves nothing; an unfinished one is invisible.
	w, _ := b.Create(ctx, "t/s/segment=0/aborted")
	w.Write([]byte("zz"))
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "t/s/segment=0/aborted"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("aborted upload visible: %v", err)
	}
	w, _ = b.Create(ctx, "t/s/segment=0/unfinished")
	w.Write([]byte("zz"))

	tests := []struct {
		prefix string
		want   []string
	}{
		{"t/s/", []string{"t/s/segment=0/a", "t/s/segment=1/b"}},
		{"t/s", []string{"t/s/segment=0/a", "t/s/segment=1/b", "t/s2/segment=0/c"}},
		{"t/s/segment=0/", []string{"t/s/segment=0/a"}},
		{"nothing/", nil},
	}
	for _, tc := range tests {
		got, err := b.List(ctx, tc.prefix)
		if err != nil || len(got) != len(tc.want) {
			t.Fatalf("List(%q) = %v, %v; want %v", tc.prefix, got, err, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("List(%q) = %v, want %v", tc.prefix, got, tc.want)
			}
		}
	}
	o, err := b.Open(ctx, "t/s/segment=0/a")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if n, _ := o.ReadAt(buf, 0); n != 5 || string(buf) != "again" || o.Size() != 5 {
		t.Fatalf("read %q", buf[:n])
	}
	o.Close()

	// Delete removes the object and the unfinished upload of a key.
	if err := b.Delete(ctx, "t/s/segment=0/unfinished"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "t/s/segment=0")); len(ents) != 1 {
		t.Fatalf("after Delete the segment dir holds %v", ents)
	}
	if err := b.Delete(ctx, "t/s/segment=0/never"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a/", "a/.tmp-x"} {
		if _, err := b.Create(ctx, bad); err == nil {
			t.Fatalf("Create(%q) accepted", bad)
		}
	}
}

// TestFSBackendLargeUpload writes an object larger than writebackBytes in
// odd-sized pieces (so that writeback starts mid-piece, several times)
// and reads back exactly those bytes, then re-uploads the key with fewer
// bytes: the truncated temp file must not keep the old tail.
func TestFSBackendLargeUpload(t *testing.T) {
	b, err := OpenFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := make([]byte, 3*writebackBytes+12345)
	for i := range data {
		data[i] = byte(i*31 + i>>12)
	}
	upload := func(data []byte) {
		t.Helper()
		w, err := b.Create(ctx, "t/s/segment=0/big")
		if err != nil {
			t.Fatal(err)
		}
		for p := data; len(p) > 0; {
			n := min(len(p), 333_333)
			if _, err := w.Write(p[:n]); err != nil {
				t.Fatal(err)
			}
			p = p[n:]
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range [][]byte{data, data[:writebackBytes+7]} {
		upload(want)
		o, err := b.Open(ctx, "t/s/segment=0/big")
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, o.Size())
		if _, err := o.ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		o.Close()
		if !bytes.Equal(got, want) {
			t.Fatalf("read back %d bytes, want the %d written", len(got), len(want))
		}
	}
}
