package api

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

// Paginated listings of tenants and streams.
//
// A request reads the catalog from the name its page_token resumes after,
// and at most maxListScan records, so it costs the page it returns and
// never the size of the node. Listings are filtered by the caller's
// grants; a caller who may see few of many streams therefore gets short,
// even empty, pages that still carry a next_page_token — the end is where
// the token is absent, as in Google's AIP-158, not where a page is short.

const (
	// maxListPage is the largest and the default page: S3's and HDFS's
	// listing page too.
	maxListPage = 1000
	// maxListScan bounds the records one request reads when most are
	// filtered out.
	maxListScan = 10 * maxListPage
)

// pageLister is the store's listing seam (tests count what a page reads).
type pageLister interface {
	ListTenantsPage(ctx context.Context, after string, limit int) ([]core.Tenant, error)
	ListStreamsPage(ctx context.Context, tenant, after string, limit int) ([]core.Stream, error)
}

// listParams reads limit and page_token. A token is the base64url of the
// name the next page starts after, a name the caller was shown; valid
// names are checked so that a forged token cannot reach the catalog as an
// arbitrary key. The rare token that must resume after a name the caller
// may not see (maxListScan names read and none shown) is sealed instead,
// so that it does not tell that name: it starts with '~' (outside the
// base64url alphabet) and opens only in the process that issued it.
func (s *Server) listParams(q url.Values, valid func(string) error) (after string, limit int, err error) {
	limit = maxListPage
	if v := q.Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > maxListPage {
			return "", 0, badRequest("limit %q: want 1 to %d", v, maxListPage)
		}
		limit = n
	}
	tok := q.Get("page_token")
	if tok == "" {
		return "", limit, nil
	}
	var b []byte
	var derr error
	if sealed, ok := strings.CutPrefix(tok, "~"); ok {
		b, derr = s.openToken(sealed)
	} else {
		b, derr = base64.RawURLEncoding.DecodeString(tok)
	}
	if derr != nil || valid(string(b)) != nil {
		return "", 0, badRequest("page_token %q is not one this server issued (a token that starts with '~' lasts until the server restarts): list again from the start", tok)
	}
	return string(b), limit, nil
}

func (s *Server) pageToken(name string, hidden bool) string {
	switch {
	case name == "":
		return ""
	case hidden:
		nonce := make([]byte, s.pageSeal.NonceSize())
		rand.Read(nonce)
		return "~" + base64.RawURLEncoding.EncodeToString(s.pageSeal.Seal(nonce, nonce, []byte(name), nil))
	}
	return base64.RawURLEncoding.EncodeToString([]byte(name))
}

func (s *Server) openToken(tok string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, err
	}
	n := s.pageSeal.NonceSize()
	if len(b) < n {
		return nil, errors.New("short sealed token")
	}
	return s.pageSeal.Open(nil, b[:n], b[n:], nil)
}

// newPageSeal returns the AEAD of sealed page tokens, under a key of this
// process.
func newPageSeal() (cipher.AEAD, error) {
	key := make([]byte, 32)
	rand.Read(key)
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

// page collects up to limit items that keep accepts, reading list from
// after on. next is the name to resume after, "" at the end of the
// listing; hidden is true when it is a name keep refused. One item past a
// full page is read to learn whether the listing ends there, so an
// unfiltered listing that fits a page needs no second request. A page
// resumes after the last item it shows, even when hidden items were read
// beyond it (the next request reads those again, within its own bound),
// so that only a request that showed nothing needs a hidden position.
func page[T any](list func(after string, n int) ([]T, error), name func(T) string, keep func(T) bool, after string, limit int) (out []T, next string, hidden bool, err error) {
	scanned := 0
	resume := func() (string, bool) {
		if len(out) > 0 {
			return name(out[len(out)-1]), false
		}
		return after, true
	}
	for {
		n := min(limit+1, maxListScan-scanned)
		items, err := list(after, n)
		if err != nil {
			return nil, "", false, err
		}
		for _, it := range items {
			if len(out) == limit {
				next, hidden = resume()
				return out, next, hidden, nil
			}
			after = name(it)
			if keep(it) {
				out = append(out, it)
			}
		}
		scanned += len(items)
		if len(items) < n {
			return out, "", false, nil
		}
		if scanned >= maxListScan {
			next, hidden = resume()
			return out, next, hidden, nil
		}
	}
}

type tenantList struct {
	Tenants       []tenantJSON `json:"tenants"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

func (s *Server) listTenants(c *call) (op, error) {
	after, limit, err := s.listParams(c.r.URL.Query(), names.Tenant)
	if err != nil {
		return op{}, err
	}
	return op{run: func() error {
		ctx := c.r.Context()
		list := func(after string, n int) ([]core.Tenant, error) { return s.list.ListTenantsPage(ctx, after, n) }
		name := func(t core.Tenant) string { return t.Name }
		if r, ok := s.auth.Authz.(acl.Ranger); ok && !c.superuser {
			if tenants, all := r.VisibleTenants(c.principal); !all {
				ranges := make([]acl.NameRange, len(tenants))
				for i, t := range tenants {
					ranges[i] = acl.NameRange{From: t, To: t + "\x00"}
				}
				list = inRanges(list, name, ranges)
			}
		}
		ts, next, hidden, err := page(
			list,
			name,
			func(t core.Tenant) bool { return c.visible(t.Name) },
			after, limit)
		if err != nil {
			return err
		}
		out := tenantList{Tenants: make([]tenantJSON, 0, len(ts)), NextPageToken: s.pageToken(next, hidden)}
		for _, t := range ts {
			out.Tenants = append(out.Tenants, toTenantJSON(t))
		}
		writeJSON(c.w, http.StatusOK, out)
		return nil
	}}, nil
}

type streamList struct {
	Streams       []streamJSON `json:"streams"`
	NextPageToken string       `json:"next_page_token,omitempty"`
}

// listStreams needs read on the tenant, which acl allows to anyone holding
// a grant inside it, and then shows only the streams the caller may read.
func (s *Server) listStreams(c *call) (op, error) {
	tenant := c.r.PathValue("tenant")
	after, limit, err := s.listParams(c.r.URL.Query(), names.Stream)
	if err != nil {
		return op{}, err
	}
	return op{res: acl.Resource{Tenant: tenant}, run: func() error {
		ctx := c.r.Context()
		list := func(after string, n int) ([]core.Stream, error) { return s.list.ListStreamsPage(ctx, tenant, after, n) }
		name := func(st core.Stream) string { return st.Name }
		if r, ok := s.auth.Authz.(acl.Ranger); ok && !c.superuser {
			if ranges, all := r.StreamRanges(c.principal, acl.Read, tenant); !all {
				list = inRanges(list, name, ranges)
			}
		}
		ss, next, hidden, err := page(
			list,
			name,
			func(st core.Stream) bool {
				return c.covers(acl.Read, acl.Resource{Tenant: tenant, Stream: st.Name, Set: st.Config.Set})
			},
			after, limit)
		if err != nil {
			return err
		}
		out := streamList{Streams: make([]streamJSON, 0, len(ss)), NextPageToken: s.pageToken(next, hidden)}
		for _, st := range ss {
			out.Streams = append(out.Streams, toStreamJSON(st))
		}
		writeJSON(c.w, http.StatusOK, out)
		return nil
	}}, nil
}

// inRanges narrows list to the names in ranges (sorted by From), reading
// each range from its start: a caller granted a few streams of a large
// tenant reads those, not the tenant. A page is short only once every
// range is exhausted, as page expects of list.
func inRanges[T any](list func(after string, n int) ([]T, error), name func(T) string, ranges []acl.NameRange) func(after string, n int) ([]T, error) {
	return func(after string, n int) ([]T, error) {
		var out []T
		for _, rg := range ranges {
			if rg.To != "" && rg.To <= after {
				continue
			}
			from := max(after, names.Before(rg.From))
			for len(out) < n {
				want := n - len(out)
				if rg.To == rg.From+"\x00" {
					want = 1 // an exact name
				}
				items, err := list(from, want)
				if err != nil {
					return nil, err
				}
				done := len(items) < want
				for _, it := range items {
					if rg.To != "" && name(it) >= rg.To {
						done = true
						break
					}
					out = append(out, it)
					from = name(it)
				}
				if done {
					break
				}
			}
			after = max(after, from)
			if len(out) == n {
				return out, nil
			}
		}
		return out, nil
	}
}
