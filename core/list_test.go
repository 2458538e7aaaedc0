package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// countingScanner counts the catalog records a listing reads.
type countingScanner struct {
	sc   scanner
	read int
}

func (c *countingScanner) Scan(prefix, start []byte, fn func(key, value []byte) error) error {
	return c.sc.Scan(prefix, start, func(k, v []byte) error {
		c.read++
		return fn(k, v)
	})
}

// manyStreams is the size of the tenant the paging tests list. The
// records are written straight into the catalog in one batch: creating
// them through CreateStream would open 10,000 sets of segment logs and
// pay a catalog sync each, and the listing reads only the catalog.
const manyStreams = 10_000

func streamName(i int) string { return fmt.Sprintf("s%05d", i) }

func seedStreams(t *testing.T, s *Store, tenant string, n int) {
	t.Helper()
	set := make(map[string][]byte, n)
	for i := range n {
		r := streamRecord{Stream: Stream{Tenant: tenant, Name: streamName(i), Config: StreamConfig{Encoding: EncodingLines, Segments: 2}, Created: time.Unix(int64(i), 0).UTC(), Segments: segmentRanges(2)}}
		v, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		set[keyStream+tenant+"/"+r.Name] = v
	}
	if err := s.cat.Commit(set, nil); err != nil {
		t.Fatal(err)
	}
}

// Every page of a 10,000-stream tenant reads exactly the records it
// returns (one more only where it stops), wherever it is in the tenant;
// a listing that collected and sorted the tenant would read all of them
// for every page.
func TestListStreamsPageCostsThePage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	if _, err := s.CreateTenant(ctx, "big", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTenant(ctx, "other", nil); err != nil {
		t.Fatal(err)
	}
	seedStreams(t, s, "big", manyStreams)
	seedStreams(t, s, "other", 10)
	const limit = 250
	cs := &countingScanner{sc: s.cat}
	var got []string
	after, pages := "", 0
	for {
		cs.read = 0
		page, err := streamsPage(cs, "big", after, limit)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if cs.read > limit {
			t.Fatalf("page %d after %q read %d records for a page of %d", pages, after, cs.read, len(page))
		}
		for _, st := range page {
			if st.Tenant != "big" || st.Segments != nil {
				t.Fatalf("page %d: %+v", pages, st)
			}
			got = append(got, st.Name)
		}
		if len(page) < limit {
			break
		}
		after = page[len(page)-1].Name
	}
	if len(got) != manyStreams || !slices.IsSorted(got) || got[0] != streamName(0) || got[len(got)-1] != streamName(manyStreams-1) {
		t.Fatalf("listed %d names (sorted %v), first %q", len(got), slices.IsSorted(got), got[0])
	}
	if want := manyStreams/limit + 1; pages != want {
		t.Fatalf("%d pages, want %d", pages, want)
	}
}

func TestListStreamsPage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	if _, err := s.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTenant(ctx, "acme-2", nil); err != nil {
		t.Fatal(err)
	}
	// Byte order, not the order of a prefix walk: '-' and '.' sort before
	// the digits and letters.
	for _, n := range []string{"b", "a.x", "a-x", "a", "a0", "B"} {
		if _, err := s.CreateStream(ctx, "acme", n, StreamConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateStream(ctx, "acme-2", "z", StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStream(ctx, "acme", "a0"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		tenant, after string
		limit         int
		want          []string
		err           error
	}{
		"all":            {tenant: "acme", limit: 10, want: []string{"B", "a", "a-x", "a.x", "b"}},
		"first page":     {tenant: "acme", limit: 2, want: []string{"B", "a"}},
		"after a name":   {tenant: "acme", after: "a", limit: 2, want: []string{"a-x", "a.x"}},
		"after no name":  {tenant: "acme", after: "a-", limit: 10, want: []string{"a-x", "a.x", "b"}},
		"after the last": {tenant: "acme", after: "b", limit: 10, want: nil},
		"other tenant":   {tenant: "acme-2", limit: 10, want: []string{"z"}},
		"no tenant":      {tenant: "nope", limit: 10, err: ErrNotFound},
		"zero limit":     {tenant: "acme", limit: 0, err: ErrInvalid},
		"huge limit":     {tenant: "acme", limit: MaxListLimit + 1, err: ErrInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			page, err := s.ListStreamsPage(ctx, tc.tenant, tc.after, tc.limit)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, st := range page {
				names = append(names, st.Name)
			}
			if !slices.Equal(names, tc.want) {
				t.Fatalf("got %q, want %q", names, tc.want)
			}
		})
	}
}

func TestListTenantsPage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	for _, n := range []string{"zeta", "alpha", "alpha-2", "beta"} {
		if _, err := s.CreateTenant(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
	}
	cs := &countingScanner{sc: s.cat}
	page, err := tenantsPage(cs, "alpha", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 2 || page[0].Name != "alpha-2" || page[1].Name != "beta" || cs.read != 2 {
		t.Fatalf("page %+v after reading %d records", page, cs.read)
	}
	all, err := s.ListTenantsPage(ctx, "", MaxListLimit)
	if err != nil || len(all) != 4 || all[3].Name != "zeta" {
		t.Fatalf("all: %+v, %v", all, err)
	}
	s.Close()
	if _, err := s.ListTenantsPage(ctx, "", 10); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed store: %v", err)
	}
}

func TestStreamInfo(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	if _, err := s.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	created, err := s.CreateStream(ctx, "acme", "clicks", StreamConfig{Set: "web", Segments: 2})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.StreamInfo(ctx, "acme", "clicks")
	if err != nil || st.Incarnation() != created.Incarnation() || st.Config.Set != "web" || st.Segments != nil {
		t.Fatalf("%+v, %v", st, err)
	}
	if _, err := s.StreamInfo(ctx, "acme", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing stream: %v", err)
	}
}
