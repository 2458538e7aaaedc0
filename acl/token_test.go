package acl

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestTokenLifecycle(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.principal("bob")
	secret, info, err := e.s.IssueToken("alice", "laptop", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, tokenPrefix) || len(secret) != len(tokenPrefix)+52 {
		t.Fatalf("secret %q: want %s + 52 base32 characters", secret, tokenPrefix)
	}
	if strings.Trim(secret[len(tokenPrefix):], "abcdefghijklmnopqrstuvwxyz234567") != "" {
		t.Fatalf("secret %q is not lowercase base32", secret)
	}
	raw, err := tokenEncoding.DecodeString(secret[len(tokenPrefix):])
	if err != nil || len(raw) != tokenSecretBytes {
		t.Fatalf("secret decodes to %d bytes, %v", len(raw), err)
	}
	want := TokenInfo{ID: info.ID, Principal: "alice", Label: "laptop", Created: e.clk.now()}
	if info != want || len(info.ID) != 16 {
		t.Fatalf("TokenInfo = %+v, want %+v with a 16-digit ID", info, want)
	}

	p, err := e.s.Authenticate(secret)
	if err != nil || p != (Principal{Name: "alice"}) {
		t.Fatalf("Authenticate = %v, %v", p, err)
	}

	e.clk.advance(time.Second)
	secret2, info2 := e.token("alice", 0)
	bobSecret, bobInfo := e.token("bob", 0)
	list, err := e.s.ListTokens("alice")
	if err != nil || len(list) != 2 || list[0] != info || list[1] != info2 {
		t.Fatalf("ListTokens = %+v, %v; want [%+v %+v]", list, err, info, info2)
	}

	// Revoking needs the owning principal.
	if err := e.s.RevokeToken("bob", info.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke by another principal = %v, want ErrNotFound", err)
	}
	if err := e.s.RevokeToken("alice", info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Authenticate(secret); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token: %v, want ErrUnauthenticated", err)
	}
	if err := e.s.RevokeToken("alice", info.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second revoke = %v, want ErrNotFound", err)
	}
	for s, want := range map[string]string{secret2: "alice", bobSecret: "bob"} {
		if p, err := e.s.Authenticate(s); err != nil || p.Name != want {
			t.Errorf("other tokens after revoke: %v, %v", p, err)
		}
	}
	if list, _ := e.s.ListTokens("bob"); len(list) != 1 || list[0] != bobInfo {
		t.Errorf("bob's tokens = %+v", list)
	}
}

func TestTokenExpiry(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	short, info := e.token("alice", time.Hour)
	forever, _ := e.token("alice", 0)
	if want := e.clk.now().Add(time.Hour); !info.Expires.Equal(want) {
		t.Fatalf("Expires = %v, want %v", info.Expires, want)
	}
	steps := []struct {
		advance       time.Duration
		shortOK       bool
		wantInMessage string
	}{
		{0, true, ""},
		{time.Hour - time.Nanosecond, true, ""},
		{time.Nanosecond, false, "expired"}, // exactly at Expires
		{100 * 365 * 24 * time.Hour, false, "expired"},
	}
	for _, st := range steps {
		e.clk.advance(st.advance)
		_, err := e.s.Authenticate(short)
		if st.shortOK && err != nil {
			t.Fatalf("at %v: %v, want valid", e.clk.now(), err)
		}
		if !st.shortOK && (!errors.Is(err, ErrUnauthenticated) || !strings.Contains(err.Error(), st.wantInMessage)) {
			t.Fatalf("at %v: %v, want ErrUnauthenticated saying %q", e.clk.now(), err, st.wantInMessage)
		}
		if _, err := e.s.Authenticate(forever); err != nil {
			t.Fatalf("ttl 0 token at %v: %v", e.clk.now(), err)
		}
	}
	// Expired tokens stay listed so that an operator can see and revoke
	// them.
	if list, _ := e.s.ListTokens("alice"); len(list) != 2 {
		t.Fatalf("ListTokens = %+v, want both tokens", list)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	secret, _ := e.token("alice", 0)
	cases := map[string]string{
		"empty":          "",
		"prefix only":    tokenPrefix,
		"garbage":        "garbage",
		"truncated":      secret[:len(secret)-1],
		"extended":       secret + "a",
		"uppercased":     strings.ToUpper(secret),
		"leading space":  " " + secret,
		"trailing nl":    secret + "\n",
		"very long":      strings.Repeat("a", 100000),
		"nul":            "silt_\x00",
		"other secret":   tokenPrefix + strings.Repeat("a", 52),
		"the token's ID": "0123456789abcdef",
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := e.s.Authenticate(s)
			if !errors.Is(err, ErrUnauthenticated) || p != (Principal{}) {
				t.Fatalf("Authenticate(%.40q) = %v, %v; want ErrUnauthenticated", s, p, err)
			}
		})
	}
}

func TestSecretsAreUnique(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	seen := map[string]bool{}
	ids := map[string]bool{}
	for range 50 {
		s, info := e.token("alice", 0)
		if seen[s] || ids[info.ID] {
			t.Fatalf("repeated secret or ID after %d tokens", len(seen))
		}
		seen[s], ids[info.ID] = true, true
	}
}

func BenchmarkAuthenticate(b *testing.B) {
	s, err := Open(newMemKV())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreatePrincipal("bench"); err != nil {
		b.Fatal(err)
	}
	var secret string
	for range 1000 {
		if secret, _, err = s.IssueToken("bench", "", 0); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Authenticate(secret); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExpiredTokensPrunedOnIssue: tokens that have expired are removed when
// their principal is issued a new one, so repeated short-lived grants do
// not accumulate.
func TestExpiredTokensPrunedOnIssue(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.principal("bob")
	e.token("alice", time.Minute)
	e.token("alice", time.Minute)
	keep, _ := e.token("alice", 0)
	e.token("bob", time.Minute)
	e.clk.advance(time.Hour)
	fresh, _ := e.token("alice", time.Hour)
	list, err := e.s.ListTokens("alice")
	if err != nil || len(list) != 2 {
		t.Fatalf("alice's tokens after pruning = %+v, %v; want the permanent and the fresh one", list, err)
	}
	for _, sec := range []string{keep, fresh} {
		if p, err := e.s.Authenticate(sec); err != nil || p.Name != "alice" {
			t.Fatalf("live token lost by pruning: %v %v", p, err)
		}
	}
	if list, _ := e.s.ListTokens("bob"); len(list) != 1 {
		t.Fatalf("bob's expired token pruned by alice's issue: %+v", list)
	}
	e.reopen() // the pruning was committed, not only done in memory
	if list, _ := e.s.ListTokens("alice"); len(list) != 2 {
		t.Fatalf("after reopen alice has %d tokens, want 2", len(list))
	}
}
