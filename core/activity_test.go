package core

import (
	"context"
	"testing"
)

// The Activity set holds a segment after a commit to it, only that one, and
// after a reopen every segment with tier-1 data.
func TestActivityMarksCommittedSegments(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	if _, err := s.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"busy", "idle"} {
		if _, err := s.CreateStream(ctx, "acme", name, StreamConfig{Segments: 2}); err != nil {
			t.Fatal(err)
		}
	}
	// A new stream is marked once, so that tiering records it.
	if got := s.Activity().Take(); len(got) != 4 {
		t.Fatalf("new streams' segments marked: %v, want 4", got)
	}
	ready := s.Activity().Ready()
	select {
	case <-ready:
		t.Fatal("Ready closed with nothing marked")
	default:
	}
	res, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "busy", Segment: "1", Events: [][]byte{[]byte("x")}})
	if err != nil {
		t.Fatal(err)
	}
	<-ready
	inc := func(name string) int64 {
		st, err := s.GetStream(ctx, "acme", name)
		if err != nil {
			t.Fatal(err)
		}
		return st.Incarnation()
	}
	want := SegmentRef{Tenant: "acme", Stream: "busy", Segment: res.Segment, Incarnation: inc("busy")}
	got := s.Activity().Take()
	if len(got) != 1 || got[0] != want {
		t.Fatalf("after one append: %v, want [%v]", got, want)
	}
	if got := s.Activity().Take(); len(got) != 0 {
		t.Fatalf("Take did not clear the set: %v", got)
	}
	s.Close()

	s = openStore(t, dir)
	defer s.Close()
	got = s.Activity().Take()
	if len(got) != 1 || got[0] != want {
		t.Fatalf("after reopen: %v, want [%v]", got, want)
	}
}
