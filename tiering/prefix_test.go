package tiering

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// TestTierPrefix: a stream's tier prefix places its objects under
// <prefix>/<tenant>/<stream>/ in the backend, the chunk records name those
// keys (which is how every head finds them), and deleting the stream
// removes them without touching another stream whose keys start the same
// way.
func TestTierPrefix(t *testing.T) {
	e := newEnv(t, testConfig())
	e.createStreamConfig("acme", "clicks", core.StreamConfig{Encoding: core.EncodingLines, Segments: 1, TierPrefix: "archive/2026"})
	// Tenant "clicks" with tier prefix "archive/2026/acme": its keys begin
	// with archive/2026/acme/clicks/, the object prefix of acme/clicks.
	e.createStreamConfig("clicks", "s", core.StreamConfig{Encoding: core.EncodingLines, Segments: 1, TierPrefix: "archive/2026/acme"})
	e.createStream("acme", "plain", core.EncodingLines, 1)
	evs := events("p", 30, 60)
	for _, s := range []struct{ tenant, stream string }{{"acme", "clicks"}, {"clicks", "s"}, {"acme", "plain"}} {
		e.append(s.tenant, s.stream, "0", evs...)
	}
	e.clock.Advance(time.Hour)
	e.scan()
	e.scan()

	want := encodeAll(core.EncodingLines, evs)
	for _, s := range []struct{ tenant, stream, keyPrefix string }{
		{"acme", "clicks", "archive/2026/acme/clicks/segment=0/"},
		{"clicks", "s", "archive/2026/acme/clicks/s/segment=0/"},
		{"acme", "plain", "acme/plain/segment=0/"},
	} {
		cs := e.chunks(s.tenant, s.stream, "0")
		if len(cs) < 2 {
			t.Fatalf("%s/%s: %d chunks, want several", s.tenant, s.stream, len(cs))
		}
		for _, c := range cs {
			if c.Key != s.keyPrefix+c.Name {
				t.Fatalf("%s/%s: chunk key %s, want %s%s", s.tenant, s.stream, c.Key, s.keyPrefix, c.Name)
			}
			if _, err := os.Stat(filepath.Join(e.dir, "tier2", filepath.FromSlash(c.Key))); err != nil {
				t.Fatalf("object of %s not in the fs backend: %v", c.Key, err)
			}
		}
		if got := e.tier2Bytes(s.tenant, s.stream, "0"); !bytes.Equal(got, want) {
			t.Fatalf("%s/%s: tier 2 holds %d bytes, want %d", s.tenant, s.stream, len(got), len(want))
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "tier2", "acme", "clicks")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a prefixed stream wrote outside its prefix: %v", err)
	}

	// The record keeps the prefix, so a restart (and a deletion after it)
	// still finds the objects.
	e.restart()
	e.scan()
	if err := e.store.DeleteStream(context.Background(), "acme", "clicks"); err != nil {
		t.Fatal(err)
	}
	e.scan()
	keys, err := e.be.List(context.Background(), "archive/2026/acme/clicks/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "archive/2026/acme/clicks/s/") {
			t.Fatalf("%s survived the deletion of its stream", k)
		}
	}
	chunkKeys := 0
	for _, k := range keys {
		if !isManifest(k) {
			chunkKeys++
		}
	}
	if len(e.chunks("clicks", "s", "0")) == 0 || chunkKeys != len(e.chunks("clicks", "s", "0")) {
		t.Fatalf("the neighbour stream's objects went with the deleted stream: %v", keys)
	}
}

func TestTierPrefixValidation(t *testing.T) {
	e := newEnv(t, testConfig())
	if _, err := e.store.CreateTenant(context.Background(), "acme", nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/abs", "a/../b", "a//b", "a/", "..", ".tmp-x", "_hidden", "a:b", "a b"} {
		_, err := e.store.CreateStream(context.Background(), "acme", "s", core.StreamConfig{TierPrefix: p})
		if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "tier prefix") {
			t.Errorf("tier prefix %q: CreateStream = %v, want ErrInvalid naming the tier prefix", p, err)
		}
	}
}
