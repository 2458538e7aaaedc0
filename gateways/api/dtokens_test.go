package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
)

// fakeTokens stands in for the WebHDFS head's token store (the real one
// is exercised through silt serve by conformance/suites/webhdfs.sh): the
// routes' access, id parsing and error mapping are what is tested here.
type fakeTokens struct{ tokens []DelegationToken }

func (f *fakeTokens) ListDelegationTokens(owner string) []DelegationToken {
	var out []DelegationToken
	for _, t := range f.tokens {
		if owner == "" || t.Owner == owner {
			out = append(out, t)
		}
	}
	return out
}

func (f *fakeTokens) CancelDelegationToken(id int32) error {
	for i, t := range f.tokens {
		if t.ID == id {
			f.tokens = append(f.tokens[:i], f.tokens[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("%w: delegation token %d", acl.ErrNotFound, id)
}

func TestDelegationTokenRoutes(t *testing.T) {
	e := newEnv(t)
	// Without a WebHDFS head there are none to list.
	e.must(http.StatusNotFound, req{method: "GET", path: "/v1/delegation-tokens"})

	at := time.Date(2026, 12, 2, 7, 0, 0, 0, time.UTC)
	ft := &fakeTokens{tokens: []DelegationToken{
		{ID: 3, Owner: "alice", Renewer: "yarn", Issued: at, Expires: at.Add(24 * time.Hour), MaxDate: at.Add(7 * 24 * time.Hour)},
		{ID: 5, Owner: "bob", Renewer: "bob", Issued: at, Expires: at.Add(time.Hour), MaxDate: at.Add(time.Hour)},
	}}
	e.srv.UseDelegationTokens(ft)
	var l delegationTokenList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/delegation-tokens"}).json(t, &l)
	if len(l.Tokens) != 2 || l.Tokens[0] != ft.tokens[0] {
		t.Fatalf("listed %+v", l.Tokens)
	}
	rep := e.must(http.StatusOK, req{method: "GET", path: "/v1/delegation-tokens?owner=alice"})
	if !strings.Contains(string(rep.body), `"max_date":"2026-12-09T07:00:00Z"`) || strings.Contains(string(rep.body), "bob") {
		t.Fatalf("alice's tokens: %s", rep.body)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/delegation-tokens?owner=nobody"}).json(t, &l)
	if l.Tokens == nil || len(l.Tokens) != 0 {
		t.Fatalf("nobody's tokens: %+v, want an empty list", l.Tokens)
	}

	// Admin only: a reader of everything may neither list nor cancel.
	reader := e.user("reader", "read:*")
	e.must(http.StatusForbidden, req{method: "GET", path: "/v1/delegation-tokens", token: reader})
	e.must(http.StatusForbidden, req{method: "DELETE", path: "/v1/delegation-tokens/3", token: reader})

	for _, bad := range []string{"x", "0", "-1", "2147483648"} {
		e.must(http.StatusBadRequest, req{method: "DELETE", path: "/v1/delegation-tokens/" + bad})
	}
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/delegation-tokens/3"})
	e.must(http.StatusNotFound, req{method: "DELETE", path: "/v1/delegation-tokens/3"})
	if got := ft.ListDelegationTokens(""); len(got) != 1 || got[0].ID != 5 {
		t.Fatalf("left %+v", got)
	}
	if !errors.Is(ft.CancelDelegationToken(9), acl.ErrNotFound) {
		t.Fatal("fake store does not report unknown ids")
	}
}
