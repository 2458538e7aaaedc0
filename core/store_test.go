package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.Limits.MaxEventBytes = 100
	cfg.Limits.MaxBatchBytes = 1000
	s, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreLifecycle(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	if _, err := s.CreateTenant(ctx, "acme", map[string]string{"team": "web"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTenant(ctx, "acme", nil); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate tenant: %v", err)
	}
	if _, err := s.CreateTenant(ctx, "Bad_Name", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad tenant name: %v", err)
	}
	if _, err := s.CreateStream(ctx, "nope", "x", StreamConfig{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("stream in missing tenant: %v", err)
	}
	st, err := s.CreateStream(ctx, "acme", "clicks", StreamConfig{Segments: 4, Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Config.Encoding != EncodingLines || len(st.Segments) != 4 {
		t.Fatalf("defaults not applied: %+v", st)
	}
	if _, err := s.CreateStream(ctx, "acme", "bin", StreamConfig{Encoding: "xml"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad encoding: %v", err)
	}
	if err := s.DeleteTenant(ctx, "acme"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete non-empty tenant: %v", err)
	}

	// Same key → same segment, in order.
	var seg string
	for i := 0; i < 20; i++ {
		res, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "clicks", RoutingKey: "user-7", Events: [][]byte{[]byte(fmt.Sprintf("e%02d", i))}})
		if err != nil {
			t.Fatal(err)
		}
		if seg == "" {
			seg = res.Segment
		}
		if res.Segment != seg || res.FirstOffset != uint64(i) {
			t.Fatalf("append %d went to %s@%d", i, res.Segment, res.FirstOffset)
		}
	}
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "clicks", Events: [][]byte{[]byte("a\nb")}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "newline") {
		t.Fatalf("newline in lines stream: %v", err)
	}
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "clicks", Events: [][]byte{make([]byte, 101)}}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize event: %v", err)
	}
	big := make([][]byte, 11)
	for i := range big {
		big[i] = make([]byte, 100)
	}
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "clicks", Events: big}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversize batch: %v", err)
	}
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "clicks", Segment: "9", Events: [][]byte{[]byte("x")}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown segment: %v", err)
	}
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	res, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "clicks", Segment: seg, From: 5, MaxEvents: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Events) != 3 || string(res.Events[0].Data) != "e05" || res.Next != 8 || res.Events[0].Time.IsZero() {
		t.Fatalf("read after reopen: %+v", res)
	}
	desc, err := s.GetStream(ctx, "acme", "clicks")
	if err != nil {
		t.Fatal(err)
	}
	total := uint64(0)
	for _, sg := range desc.Segments {
		total += sg.NextOffset
	}
	if total != 20 {
		t.Fatalf("segments hold %d events, want 20", total)
	}
	if _, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "clicks", Segment: seg, From: 21}); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("read past end: %v", err)
	}
}

func TestDeleteAndRecreateStream(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	s.CreateTenant(ctx, "acme", nil)
	s.CreateStream(ctx, "acme", "s", StreamConfig{})
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Events: [][]byte{[]byte("old")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStream(ctx, "acme", "s"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetStream(ctx, "acme", "s"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted stream still there: %v", err)
	}
	s.CreateStream(ctx, "acme", "s", StreamConfig{})
	res, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "s", Segment: "0"})
	if err != nil || len(res.Events) != 0 {
		t.Fatalf("re-created stream sees old events: %+v %v", res, err)
	}
	// A crash during a delete leaves the stream's directory and the note
	// that it is to go, committed with the record's deletion: the next
	// start removes it, and only it, without listing other directories.
	orphan := filepath.Join(dir, "logs", "acme", "gone@1", "0")
	if err := os.MkdirAll(orphan, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.cat.Set(keyGone+"acme/gone@1", []byte("1")); err != nil {
		t.Fatal(err)
	}
	// A directory no record owns and no note names (one an earlier
	// release left) stays until a data directory is swept again.
	stray := filepath.Join(dir, "logs", "acme", "stray@1", "0")
	if err := os.MkdirAll(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir)
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Fatalf("orphaned log dir survived restart: %v", err)
	}
	if _, ok, _ := s.cat.Get([]byte(keyGone + "acme/gone@1")); ok {
		t.Fatal("the note of a removed directory is still there")
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("a start after the first swept the log directories again: %v", err)
	}
	// A data directory never swept (from a release before the notes) is
	// swept once at its next start.
	if err := s.cat.Delete(keySwept); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Fatalf("a directory no stream owns survived the sweep: %v", err)
	}
	if _, err := s.GetStream(ctx, "acme", "s"); err != nil {
		t.Fatalf("the sweep took a live stream: %v", err)
	}
	if _, ok, _ := s.cat.Get([]byte(keySwept)); !ok {
		t.Fatal("no record of the sweep")
	}
}

func TestWaitStreamWakesOnAnySegment(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	s.CreateTenant(ctx, "acme", nil)
	s.CreateStream(ctx, "acme", "s", StreamConfig{Segments: 3})
	ok, err := s.WaitStream(ctx, "acme", "s", nil, 10*time.Millisecond)
	if ok || err != nil {
		t.Fatalf("empty stream: %v %v", ok, err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Segment: "2", Events: [][]byte{[]byte("x")}})
	}()
	// ok is false when the wait times out; the minute only bounds a
	// wait that was never woken.
	ok, err = s.WaitStream(ctx, "acme", "s", map[string]uint64{}, time.Minute)
	if !ok || err != nil {
		t.Fatalf("wait not woken by the append: %v %v", ok, err)
	}
	ok, _ = s.WaitStream(ctx, "acme", "s", map[string]uint64{"2": 1}, 10*time.Millisecond)
	if ok {
		t.Fatal("woke although nothing new")
	}
}
