package api

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

// countingLister serves a tenant of n synthesized streams, counting the
// records each request reads: creating 10,000 streams through core would
// open 10,000 sets of segment logs, and the listing only needs names.
type countingLister struct {
	pageLister
	tenant string
	names  []string
	read   int
}

func (c *countingLister) ListStreamsPage(ctx context.Context, tenant, after string, limit int) ([]core.Stream, error) {
	if tenant != c.tenant {
		return c.pageLister.ListStreamsPage(ctx, tenant, after, limit)
	}
	i := sort.SearchStrings(c.names, after)
	if i < len(c.names) && c.names[i] == after {
		i++
	}
	var out []core.Stream
	for ; i < len(c.names) && len(out) < limit; i++ {
		out = append(out, core.Stream{Tenant: tenant, Name: c.names[i], Config: core.StreamConfig{Encoding: core.EncodingLines, Segments: 1}})
	}
	c.read += len(out)
	return out, nil
}

// listAll pages through path with the given limit and returns the names
// listed and the most records one request read.
func listAll(t *testing.T, e *env, cl *countingLister, token, path string, limit int) (names []string, requests, maxRead int) {
	t.Helper()
	tok := ""
	for {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if tok != "" {
			q.Set("page_token", tok)
		}
		cl.read = 0
		var sl struct {
			Streams []struct {
				Name string `json:"name"`
			} `json:"streams"`
			Next string `json:"next_page_token"`
		}
		e.must(http.StatusOK, req{method: "GET", path: path + "?" + q.Encode(), token: token}).json(t, &sl)
		requests++
		maxRead = max(maxRead, cl.read)
		if len(sl.Streams) > limit {
			t.Fatalf("page of %d for limit %d", len(sl.Streams), limit)
		}
		for _, s := range sl.Streams {
			names = append(names, s.Name)
		}
		if sl.Next == "" {
			return names, requests, maxRead
		}
		if requests > 1000 {
			t.Fatalf("still paging after %d requests", requests)
		}
		tok = sl.Next
	}
}

// A tenant of 10,000 streams lists page by page, each request reading the
// records of its page and one more; a caller whose grants no name range
// bounds reads at most maxListScan records a request, and one whose grants
// name its streams reads only those. Before pagination every request read the
// whole tenant.
func TestListStreamsPagesCostThePage(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.CreateTenant(context.Background(), "big", nil); err != nil {
		t.Fatal(err)
	}
	const n = 10_000
	cl := &countingLister{pageLister: e.store, tenant: "big"}
	for i := range n {
		cl.names = append(cl.names, fmt.Sprintf("s%05d", i))
	}
	e.srv.list = cl

	cases := map[string]struct {
		token     func() string
		limit     int
		want      []string
		maxRead   int
		wantPages int
	}{
		"admin, pages of 500": {
			token: func() string { return e.root }, limit: 500, want: cl.names,
			maxRead: 501, wantPages: n / 500,
		},
		"admin, default page": {
			token: func() string { return e.root }, limit: maxListPage, want: cl.names,
			maxRead: maxListPage + 1, wantPages: n / maxListPage,
		},
		"reader of ten streams": {
			// Its grant bounds the names it can see: only those are read.
			token: func() string { return e.user("tail", "read:big/s0999*") }, limit: 100,
			want: cl.names[n-10:], maxRead: 10 + 1, wantPages: 1,
		},
		"reader of a pattern no range bounds": {
			// Every tenth stream: read and filtered, at most maxListScan
			// names a request.
			token: func() string { return e.user("nines", "read:big/*9") }, limit: 100,
			want: everyTenth(cl.names), maxRead: maxListScan, wantPages: 10,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			names, pages, maxRead := listAll(t, e, cl, tc.token(), "/v1/tenants/big/streams", tc.limit)
			if !slices.Equal(names, tc.want) {
				t.Fatalf("listed %d names, want %d", len(names), len(tc.want))
			}
			if maxRead > tc.maxRead {
				t.Fatalf("a request read %d records, want at most %d", maxRead, tc.maxRead)
			}
			if pages != tc.wantPages {
				t.Fatalf("%d requests, want %d", pages, tc.wantPages)
			}
		})
	}
}

func TestListPaging(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, tn := range []string{"acme", "beta", "gamma"} {
		if _, err := e.store.CreateTenant(ctx, tn, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"c", "a", "b.x", "b-x", "b"} {
		if _, err := e.store.CreateStream(ctx, "acme", s, core.StreamConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	tok := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := map[string]struct {
		path     string
		status   int
		want     []string
		wantNext string
	}{
		"streams, all":            {path: "/v1/tenants/acme/streams", status: 200, want: []string{"a", "b", "b-x", "b.x", "c"}},
		"streams, first two":      {path: "/v1/tenants/acme/streams?limit=2", status: 200, want: []string{"a", "b"}, wantNext: tok("b")},
		"streams, next two":       {path: "/v1/tenants/acme/streams?limit=2&page_token=" + tok("b"), status: 200, want: []string{"b-x", "b.x"}, wantNext: tok("b.x")},
		"streams, exactly to end": {path: "/v1/tenants/acme/streams?limit=1&page_token=" + tok("b.x"), status: 200, want: []string{"c"}},
		"streams, past the end":   {path: "/v1/tenants/acme/streams?page_token=" + tok("c"), status: 200, want: []string{}},
		"tenants, first two":      {path: "/v1/tenants?limit=2", status: 200, want: []string{"acme", "beta"}, wantNext: tok("beta")},
		"tenants, the rest":       {path: "/v1/tenants?page_token=" + tok("beta"), status: 200, want: []string{"gamma"}},
		"limit 0":                 {path: "/v1/tenants/acme/streams?limit=0", status: 400},
		"limit over the maximum":  {path: "/v1/tenants/acme/streams?limit=1001", status: 400},
		"limit not a number":      {path: "/v1/tenants?limit=ten", status: 400},
		"token not base64":        {path: "/v1/tenants/acme/streams?page_token=%21%21", status: 400},
		"token not a stream name": {path: "/v1/tenants/acme/streams?page_token=" + tok("a/b"), status: 400},
		"token not a tenant name": {path: "/v1/tenants?page_token=" + tok("Acme"), status: 400},
		"no such tenant":          {path: "/v1/tenants/nosuch/streams?limit=5", status: 404},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rep := e.must(tc.status, req{method: "GET", path: tc.path})
			if tc.status != http.StatusOK {
				if tc.status == http.StatusBadRequest && rep.errCode(t) != "invalid_argument" {
					t.Fatalf("code %q", rep.errCode(t))
				}
				return
			}
			var body struct {
				Streams []struct{ Name string } `json:"streams"`
				Tenants []struct{ Name string } `json:"tenants"`
				Next    string                  `json:"next_page_token"`
			}
			rep.json(t, &body)
			got := []string{}
			for _, s := range body.Streams {
				got = append(got, s.Name)
			}
			for _, s := range body.Tenants {
				got = append(got, s.Name)
			}
			if !slices.Equal(got, tc.want) || body.Next != tc.wantNext {
				t.Fatalf("got %q next %q, want %q next %q", got, body.Next, tc.want, tc.wantNext)
			}
		})
	}
}

func everyTenth(names []string) []string {
	var out []string
	for i := 9; i < len(names); i += 10 {
		out = append(out, names[i])
	}
	return out
}

// inRanges returns what listing everything and keeping the names in the
// ranges returns, page by page, wherever the pages start.
func TestInRanges(t *testing.T) {
	names := []string{"a", "a-1", "a.1", "a0", "a1", "a10", "a2", "b", "b0", "c"}
	list := func(after string, n int) ([]string, error) {
		i := sort.SearchStrings(names, after)
		if i < len(names) && names[i] == after {
			i++
		}
		return names[i:min(len(names), i+n)], nil
	}
	id := func(s string) string { return s }
	exact := func(s string) acl.NameRange { return acl.NameRange{From: s, To: s + "\x00"} }
	cases := map[string][]acl.NameRange{
		"exact names":          {exact("a0"), exact("a2"), exact("nope"), exact("c")},
		"a prefix":             {{From: "a1", To: "a2"}},
		"overlapping":          {{From: "a", To: "b"}, exact("a1"), {From: "a1", To: "a2"}, exact("b0")},
		"open upper bound":     {{From: "b"}},
		"nothing":              nil,
		"range past the names": {{From: "d", To: "e"}},
	}
	for name, ranges := range cases {
		t.Run(name, func(t *testing.T) {
			// Sorted by From, as acl.Ranger returns them.
			slices.SortFunc(ranges, func(a, b acl.NameRange) int { return strings.Compare(a.From, b.From) })
			in := func(s string) bool {
				for _, r := range ranges {
					if s >= r.From && (r.To == "" || s < r.To) {
						return true
					}
				}
				return false
			}
			var want []string
			for _, n := range names {
				if in(n) {
					want = append(want, n)
				}
			}
			f := inRanges(list, id, ranges)
			for _, n := range []int{1, 2, 3, 100} {
				var got []string
				after := ""
				for {
					page, err := f(after, n)
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, page...)
					if len(page) < n {
						break
					}
					after = page[len(page)-1]
				}
				if !slices.Equal(got, want) {
					t.Fatalf("pages of %d: %q, want %q", n, got, want)
				}
			}
		})
	}
}

// A caller's tenant listing pages through the tenants it holds grants in.
func TestListTenantsOfACaller(t *testing.T) {
	e := newEnv(t)
	for _, tn := range []string{"acme", "beta", "gamma", "delta"} {
		if _, err := e.store.CreateTenant(context.Background(), tn, nil); err != nil {
			t.Fatal(err)
		}
	}
	tok := e.user("ops", "read:gamma/x", "append:beta", "read:nosuch")
	var got []string
	next := ""
	for range 5 {
		path := "/v1/tenants?limit=1"
		if next != "" {
			path += "&page_token=" + next
		}
		var tl struct {
			Tenants []struct{ Name string } `json:"tenants"`
			Next    string                  `json:"next_page_token"`
		}
		e.must(http.StatusOK, req{method: "GET", path: path, token: tok}).json(t, &tl)
		for _, tn := range tl.Tenants {
			got = append(got, tn.Name)
		}
		if next = tl.Next; next == "" {
			break
		}
	}
	if !slices.Equal(got, []string{"beta", "gamma"}) || next != "" {
		t.Fatalf("listed %q (next %q)", got, next)
	}
}

// A request that reads maxListScan names and may show none resumes from a
// name the caller may not see: its token is sealed, so that it does not
// tell the name, and opens only in the server that issued it.
func TestListTokenHidesUnseenNames(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.CreateTenant(context.Background(), "big", nil); err != nil {
		t.Fatal(err)
	}
	cl := &countingLister{pageLister: e.store, tenant: "big"}
	for i := range 2 * maxListScan {
		cl.names = append(cl.names, fmt.Sprintf("s%05d", i))
	}
	e.srv.list = cl
	tok := e.user("none", "read:big/*z") // a glob no range bounds, matching nothing
	next, requests := "", 0
	for {
		path := "/v1/tenants/big/streams"
		if next != "" {
			path += "?page_token=" + url.QueryEscape(next)
		}
		var sl struct {
			Streams []struct{ Name string } `json:"streams"`
			Next    string                  `json:"next_page_token"`
		}
		e.must(http.StatusOK, req{method: "GET", path: path, token: tok}).json(t, &sl)
		requests++
		if len(sl.Streams) != 0 {
			t.Fatalf("shown %v", sl.Streams)
		}
		if sl.Next == "" {
			break
		}
		if !strings.HasPrefix(sl.Next, "~") || strings.Contains(sl.Next, base64.RawURLEncoding.EncodeToString([]byte("s0"))) {
			t.Fatalf("token %q is not sealed", sl.Next)
		}
		if b, err := base64.RawURLEncoding.DecodeString(sl.Next[1:]); err == nil && strings.Contains(string(b), "s0") {
			t.Fatalf("token %q holds a name", sl.Next)
		}
		next = sl.Next
		if requests > 5 {
			t.Fatal("no end")
		}
	}
	if requests != 3 {
		t.Fatalf("%d requests, want 3", requests)
	}
	// Another server (as after a restart) cannot open it.
	other := newEnv(t)
	if _, err := other.store.CreateTenant(context.Background(), "big", nil); err != nil {
		t.Fatal(err)
	}
	rep := other.must(http.StatusBadRequest, req{method: "GET", path: "/v1/tenants/big/streams?page_token=" + url.QueryEscape(next)})
	if !strings.Contains(string(rep.body), "list again from the start") {
		t.Fatalf("answer %s", rep.body)
	}
}
