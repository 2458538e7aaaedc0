package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/silt-io/silt/core/vfs"
)

func TestStreamsAndTruncateBefore(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.SegmentFileBytes = 4096
	s, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tn := range []string{"zeta", "acme"} {
		if _, err := s.CreateTenant(ctx, tn, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, x := range [][2]string{{"zeta", "a"}, {"acme", "b"}, {"acme", "a"}} {
		if _, err := s.CreateStream(ctx, x[0], x[1], StreamConfig{Segments: 2}); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := s.Changed("acme", "a", "0")
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 900)
	for i := 0; i < 40; i++ {
		if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "a", Segment: "0", Events: [][]byte{[]byte(fmt.Sprint(i, big))}}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-ch:
	default:
		t.Fatal("Changed channel not closed by a commit")
	}
	var got []string
	err = s.EachStream(func(st Stream) error {
		got = append(got, st.Tenant+"/"+st.Name)
		if len(st.Segments) != 2 {
			t.Fatalf("%s has %d segments", st.Name, len(st.Segments))
		}
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[acme/a acme/b zeta/a]" {
		t.Fatalf("EachStream: %v %v", got, err)
	}
	segment0 := func() SegmentInfo {
		st, err := s.GetStream(ctx, "acme", "a")
		if err != nil {
			t.Fatal(err)
		}
		return st.Segments[0]
	}
	before := segment0()
	if err := s.TruncateBefore("acme", "a", "0", 30); err != nil {
		t.Fatal(err)
	}
	after := segment0()
	if after.FirstOffset == 0 || after.FirstOffset > 30 || after.Bytes >= before.Bytes || after.NextOffset != 40 {
		t.Fatalf("after truncation %+v (before %+v)", after, before)
	}
	if _, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "a", Segment: "0", From: 0}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read below first: %v", err)
	}
	tests := []struct {
		name, tenant, stream, seg string
	}{
		{"missing tenant", "nope", "a", "0"},
		{"missing stream", "acme", "zz", "0"},
		{"missing segment", "acme", "a", "7"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.TruncateBefore(tc.tenant, tc.stream, tc.seg, 1); !errors.Is(err, ErrNotFound) {
				t.Fatalf("got %v, want ErrNotFound", err)
			}
		})
	}
	s.Close()
	s2, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	st, _ := s2.GetStream(ctx, "acme", "a")
	if st.Segments[0].FirstOffset != after.FirstOffset || st.Created.UnixNano() != st.Incarnation() {
		t.Fatalf("after reopen %+v", st.Segments[0])
	}
}

// TestStreamVersion: a stream's version moves with every commit and
// truncation and with Tier2Changed, and not with reads or descriptions;
// StreamConfig answers from the record, with the stream's set.
func TestStreamVersion(t *testing.T) {
	ctx := context.Background()
	s := mustOpenFS(t, walTestConfig(t.TempDir()), vfs.OS{})
	defer s.Close()
	s.CreateTenant(ctx, "tnt", nil)
	if _, err := s.CreateStream(ctx, "tnt", "s", StreamConfig{Segments: 2, Set: "billing"}); err != nil {
		t.Fatal(err)
	}
	version := func() uint64 {
		t.Helper()
		inc, v, err := s.StreamVersion("tnt", "s")
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := s.GetStream(ctx, "tnt", "s"); inc != st.Incarnation() {
			t.Fatalf("incarnation %d, stream's %d", inc, st.Incarnation())
		}
		return v
	}
	v0 := version()
	for i := range 3 {
		if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: "s", Segment: "0", Events: [][]byte{fmt.Appendf(nil, "e%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	v1 := version()
	if v1 == v0 {
		t.Fatal("version unchanged by appends")
	}
	readAll(t, s, "tnt", "s", "0")
	if version() != v1 {
		t.Fatal("version moved by a read")
	}
	if err := s.TruncateBefore("tnt", "s", "0", 3); err != nil {
		t.Fatal(err)
	}
	v2 := version()
	if v2 == v1 {
		t.Fatal("version unchanged by a truncation")
	}
	s.Tier2Changed("tnt", "s")
	if version() == v2 {
		t.Fatal("version unchanged by Tier2Changed")
	}
	if cfg, err := s.StreamConfig("tnt", "s"); err != nil || cfg.Set != "billing" || cfg.Segments != 2 {
		t.Fatalf("StreamConfig: %+v %v", cfg, err)
	}
	if _, _, err := s.StreamVersion("tnt", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("version of a missing stream: %v", err)
	}
}
