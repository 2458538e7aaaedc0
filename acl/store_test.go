package acl

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestPrincipalLifecycle(t *testing.T) {
	e := newEnv(t)
	info, err := e.s.CreatePrincipal("bob")
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "bob" || !info.Created.Equal(e.clk.now()) {
		t.Fatalf("CreatePrincipal = %+v", info)
	}
	if _, err := e.s.CreatePrincipal("bob"); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate CreatePrincipal = %v, want ErrExists", err)
	}
	e.principal("alice")
	e.principal("carol@example.com")
	got, err := e.s.GetPrincipal("bob")
	if err != nil || got != info {
		t.Fatalf("GetPrincipal = %+v, %v; want %+v", got, err, info)
	}
	list, _ := e.s.ListPrincipals()
	var names []string
	for _, p := range list {
		names = append(names, p.Name)
	}
	if want := []string{"alice", "bob", "carol@example.com"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("ListPrincipals = %v, want %v", names, want)
	}
	if err := e.s.DeletePrincipal("bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.GetPrincipal("bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetPrincipal after delete = %v, want ErrNotFound", err)
	}
	if err := e.s.DeletePrincipal("bob"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second DeletePrincipal = %v, want ErrNotFound", err)
	}
	if _, err := e.s.GetPrincipal("anonymous"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "built in") {
		t.Fatalf("GetPrincipal(anonymous) = %v, want ErrNotFound explaining it is built in", err)
	}
}

func TestDeletePrincipalRemovesTokensAndGrants(t *testing.T) {
	e := newEnv(t)
	e.principal("bob")
	e.principal("keep")
	secret, _ := e.token("bob", 0)
	keepSecret, _ := e.token("keep", 0)
	e.grant("bob", Admin, "acme")
	e.grant("bob", Read, "other/x")
	kept := e.grant("keep", Read, "acme")
	if err := e.s.DeletePrincipal("bob"); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		if _, err := e.s.Authenticate(secret); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("%s: token of deleted principal: %v, want ErrUnauthenticated", when, err)
		}
		if _, err := e.s.Authenticate(keepSecret); err != nil {
			t.Errorf("%s: other principal's token: %v", when, err)
		}
		gs, _ := e.s.ListGrants("")
		if len(gs) != 1 || gs[0] != kept {
			t.Errorf("%s: grants = %+v, want only %+v", when, gs, kept)
		}
		// A principal created again under the same name starts empty.
		if e.s.Authorize(Principal{Name: "bob"}, Read, acme) == nil {
			t.Errorf("%s: deleted principal's grant still effective", when)
		}
	}
	check("before reopen")
	e.reopen()
	check("after reopen")
	e.principal("bob")
	check("after re-create")
	if ts, _ := e.s.ListTokens("bob"); len(ts) != 0 {
		t.Errorf("re-created principal has tokens %+v", ts)
	}
	// keep's principal, token and grant, and the re-created bob.
	if n := countKeys(t, e, "acl/"); n != 4 {
		t.Errorf("%d acl keys left, want 4", n)
	}
}

func countKeys(t *testing.T, e *env, prefix string) int {
	t.Helper()
	n := 0
	if err := e.cat.Scan([]byte(prefix), nil, func(k, v []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGrants(t *testing.T) {
	e := newEnv(t)
	e.principal("zed")
	e.principal("amy")
	g1 := e.grant("zed", Read, "acme/b")
	g2 := e.grant("amy", Append, "acme/z")
	g3 := e.grant("amy", Read, "acme/a*")
	g4 := e.grant("anonymous", Read, "public") // anonymous need not be created
	g5 := e.grant("amy", Admin, "acme/a*")
	if g1.Principal != "zed" || g1.Action != Read || g1.Resource != "acme/b" || g1.ID == "" || !g1.Created.Equal(e.clk.now()) {
		t.Fatalf("AddGrant = %+v", g1)
	}

	dup, err := e.s.AddGrant("amy", Read, "acme/a*")
	if !errors.Is(err, ErrExists) || dup != g3 {
		t.Fatalf("duplicate AddGrant = %+v, %v; want %+v and ErrExists", dup, err, g3)
	}

	all, _ := e.s.ListGrants("")
	if want := []Grant{g5, g3, g2, g4, g1}; !reflect.DeepEqual(all, want) {
		t.Fatalf("ListGrants(\"\") =\n%+v\nwant (by principal, resource, action)\n%+v", all, want)
	}
	amy, _ := e.s.ListGrants("amy")
	if want := []Grant{g5, g3, g2}; !reflect.DeepEqual(amy, want) {
		t.Fatalf("ListGrants(amy) = %+v, want %+v", amy, want)
	}
	anon, err := e.s.ListGrants("anonymous")
	if err != nil || !reflect.DeepEqual(anon, []Grant{g4}) {
		t.Fatalf("ListGrants(anonymous) = %+v, %v", anon, err)
	}
	if none, err := e.s.ListGrants("nobody-here"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ListGrants(unknown) = %+v, %v; want ErrNotFound", none, err)
	}

	if err := e.s.RemoveGrant(g3.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.s.RemoveGrant(g3.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second RemoveGrant = %v, want ErrNotFound", err)
	}
	amy, _ = e.s.ListGrants("amy")
	if want := []Grant{g5, g2}; !reflect.DeepEqual(amy, want) {
		t.Fatalf("after remove: %+v, want %+v", amy, want)
	}
	// The removed read grant is gone but admin on the same glob still
	// implies read.
	if err := e.s.Authorize(Principal{Name: "amy"}, Read, Resource{Tenant: "acme", Stream: "ab"}); err != nil {
		t.Fatal(err)
	}
}

func TestPersistenceAcrossReopen(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.principal("bob")
	aliceSecret, _ := e.token("alice", 0)
	bobSecret, _ := e.token("bob", time.Hour)
	revokedSecret, revoked := e.token("bob", 0)
	if err := e.s.RevokeToken("bob", revoked.ID); err != nil {
		t.Fatal(err)
	}
	e.grant("alice", Admin, "acme")
	e.grant("bob", Read, "acme/click*")
	e.grant("bob", Append, "acme/group:web")
	removed := e.grant("bob", Read, "other")
	if err := e.s.RemoveGrant(removed.ID); err != nil {
		t.Fatal(err)
	}
	e.grant("anonymous", Read, "public/feed")
	if _, err := e.s.EnsureRoot("root", strings.Repeat("r", 40)); err != nil {
		t.Fatal(err)
	}
	e.principal("gone")
	e.token("gone", 0)
	e.grant("gone", Read, "*")
	if err := e.s.DeletePrincipal("gone"); err != nil {
		t.Fatal(err)
	}

	before := takeSnapshot(t, e.s)
	decisions := func() []bool {
		var out []bool
		for _, p := range []string{"alice", "bob", "anonymous", "root", "gone"} {
			for _, a := range []Action{Read, Append, Admin} {
				for _, r := range []Resource{server, acme, acmeClicks, acmeWeb, acmeViews, publicFeed, otherClicks} {
					out = append(out, e.s.Authorize(Principal{Name: p}, a, r) == nil)
				}
			}
		}
		return out
	}
	wantDecisions := decisions()

	e.reopen()
	if after := takeSnapshot(t, e.s); !reflect.DeepEqual(before, after) {
		t.Fatalf("state changed across reopen:\nbefore %+v\nafter  %+v", before, after)
	}
	if !reflect.DeepEqual(decisions(), wantDecisions) {
		t.Fatal("authorization decisions changed across reopen")
	}
	for secret, want := range map[string]string{aliceSecret: "alice", bobSecret: "bob", strings.Repeat("r", 40): "root"} {
		if p, err := e.s.Authenticate(secret); err != nil || p.Name != want {
			t.Errorf("Authenticate after reopen = %v, %v; want %s", p, err, want)
		}
	}
	if _, err := e.s.Authenticate(revokedSecret); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("revoked token after reopen: %v", err)
	}
	e.clk.advance(time.Hour)
	if _, err := e.s.Authenticate(bobSecret); !errors.Is(err, ErrUnauthenticated) {
		t.Errorf("expiry lost across reopen: %v", err)
	}
}

// TestKeyLayout pins the on-disk layout: everything under "acl/", tokens
// stored only as the SHA-256 of their secret.
func TestKeyLayout(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	secret, info := e.token("alice", 0)
	g := e.grant("alice", Read, "acme")
	keys := map[string]string{}
	if err := e.cat.Scan(nil, nil, func(k, v []byte) error {
		keys[string(k)] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	h := hashSecret(secret)
	tokenKey := "acl/t/" + hex.EncodeToString(h[:])
	for _, k := range []string{"acl/p/alice", "acl/g/" + g.ID, tokenKey} {
		if _, ok := keys[k]; !ok {
			t.Errorf("key %s missing; have %v", k, keys)
		}
	}
	if len(keys) != 3 {
		t.Errorf("keys = %v, want exactly 3", keys)
	}
	for k, v := range keys {
		if strings.Contains(k, secret) || strings.Contains(v, secret) || strings.Contains(v, secret[len(tokenPrefix):]) {
			t.Errorf("secret stored in %s", k)
		}
	}
	if !strings.Contains(keys[tokenKey], info.ID) {
		t.Errorf("token record %s lacks its ID", keys[tokenKey])
	}
}

func TestEnsureRoot(t *testing.T) {
	e := newEnv(t)
	secret := "operator-chosen-secret-0123456789abcdef"
	created, err := e.s.EnsureRoot("root", secret)
	if err != nil || !created {
		t.Fatalf("first EnsureRoot = %v, %v; want created", created, err)
	}
	p, err := e.s.Authenticate(secret)
	if err != nil || p.Name != "root" {
		t.Fatalf("Authenticate(root secret) = %v, %v", p, err)
	}
	if err := e.s.Authorize(p, Admin, server); err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, e.s)
	for _, s := range []string{secret, ""} {
		created, err = e.s.EnsureRoot("root", s)
		if err != nil || created {
			t.Fatalf("repeated EnsureRoot(%q) = %v, %v; want no change", s, created, err)
		}
	}
	e.reopen()
	created, err = e.s.EnsureRoot("root", secret)
	if err != nil || created {
		t.Fatalf("EnsureRoot after reopen = %v, %v", created, err)
	}
	if after := takeSnapshot(t, e.s); !reflect.DeepEqual(before, after) {
		t.Fatalf("idempotent EnsureRoot changed state:\n%+v\n%+v", before, after)
	}
	if ts := before.Tokens["root"]; len(ts) != 1 || ts[0].Label != rootTokenLabel || !ts[0].Expires.IsZero() {
		t.Fatalf("root tokens = %+v", ts)
	}

	// A new operator secret adds a token; the old one keeps working until
	// revoked, as rotating a secret needs.
	secret2 := strings.Repeat("x", minOperatorSecretLen)
	if _, err := e.s.EnsureRoot("root", secret2); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secret, secret2} {
		if _, err := e.s.Authenticate(s); err != nil {
			t.Errorf("Authenticate after rotation: %v", err)
		}
	}

	// Another principal may not claim a secret that is already in use.
	if _, err := e.s.EnsureRoot("other-root", secret); !errors.Is(err, ErrExists) {
		t.Fatalf("EnsureRoot with a taken secret = %v, want ErrExists", err)
	}
	if _, err := e.s.GetPrincipal("other-root"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("refused EnsureRoot left principal behind: %v", err)
	}

	// An existing principal without admin gets the grant restored.
	gs, _ := e.s.ListGrants("root")
	if err := e.s.RemoveGrant(gs[0].ID); err != nil {
		t.Fatal(err)
	}
	if created, err := e.s.EnsureRoot("root", ""); err != nil || created {
		t.Fatalf("EnsureRoot restoring grant = %v, %v", created, err)
	}
	if err := e.s.Authorize(Principal{Name: "root"}, Admin, server); err != nil {
		t.Fatalf("admin grant not restored: %v", err)
	}
}

// TestFailedCommitChangesNothing checks the commit-first rule: when the KV
// refuses a change, the in-memory state (and so every decision) is as
// before, and so is what a restart would load.
func TestFailedCommitChangesNothing(t *testing.T) {
	kv := newMemKV()
	s, err := Open(kv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	secret, tok, err := s.IssueToken("alice", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.AddGrant("alice", Read, "acme")
	if err != nil {
		t.Fatal(err)
	}
	before := takeSnapshot(t, s)

	kv.setFail(true)
	mutations := map[string]func() error{
		"CreatePrincipal": func() error { _, err := s.CreatePrincipal("bob"); return err },
		"DeletePrincipal": func() error { return s.DeletePrincipal("alice") },
		"IssueToken":      func() error { _, _, err := s.IssueToken("alice", "", 0); return err },
		"RevokeToken":     func() error { return s.RevokeToken("alice", tok.ID) },
		"AddGrant":        func() error { _, err := s.AddGrant("alice", Admin, "*"); return err },
		"RemoveGrant":     func() error { return s.RemoveGrant(g.ID) },
		"EnsureRoot":      func() error { _, err := s.EnsureRoot("root", strings.Repeat("k", 40)); return err },
	}
	for name, m := range mutations {
		t.Run(name, func(t *testing.T) {
			if err := m(); !errors.Is(err, errInjected) {
				t.Fatalf("got %v, want the KV's error", err)
			}
			if after := takeSnapshot(t, s); !reflect.DeepEqual(before, after) {
				t.Fatalf("failed %s changed state:\n%+v\n%+v", name, before, after)
			}
			if p, err := s.Authenticate(secret); err != nil || p.Name != "alice" {
				t.Fatalf("Authenticate = %v, %v", p, err)
			}
			if s.Authorize(Principal{Name: "alice"}, Read, acmeClicks) != nil || s.Covers(Principal{Name: "alice"}, Admin, server) {
				t.Fatal("decisions changed")
			}
		})
	}
	kv.setFail(false)
	s2, err := Open(kv)
	if err != nil {
		t.Fatal(err)
	}
	if after := takeSnapshot(t, s2); !reflect.DeepEqual(before, after) {
		t.Fatalf("reopened state differs:\n%+v\n%+v", before, after)
	}
}

func TestOpenDropsOrphans(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.grant("alice", Read, "acme")
	secret, _ := e.token("alice", 0)
	e.grant("anonymous", Read, "public")
	// Simulate a hand-edited catalog: the principal record alone vanishes.
	if err := e.cat.Delete("acl/p/alice"); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	gs, _ := e.s.ListGrants("")
	if len(gs) != 1 || gs[0].Principal != "anonymous" {
		t.Fatalf("grants after reopen = %+v, want only anonymous's", gs)
	}
	if _, err := e.s.Authenticate(secret); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("orphaned token authenticates: %v", err)
	}
	if n := countKeys(t, e, "acl/"); n != 1 {
		t.Fatalf("%d acl keys left, want the anonymous grant only", n)
	}
	e.principal("alice")
	if e.s.Visible(Principal{Name: "alice"}, "acme") {
		t.Fatal("re-created principal inherited an orphaned grant")
	}
}

func TestOpenRejectsCorruptRecords(t *testing.T) {
	cases := map[string]struct{ key, value string }{
		"bad principal json":     {"acl/p/alice", "{"},
		"principal key mismatch": {"acl/p/alice", `{"name":"bob"}`},
		"bad grant json":         {"acl/g/1", "nope"},
		"grant key mismatch":     {"acl/g/1", `{"id":"2","principal":"anonymous","action":"read","resource":"acme"}`},
		"grant bad resource":     {"acl/g/1", `{"id":"1","principal":"anonymous","action":"read","resource":"A/B"}`},
		"grant bad action":       {"acl/g/1", `{"id":"1","principal":"anonymous","action":"write","resource":"acme"}`},
		"bad token json":         {"acl/t/00", "]"},
		"token key not a digest": {"acl/t/zz", `{"id":"1","principal":"x"}`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			kv := newMemKV()
			kv.m[c.key] = []byte(c.value)
			if _, err := Open(kv); err == nil || !strings.Contains(err.Error(), c.key) && !strings.Contains(err.Error(), "grant 1") {
				t.Fatalf("Open = %v, want an error naming the record", err)
			}
		})
	}
	if _, err := Open(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Open(nil) = %v", err)
	}
}

func TestInvalidInputs(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	_, tok := e.token("alice", 0)
	long := func(n int, c string) string { return strings.Repeat(c, n) }
	cases := map[string]struct {
		do   func() error
		want error
	}{
		"principal empty":           {func() error { _, err := e.s.CreatePrincipal(""); return err }, ErrInvalid},
		"principal uppercase":       {func() error { _, err := e.s.CreatePrincipal("Alice"); return err }, ErrInvalid},
		"principal leading dash":    {func() error { _, err := e.s.CreatePrincipal("-a"); return err }, ErrInvalid},
		"principal leading dot":     {func() error { _, err := e.s.CreatePrincipal(".a"); return err }, ErrInvalid},
		"principal space":           {func() error { _, err := e.s.CreatePrincipal("a b"); return err }, ErrInvalid},
		"principal slash":           {func() error { _, err := e.s.CreatePrincipal("a/b"); return err }, ErrInvalid},
		"principal 65 chars":        {func() error { _, err := e.s.CreatePrincipal(long(65, "a")); return err }, ErrInvalid},
		"principal 64 chars ok":     {func() error { _, err := e.s.CreatePrincipal(long(64, "a")); return err }, nil},
		"principal all chars ok":    {func() error { _, err := e.s.CreatePrincipal("0a.b_c@d-e"); return err }, nil},
		"principal anonymous":       {func() error { _, err := e.s.CreatePrincipal("anonymous"); return err }, ErrInvalid},
		"delete anonymous":          {func() error { return e.s.DeletePrincipal("anonymous") }, ErrInvalid},
		"get invalid":               {func() error { _, err := e.s.GetPrincipal("A"); return err }, ErrInvalid},
		"grant unknown principal":   {func() error { _, err := e.s.AddGrant("ghost", Read, "acme"); return err }, ErrNotFound},
		"grant invalid principal":   {func() error { _, err := e.s.AddGrant("Ghost", Read, "acme"); return err }, ErrInvalid},
		"grant bad action":          {func() error { _, err := e.s.AddGrant("alice", "write", "acme"); return err }, ErrInvalid},
		"grant empty action":        {func() error { _, err := e.s.AddGrant("alice", "", "acme"); return err }, ErrInvalid},
		"grant bad resource":        {func() error { _, err := e.s.AddGrant("alice", Read, "acme/"); return err }, ErrInvalid},
		"remove unknown grant":      {func() error { return e.s.RemoveGrant("nope") }, ErrNotFound},
		"list grants invalid":       {func() error { _, err := e.s.ListGrants("A"); return err }, ErrInvalid},
		"token unknown principal":   {func() error { _, _, err := e.s.IssueToken("ghost", "", 0); return err }, ErrNotFound},
		"token anonymous":           {func() error { _, _, err := e.s.IssueToken("anonymous", "", 0); return err }, ErrInvalid},
		"token negative ttl":        {func() error { _, _, err := e.s.IssueToken("alice", "", -time.Second); return err }, ErrInvalid},
		"token label newline":       {func() error { _, _, err := e.s.IssueToken("alice", "a\nb", 0); return err }, ErrInvalid},
		"token label too long":      {func() error { _, _, err := e.s.IssueToken("alice", long(129, "l"), 0); return err }, ErrInvalid},
		"token label bad utf8":      {func() error { _, _, err := e.s.IssueToken("alice", "\xff", 0); return err }, ErrInvalid},
		"token label unicode ok":    {func() error { _, _, err := e.s.IssueToken("alice", "ci ✓ deploy", 0); return err }, nil},
		"list tokens unknown":       {func() error { _, err := e.s.ListTokens("ghost"); return err }, ErrNotFound},
		"list tokens anonymous":     {func() error { _, err := e.s.ListTokens("anonymous"); return err }, ErrInvalid},
		"revoke unknown id":         {func() error { return e.s.RevokeToken("alice", "nope") }, ErrNotFound},
		"revoke wrong principal":    {func() error { return e.s.RevokeToken("ghost", tok.ID) }, ErrNotFound},
		"root anonymous":            {func() error { _, err := e.s.EnsureRoot("anonymous", ""); return err }, ErrInvalid},
		"root invalid name":         {func() error { _, err := e.s.EnsureRoot("", ""); return err }, ErrInvalid},
		"root short secret":         {func() error { _, err := e.s.EnsureRoot("root", "hunter2"); return err }, ErrInvalid},
		"root secret with space":    {func() error { _, err := e.s.EnsureRoot("root", long(40, "a")+" b"); return err }, ErrInvalid},
		"root secret too long":      {func() error { _, err := e.s.EnsureRoot("root", long(513, "a")); return err }, ErrInvalid},
		"root secret non-ascii":     {func() error { _, err := e.s.EnsureRoot("root", long(40, "é")); return err }, ErrInvalid},
		"action parse unknown":      {func() error { _, err := ParseAction("write"); return err }, ErrInvalid},
		"action parse empty":        {func() error { _, err := ParseAction(""); return err }, ErrInvalid},
		"action parse mixed case":   {func() error { _, err := ParseAction(" Admin "); return err }, nil},
		"resource tenant too short": {func() error { _, err := ParseResource("ab"); return err }, ErrInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			err := c.do()
			if c.want == nil {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if c.want == ErrInvalid && !strings.Contains(err.Error(), "want") && !strings.Contains(err.Error(), "reserved") &&
				!strings.Contains(err.Error(), "not allowed") && !strings.Contains(err.Error(), "negative") &&
				!strings.Contains(err.Error(), "cannot") {
				t.Errorf("%q does not state the rule", err)
			}
		})
	}
	// Nothing invalid reached the store.
	if _, err := e.s.GetPrincipal("root"); !errors.Is(err, ErrNotFound) {
		t.Errorf("refused EnsureRoot created the principal: %v", err)
	}
}

func TestParseAction(t *testing.T) {
	cases := map[string]Action{"read": Read, "append": Append, "admin": Admin, "READ": Read, " append\n": Append}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			if got, err := ParseAction(in); err != nil || got != want {
				t.Fatalf("ParseAction(%q) = %q, %v; want %q", in, got, err, want)
			}
		})
	}
}

func TestResourceString(t *testing.T) {
	cases := map[string]struct {
		r    Resource
		want string
	}{
		"server":  {server, "the server"},
		"tenant":  {acme, "tenant acme"},
		"stream":  {acmeClicks, "stream acme/clicks"},
		"grouped": {acmeWeb, "stream acme/frontend (set web)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := c.r.String(); got != c.want {
				t.Fatalf("String() = %q, want %q", got, c.want)
			}
		})
	}
}

// A grant stored before stream sets were renamed ("acme/group:web") still
// applies after a restart, keeps its stored spelling, and is the same grant
// as "acme/set:web"; a new grant given with the old spelling is stored as
// "acme/set:web".
func TestDeprecatedSetGrant(t *testing.T) {
	e := newEnv(t)
	e.principal("bob")
	old := Grant{ID: "g-old", Principal: "bob", Action: Read, Resource: "acme/group:web", Created: time.Unix(1, 0).UTC()}
	if err := e.cat.Commit(map[string][]byte{prefixGrant + old.ID: encode(old)}, nil); err != nil {
		t.Fatal(err)
	}
	e.reopen()
	if err := e.s.Authorize(Principal{Name: "bob"}, Read, acmeWeb); err != nil {
		t.Fatalf("grant stored as acme/group:web: %v", err)
	}
	gs, err := e.s.ListGrants("bob")
	if err != nil || len(gs) != 1 || gs[0].Resource != "acme/group:web" {
		t.Fatalf("ListGrants = %+v, %v; want the stored grant as it was stored", gs, err)
	}
	if g, err := e.s.AddGrant("bob", Read, "acme/set:web"); !errors.Is(err, ErrExists) || g.ID != old.ID {
		t.Fatalf("AddGrant of acme/set:web beside acme/group:web = %+v, %v; want the old grant and ErrExists", g, err)
	}
	g := e.grant("bob", Append, "acme/group:web")
	if g.Resource != "acme/set:web" {
		t.Fatalf("new grant given as acme/group:web stored as %q, want acme/set:web", g.Resource)
	}
}
