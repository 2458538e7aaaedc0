package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/silt-io/silt/core"
)

// The SDK follows next_page_token through a real server, page by page.
func TestListStreamsPagesRealServer(t *testing.T) {
	var requests atomic.Int64
	s := newServer(t, serverOptions{wrap: func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/v1/tenants/acme/streams" {
				requests.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	}})
	ctx := context.Background()
	if _, err := s.store.CreateTenant(ctx, "acme", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "b", "b-x", "c", "d"}
	for _, n := range want {
		if _, err := s.store.CreateStream(ctx, "acme", n, core.StreamConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	c := s.client(t)
	var got []string
	tok := ""
	for {
		page, next, err := c.ListStreamsPage(ctx, "acme", tok, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 2 {
			t.Fatalf("page of %d for limit 2", len(page))
		}
		for _, st := range page {
			got = append(got, st.Name)
		}
		if next == "" {
			break
		}
		tok = next
	}
	if !slices.Equal(got, want) || requests.Load() != 3 {
		t.Fatalf("listed %q in %d requests, want %q in 3", got, requests.Load(), want)
	}
	all, err := c.ListStreams(ctx, "acme")
	if err != nil || len(all) != len(want) {
		t.Fatalf("ListStreams: %d streams, %v", len(all), err)
	}
	if _, _, err := c.ListStreamsPage(ctx, "acme", "!!", 0); !IsInvalid(err) {
		t.Fatalf("bad token: %v", err)
	}
}

// pagingServer answers stream listings of n synthesized names in pages of
// MaxListPage, and counts the requests and the entries sent; tok, when
// set, replaces every next_page_token.
func pagingServer(t *testing.T, n int, tok string, requests, sent *atomic.Int64) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		start := 0
		if p := r.URL.Query().Get("page_token"); tok != "" && p == tok {
			start = MaxListPage // the page after the first, as a stuck server would say
		} else if p != "" {
			start, _ = strconv.Atoi(p)
		}
		var out struct {
			Streams []Stream `json:"streams"`
			Next    string   `json:"next_page_token,omitempty"`
		}
		end := min(n, start+MaxListPage)
		for i := start; i < end; i++ {
			out.Streams = append(out.Streams, Stream{Tenant: "big", Name: fmt.Sprintf("s%05d", i)})
		}
		sent.Add(int64(end - start))
		if end < n {
			out.Next = strconv.Itoa(end)
			if tok != "" {
				out.Next = tok
			}
		}
		json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestStreamsIterator(t *testing.T) {
	const n = 2500
	cases := map[string]struct {
		tok        string
		stopAfter  int // 0: iterate to the end
		wantNames  int
		wantReqs   int64
		wantSent   int64
		wantErrIs  error
		wantNoErrs bool
	}{
		"all pages":             {wantNames: n, wantReqs: 3, wantSent: n, wantNoErrs: true},
		"stopped in first page": {stopAfter: 10, wantNames: 10, wantReqs: 1, wantSent: MaxListPage, wantNoErrs: true},
		"stopped in second":     {stopAfter: 1001, wantNames: 1001, wantReqs: 2, wantSent: 2 * MaxListPage, wantNoErrs: true},
		"server repeats token":  {tok: "same", wantNames: 2 * MaxListPage, wantReqs: 2, wantSent: 2 * MaxListPage, wantErrIs: errTokenRepeated},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var requests, sent atomic.Int64
			ts := pagingServer(t, n, tc.tok, &requests, &sent)
			c, err := New(ts.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseIdleConnections()
			names := 0
			var gotErr error
			for st, err := range c.Streams(context.Background(), "big") {
				if err != nil {
					gotErr = err
					break
				}
				if want := fmt.Sprintf("s%05d", names); st.Name != want {
					t.Fatalf("entry %d is %q, want %q", names, st.Name, want)
				}
				names++
				if names == tc.stopAfter {
					break
				}
			}
			if tc.wantNoErrs && gotErr != nil || tc.wantErrIs != nil && !errors.Is(gotErr, tc.wantErrIs) {
				t.Fatalf("error %v, want %v", gotErr, tc.wantErrIs)
			}
			if names != tc.wantNames || requests.Load() != tc.wantReqs || sent.Load() != tc.wantSent {
				t.Fatalf("%d names in %d requests (%d sent), want %d in %d (%d)", names, requests.Load(), sent.Load(), tc.wantNames, tc.wantReqs, tc.wantSent)
			}
		})
	}
}
