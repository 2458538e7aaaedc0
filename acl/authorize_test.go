package acl

import (
	"errors"
	"strings"
	"testing"
)

// policyEnv holds one principal per rule under test, each with only the
// grants named in its comment.
func policyEnv(t *testing.T) *env {
	e := newEnv(t)
	for _, g := range []struct {
		principal string
		action    Action
		resource  string
	}{
		{"root", Admin, "*"},
		{"reader-all", Read, "*"},
		{"tenant-admin", Admin, "acme"},
		{"tenant-reader", Read, "acme"},
		{"tenant-appender", Append, "acme"},
		{"stream-reader", Read, "acme/clicks"},
		{"stream-appender", Append, "acme/clicks"},
		{"stream-admin", Admin, "acme/clicks"},
		{"glob-reader", Read, "acme/click*"},
		{"glob-admin", Admin, "acme/tmp-*"},
		{"class-reader", Read, "acme/log-[0-9]"},
		{"group-reader", Read, "acme/set:web"},
		// The deprecated spelling of a stream-set grant still applies.
		{"group-admin", Admin, "acme/group:ops"},
		{"other-reader", Read, "other/clicks"},
		{"anonymous", Read, "public/feed"},
		{"public-peer", Read, "acme/views"}, // authenticated, no public grant
		{"multi", Read, "acme/a"},
		{"multi", Append, "acme/b"},
	} {
		if g.principal != Anonymous.Name {
			if _, err := e.s.GetPrincipal(g.principal); err != nil {
				e.principal(g.principal)
			}
		}
		e.grant(g.principal, g.action, g.resource)
	}
	e.principal("nobody")
	return e
}

var (
	server        = Resource{}
	acme          = Resource{Tenant: "acme"}
	other         = Resource{Tenant: "other"}
	public        = Resource{Tenant: "public"}
	acmeClicks    = Resource{Tenant: "acme", Stream: "clicks"}
	acmeClickLog  = Resource{Tenant: "acme", Stream: "clickstream"}
	acmeViews     = Resource{Tenant: "acme", Stream: "views"}
	acmeTmp       = Resource{Tenant: "acme", Stream: "tmp-1"}
	acmeLog3      = Resource{Tenant: "acme", Stream: "log-3"}
	acmeLog10     = Resource{Tenant: "acme", Stream: "log-10"}
	acmeWeb       = Resource{Tenant: "acme", Stream: "frontend", Set: "web"}
	acmeOps       = Resource{Tenant: "acme", Stream: "deploys", Set: "ops"}
	acmeOpsNew    = Resource{Tenant: "acme", Stream: "new-ops-stream", Set: "ops"}
	acmeUngrouped = Resource{Tenant: "acme", Stream: "frontend"}
	otherClicks   = Resource{Tenant: "other", Stream: "clicks"}
	otherWeb      = Resource{Tenant: "other", Stream: "frontend", Set: "web"}
	publicFeed    = Resource{Tenant: "public", Stream: "feed"}
	acmeA         = Resource{Tenant: "acme", Stream: "a"}
	acmeB         = Resource{Tenant: "acme", Stream: "b"}
)

func TestAuthorize(t *testing.T) {
	e := policyEnv(t)
	cases := map[string]struct {
		p     string
		a     Action
		r     Resource
		allow bool
		// listing marks an allow that comes from the tenant-listing rule,
		// not from a covering grant: Covers must then be false.
		listing bool
	}{
		// "*"
		"star admin: server":            {"root", Admin, server, true, false},
		"star admin: tenant":            {"root", Admin, acme, true, false},
		"star admin implies read":       {"root", Read, acmeClicks, true, false},
		"star admin implies append":     {"root", Append, otherClicks, true, false},
		"star read: server read":        {"reader-all", Read, server, true, false},
		"star read: any stream":         {"reader-all", Read, otherClicks, true, false},
		"star read: no append":          {"reader-all", Append, acmeClicks, false, false},
		"star read: no admin on server": {"reader-all", Admin, server, false, false},
		"star admin: unknown action":    {"root", Action("write"), acmeClicks, false, false},

		// tenant grants
		"tenant admin: tenant":             {"tenant-admin", Admin, acme, true, false},
		"tenant admin: create any stream":  {"tenant-admin", Admin, acmeViews, true, false},
		"tenant admin: read stream":        {"tenant-admin", Read, acmeClicks, true, false},
		"tenant admin: append stream":      {"tenant-admin", Append, acmeClicks, true, false},
		"tenant admin: not server":         {"tenant-admin", Admin, server, false, false},
		"tenant admin: not server read":    {"tenant-admin", Read, server, false, false},
		"tenant admin: not other tenant":   {"tenant-admin", Admin, other, false, false},
		"tenant admin: not other stream":   {"tenant-admin", Read, otherClicks, false, false},
		"tenant reader: tenant":            {"tenant-reader", Read, acme, true, false},
		"tenant reader: streams":           {"tenant-reader", Read, acmeViews, true, false},
		"tenant reader: grouped stream":    {"tenant-reader", Read, acmeWeb, true, false},
		"tenant reader: no append":         {"tenant-reader", Append, acmeViews, false, false},
		"tenant reader: no admin":          {"tenant-reader", Admin, acme, false, false},
		"tenant appender: append":          {"tenant-appender", Append, acmeViews, true, false},
		"tenant appender: no read stream":  {"tenant-appender", Read, acmeViews, false, false},
		"tenant appender: lists tenant":    {"tenant-appender", Read, acme, true, true},
		"tenant appender: no stream admin": {"tenant-appender", Admin, acmeViews, false, false},

		// stream grants
		"stream reader: read":                {"stream-reader", Read, acmeClicks, true, false},
		"stream reader: no append":           {"stream-reader", Append, acmeClicks, false, false},
		"stream reader: not prefix match":    {"stream-reader", Read, acmeClickLog, false, false},
		"stream reader: not sibling":         {"stream-reader", Read, acmeViews, false, false},
		"stream reader: lists tenant":        {"stream-reader", Read, acme, true, true},
		"stream reader: no tenant append":    {"stream-reader", Append, acme, false, false},
		"stream reader: no tenant admin":     {"stream-reader", Admin, acme, false, false},
		"stream reader: not server":          {"stream-reader", Read, server, false, false},
		"stream appender: append":            {"stream-appender", Append, acmeClicks, true, false},
		"stream appender: no read":           {"stream-appender", Read, acmeClicks, false, false},
		"stream appender: lists tenant":      {"stream-appender", Read, acme, true, true},
		"stream admin: implies read":         {"stream-admin", Read, acmeClicks, true, false},
		"stream admin: implies append":       {"stream-admin", Append, acmeClicks, true, false},
		"stream admin: admin on stream":      {"stream-admin", Admin, acmeClicks, true, false},
		"stream admin: no other stream":      {"stream-admin", Admin, acmeViews, false, false},
		"stream admin: no tenant admin":      {"stream-admin", Admin, acme, false, false},
		"multi: read a":                      {"multi", Read, acmeA, true, false},
		"multi: no append a":                 {"multi", Append, acmeA, false, false},
		"multi: append b":                    {"multi", Append, acmeB, true, false},
		"multi: no read b":                   {"multi", Read, acmeB, false, false},
		"cross-tenant: same stream name":     {"stream-reader", Read, otherClicks, false, false},
		"cross-tenant: other reader":         {"other-reader", Read, otherClicks, true, false},
		"cross-tenant: other reader no acme": {"other-reader", Read, acmeClicks, false, false},
		"cross-tenant: no listing of acme":   {"other-reader", Read, acme, false, false},
		"cross-tenant: lists own tenant":     {"other-reader", Read, other, true, true},

		// glob grants
		"glob: exact prefix":             {"glob-reader", Read, acmeClicks, true, false},
		"glob: longer name":              {"glob-reader", Read, acmeClickLog, true, false},
		"glob: no match":                 {"glob-reader", Read, acmeViews, false, false},
		"glob: no append":                {"glob-reader", Append, acmeClicks, false, false},
		"glob: not other tenant":         {"glob-reader", Read, otherClicks, false, false},
		"glob: lists tenant":             {"glob-reader", Read, acme, true, true},
		"glob admin: create matching":    {"glob-admin", Admin, acmeTmp, true, false},
		"glob admin: not create other":   {"glob-admin", Admin, acmeViews, false, false},
		"glob admin: not tenant admin":   {"glob-admin", Admin, acme, false, false},
		"glob admin: implies append":     {"glob-admin", Append, acmeTmp, true, false},
		"glob class: matches one digit":  {"class-reader", Read, acmeLog3, true, false},
		"glob class: not two digits":     {"class-reader", Read, acmeLog10, false, false},
		"glob: group does not matter":    {"glob-reader", Read, acmeWeb, false, false},
		"glob admin: not listing append": {"glob-admin", Append, acme, false, false},

		// group grants
		"group: member":                  {"group-reader", Read, acmeWeb, true, false},
		"group: ungrouped same name":     {"group-reader", Read, acmeUngrouped, false, false},
		"group: other group":             {"group-reader", Read, acmeOps, false, false},
		"group: same group other tenant": {"group-reader", Read, otherWeb, false, false},
		"group: no append":               {"group-reader", Append, acmeWeb, false, false},
		"group: lists tenant":            {"group-reader", Read, acme, true, true},
		"group admin: create in group":   {"group-admin", Admin, acmeOpsNew, true, false},
		"group admin: not outside group": {"group-admin", Admin, acmeViews, false, false},
		"group admin: not tenant admin":  {"group-admin", Admin, acme, false, false},

		// anonymous and principals without grants
		"anonymous: granted stream":           {"anonymous", Read, publicFeed, true, false},
		"anonymous: lists granted tenant":     {"anonymous", Read, public, true, true},
		"anonymous: no append":                {"anonymous", Append, publicFeed, false, false},
		"anonymous: ungranted tenant":         {"anonymous", Read, acme, false, false},
		"anonymous: ungranted stream":         {"anonymous", Read, acmeClicks, false, false},
		"anonymous: server":                   {"anonymous", Read, server, false, false},
		"authenticated: no anonymous grants":  {"public-peer", Read, publicFeed, false, false},
		"nobody: denied stream":               {"nobody", Read, acmeClicks, false, false},
		"nobody: denied tenant listing":       {"nobody", Read, acme, false, false},
		"nobody: denied server":               {"nobody", Read, server, false, false},
		"unknown principal: denied":           {"ghost", Read, acmeClicks, false, false},
		"empty principal: denied":             {"", Read, acmeClicks, false, false},
		"empty principal: no tenant listing":  {"", Read, acme, false, false},
		"listing rule: read only, not append": {"stream-admin", Append, acme, false, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := Principal{Name: c.p}
			err := e.s.Authorize(p, c.a, c.r)
			if c.allow && err != nil {
				t.Fatalf("Authorize(%s, %s, %+v) = %v, want allowed", c.p, c.a, c.r, err)
			}
			if !c.allow {
				if !errors.Is(err, ErrDenied) {
					t.Fatalf("Authorize(%s, %s, %+v) = %v, want ErrDenied", c.p, c.a, c.r, err)
				}
				if got := errors.Is(err, ErrUnauthenticated); got != (p == Anonymous) {
					t.Errorf("errors.Is(%v, ErrUnauthenticated) = %v, want %v", err, got, p == Anonymous)
				}
				if c.p != "" && !strings.Contains(err.Error(), c.p) {
					t.Errorf("denial %q does not name the principal", err)
				}
			}
			if got, want := e.s.Covers(p, c.a, c.r), c.allow && !c.listing; got != want {
				t.Errorf("Covers = %v, want %v", got, want)
			}
			if (AllowAll{}).Authorize(p, c.a, c.r) != nil {
				t.Error("AllowAll denied")
			}
		})
	}
}

func TestVisible(t *testing.T) {
	e := policyEnv(t)
	cases := map[string]struct {
		p      string
		tenant string
		want   bool
	}{
		"star sees every tenant":   {"root", "zzz", true},
		"star read sees tenants":   {"reader-all", "acme", true},
		"tenant grant":             {"tenant-reader", "acme", true},
		"tenant grant, other":      {"tenant-reader", "other", false},
		"stream grant":             {"stream-reader", "acme", true},
		"append-only stream grant": {"stream-appender", "acme", true},
		"glob grant":               {"glob-reader", "acme", true},
		"group grant":              {"group-reader", "acme", true},
		"other tenant only":        {"other-reader", "acme", false},
		"other tenant visible":     {"other-reader", "other", true},
		"anonymous public":         {"anonymous", "public", true},
		"anonymous acme":           {"anonymous", "acme", false},
		"no grants":                {"nobody", "acme", false},
		"server is not a tenant":   {"root", "", false},
		"unknown principal":        {"ghost", "acme", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := e.s.Visible(Principal{Name: c.p}, c.tenant); got != c.want {
				t.Fatalf("Visible(%s, %q) = %v, want %v", c.p, c.tenant, got, c.want)
			}
		})
	}
}

func TestDenialMessages(t *testing.T) {
	e := policyEnv(t)
	cases := map[string]struct {
		p    Principal
		a    Action
		r    Resource
		want []string
	}{
		"stream": {Principal{Name: "nobody"}, Append, acmeClicks,
			[]string{`principal "nobody"`, "append", "stream acme/clicks", `"acme/clicks"`}},
		"tenant": {Principal{Name: "nobody"}, Admin, acme, []string{"admin", "tenant acme", `"acme"`}},
		"server": {Principal{Name: "nobody"}, Admin, server, []string{"the server", `"*"`}},
		"group":  {Principal{Name: "nobody"}, Read, acmeWeb, []string{"stream acme/frontend (set web)"}},
		"anonymous": {Anonymous, Read, acmeClicks,
			[]string{"anonymous requests", "authenticate", "stream acme/clicks"}},
		"no principal": {Principal{}, Read, acmeClicks, []string{"no principal"}},
		"bad action":   {Principal{Name: "root"}, Action("write"), acmeClicks, []string{"unknown action", `"write"`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := e.s.Authorize(c.p, c.a, c.r)
			if err == nil {
				t.Fatal("allowed")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestGrantChangesTakeEffect checks that Authorize follows AddGrant,
// RemoveGrant and DeletePrincipal immediately.
func TestGrantChangesTakeEffect(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	alice := Principal{Name: "alice"}
	if e.s.Authorize(alice, Read, acmeClicks) == nil {
		t.Fatal("allowed before any grant")
	}
	g := e.grant("alice", Read, "acme/clicks")
	if err := e.s.Authorize(alice, Read, acmeClicks); err != nil {
		t.Fatalf("after grant: %v", err)
	}
	if err := e.s.RemoveGrant(g.ID); err != nil {
		t.Fatal(err)
	}
	if e.s.Authorize(alice, Read, acmeClicks) == nil || e.s.Visible(alice, "acme") {
		t.Fatal("allowed after RemoveGrant")
	}
	e.grant("alice", Admin, "acme")
	if err := e.s.DeletePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	if e.s.Authorize(alice, Read, acmeClicks) == nil {
		t.Fatal("allowed after DeletePrincipal")
	}
}

func BenchmarkAuthorize(b *testing.B) {
	cat := newMemKV()
	s, err := Open(cat)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreatePrincipal("bench"); err != nil {
		b.Fatal(err)
	}
	for _, r := range []string{"acme/a", "acme/b*", "acme/set:g", "other", "third/x"} {
		if _, err := s.AddGrant("bench", Read, r); err != nil {
			b.Fatal(err)
		}
	}
	p := Principal{Name: "bench"}
	r := Resource{Tenant: "acme", Stream: "beta", Set: "h"}
	b.ReportAllocs()
	for b.Loop() {
		if s.Authorize(p, Read, r) != nil {
			b.Fatal("denied")
		}
	}
}
