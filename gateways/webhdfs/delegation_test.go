package webhdfs

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
)

const invalidTokenException = "InvalidToken"

// getToken asks for a delegation token as who and decodes it.
func (e *testEnv) getToken(who, query string) (string, hadoopToken, tokenIdent) {
	e.t.Helper()
	var body struct{ Token *struct{ URLString string } }
	e.getJSON(who, "/webhdfs/v1/?op=GETDELEGATIONTOKEN"+query, &body)
	if body.Token == nil {
		e.t.Fatalf("GETDELEGATIONTOKEN as %q: null token", who)
	}
	s := body.Token.URLString
	if strings.ContainsAny(s, "+/=") {
		e.t.Fatalf("urlString %q is not unpadded URL-safe base64", s)
	}
	tok, err := decodeToken(s)
	if err != nil {
		e.t.Fatalf("urlString %q: %v", s, err)
	}
	id, err := decodeIdent(tok.identifier)
	if err != nil {
		e.t.Fatalf("identifier: %v", err)
	}
	return s, tok, id
}

// withToken sends a request authenticated by delegation= alone.
func (e *testEnv) withToken(method, tok, rawURL string) (*http.Response, []byte) {
	e.t.Helper()
	return e.do(method, "", rawURL+"&delegation="+url.QueryEscape(tok), nil)
}

func (e *testEnv) renew(who, tok string) (*http.Response, []byte) {
	e.t.Helper()
	return e.do("PUT", who, "/webhdfs/v1/?op=RENEWDELEGATIONTOKEN&token="+url.QueryEscape(tok), nil)
}

func (e *testEnv) cancel(who, tok string) (*http.Response, []byte) {
	e.t.Helper()
	return e.do("PUT", who, "/webhdfs/v1/?op=CANCELDELEGATIONTOKEN&token="+url.QueryEscape(tok), nil)
}

// wantTokenAuthFailure checks the answer to a request with a bad
// delegation=: what Hadoop's client turns back into InvalidToken.
func wantTokenAuthFailure(t *testing.T, resp *http.Response, b []byte, msg string) {
	t.Helper()
	wantRemote(t, resp, b, 403, "SecurityException", secClass)
	var body struct{ RemoteException map[string]string }
	json.Unmarshal(b, &body)
	m := body.RemoteException["message"]
	if !strings.HasPrefix(m, ugiHeader+" "+invalidTokenClass+": ") || !strings.Contains(m, msg) {
		t.Fatalf("message %q, want the UGI header, InvalidToken and %q", m, msg)
	}
}

func TestDelegationTokenIssue(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	before := time.Now().UnixMilli()
	_, tok, id := e.getToken("alice", "&renewer=yarn/rm.example.com@EXAMPLE.COM")
	if tok.kind != kindWebHDFS || tok.service != strings.TrimPrefix(e.url, "http://") || len(tok.password) != 32 {
		t.Fatalf("token kind %q service %q password %d bytes", tok.kind, tok.service, len(tok.password))
	}
	if id.owner != "alice" || id.renewer != "yarn" || id.realUser != "" || id.issueDate < before ||
		id.maxDate-id.issueDate != (7*24*time.Hour).Milliseconds() || id.sequence < 1 {
		t.Fatalf("identifier %+v", id)
	}
	_, tok2, id2 := e.getToken("alice", "&service=10.0.0.1:8020&kind=HDFS_DELEGATION_TOKEN")
	if tok2.kind != "HDFS_DELEGATION_TOKEN" || tok2.service != "10.0.0.1:8020" || id2.renewer != "alice" || id2.sequence == id.sequence {
		t.Fatalf("second token %+v %+v", tok2, id2)
	}

	// Without a bearer token there is no token to get, as from an insecure
	// NameNode; a delegation token cannot mint another.
	for _, q := range []string{"", "&user.name=alice"} {
		var none struct{ Token any }
		e.getJSON("", "/webhdfs/v1/?op=GETDELEGATIONTOKEN"+q, &none)
		if none.Token != nil {
			t.Fatalf("%q: token %v", q, none.Token)
		}
	}
	s, _, _ := e.getToken("alice", "")
	resp, b := e.withToken("GET", s, "/webhdfs/v1/?op=GETDELEGATIONTOKEN")
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	resp, b = e.get("alice", "/webhdfs/v1/?op=GETDELEGATIONTOKEN&renewer=a%0Ab")
	wantRemote(t, resp, b, 400, "IllegalArgumentException", iaeClass)
}

func TestDelegationTokenInsecureUserName(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InsecureUserName = true
	e := newTestEnv(t, cfg)
	var none struct{ Token any }
	e.getJSON("", "/webhdfs/v1/?op=GETDELEGATIONTOKEN&user.name=alice", &none)
	if none.Token != nil {
		t.Fatalf("user.name got token %v", none.Token)
	}
	s, _, _ := e.getToken("alice", "")
	resp, b := e.do("PUT", "", "/webhdfs/v1/?op=RENEWDELEGATIONTOKEN&user.name=alice&token="+s, nil)
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
}

func TestDelegationTokenAuthenticates(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	s, _, _ := e.getToken("alice", "")
	const p = "/acme/clicks/_manifest.json"
	var st struct{ FileStatus fileStatus }
	resp, b := e.withToken("GET", s, "/webhdfs/v1"+p+"?op=GETFILESTATUS")
	if resp.StatusCode != 200 || json.Unmarshal(b, &st) != nil || st.FileStatus.Length != int64(len(e.files[p])) {
		t.Fatalf("GETFILESTATUS with token: %d %s", resp.StatusCode, b)
	}
	resp, _ = e.withToken("GET", s, "/webhdfs/v1"+p+"?op=OPEN")
	if resp.StatusCode != 307 {
		t.Fatalf("OPEN with token: %d", resp.StatusCode)
	}
	resp, b = e.get("", resp.Header.Get("Location"))
	if resp.StatusCode != 200 || string(b) != string(e.files[p]) {
		t.Fatalf("data URL: %d %q", resp.StatusCode, b)
	}
	// The token acts as its owner: what the owner may not read stays denied.
	resp, b = e.withToken("GET", s, "/webhdfs/v1/other/logs?op=LISTSTATUS")
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	// The owner's grants count at the time of the request.
	bob, _, _ := e.getToken("bob", "")
	resp, b = e.withToken("GET", bob, "/webhdfs/v1"+p+"?op=GETFILESTATUS")
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	// A silt secret still works as delegation= (fsspec's token=).
	resp, _ = e.withToken("GET", e.tokens["alice"], "/webhdfs/v1"+p+"?op=GETFILESTATUS")
	if resp.StatusCode != 200 {
		t.Fatalf("silt secret as delegation=: %d", resp.StatusCode)
	}
}

func TestDelegationTokenForged(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	s, tok, id := e.getToken("bob", "")
	const p = "/webhdfs/v1/acme/clicks/_manifest.json?op=GETFILESTATUS"

	owner := id
	owner.owner = "alice" // bob's token claiming alice
	pw := tok
	pw.password = append([]byte(nil), tok.password...)
	pw.password[0] ^= 1
	renewed := id
	renewed.maxDate += 1000
	unknown := id
	unknown.sequence += 100
	for name, bad := range map[string]hadoopToken{
		"other owner":   {identifier: owner.encode(), password: tok.password, kind: tok.kind, service: tok.service},
		"later maxDate": {identifier: renewed.encode(), password: tok.password, kind: tok.kind, service: tok.service},
		"unknown":       {identifier: unknown.encode(), password: tok.password, kind: tok.kind, service: tok.service},
		"wrong pw":      pw,
		"no pw":         {identifier: tok.identifier, kind: tok.kind, service: tok.service},
	} {
		t.Run(name, func(t *testing.T) {
			resp, b := e.withToken("GET", bad.encode(), p)
			wantTokenAuthFailure(t, resp, b, "can't be found in cache")
			resp, b = e.renew("bob", bad.encode())
			wantRemote(t, resp, b, 403, invalidTokenException, invalidTokenClass)
		})
	}
	// The genuine token, for contrast, is accepted.
	if resp, _ := e.renew("bob", s); resp.StatusCode != 200 {
		t.Fatalf("genuine token: %d", resp.StatusCode)
	}
}

func TestDelegationTokenRenew(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TokenRenewInterval, cfg.TokenMaxLifetime = time.Hour, 3*time.Hour
	e := newTestEnv(t, cfg)
	if _, err := e.acl.CreatePrincipal("carol"); err != nil {
		t.Fatal(err)
	}
	carol, _, err := e.acl.IssueToken("carol", "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	e.tokens["carol"] = carol
	s, _, id := e.getToken("alice", "&renewer=bob")
	const p = "/webhdfs/v1/acme/clicks/_manifest.json?op=GETFILESTATUS"

	renewAs := func(who string) int64 {
		t.Helper()
		resp, b := e.renew(who, s)
		var r struct{ Long *int64 }
		if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || r.Long == nil {
			t.Fatalf("renew as %s: %d %s", who, resp.StatusCode, b)
		}
		return *r.Long
	}
	// Owner and renewer may renew; the expiry moves with the clock.
	e.skew = 50 * time.Minute
	if got, want := renewAs("bob"), time.Now().Add(e.skew+time.Hour).UnixMilli(); got < want-5000 || got > want+5000 {
		t.Fatalf("renewed to %d, want about %d", got, want)
	}
	e.skew = 100 * time.Minute // past the first interval, within the renewed one
	if resp, _ := e.withToken("GET", s, p); resp.StatusCode != 200 {
		t.Fatalf("renewed token refused: %d", resp.StatusCode)
	}
	renewAs("alice")
	resp, b := e.renew("carol", s)
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	resp, b = e.renew("", s)
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	resp, b = e.withToken("PUT", s, "/webhdfs/v1/?op=RENEWDELEGATIONTOKEN&token="+url.QueryEscape(s))
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	resp, b = e.do("PUT", "alice", "/webhdfs/v1/?op=RENEWDELEGATIONTOKEN", nil)
	wantRemote(t, resp, b, 400, "IllegalArgumentException", iaeClass)
	resp, b = e.renew("alice", "silt_not_a_hadoop_token")
	wantRemote(t, resp, b, 400, "IllegalArgumentException", iaeClass)

	// No renewal goes past the max lifetime.
	e.skew = 150 * time.Minute
	if got := renewAs("alice"); got != id.maxDate {
		t.Fatalf("renewed to %d, want capped at maxDate %d", got, id.maxDate)
	}
	// Past it the token is refused everywhere.
	e.skew = 181 * time.Minute
	resp, b = e.withToken("GET", s, p)
	wantTokenAuthFailure(t, resp, b, "is expired")
	resp, b = e.renew("alice", s)
	wantRemote(t, resp, b, 403, invalidTokenException, invalidTokenClass)
}

func TestDelegationTokenExpires(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	s, _, _ := e.getToken("alice", "")
	e.skew = 24*time.Hour + time.Second
	resp, b := e.withToken("GET", s, "/webhdfs/v1/acme?op=LISTSTATUS")
	wantTokenAuthFailure(t, resp, b, "is expired")
	// An expired token cannot be brought back by renewing it.
	resp, b = e.renew("alice", s)
	wantRemote(t, resp, b, 403, invalidTokenException, invalidTokenClass)
	// Issuing prunes what has expired.
	e.getToken("alice", "")
	if n := e.srv.dt.Len(); n != 1 {
		t.Fatalf("%d tokens kept, want 1", n)
	}
}

func TestDelegationTokenCancel(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	s, _, _ := e.getToken("alice", "&renewer=bob")
	keep, _, _ := e.getToken("alice", "")
	resp, b := e.cancel("", s)
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	if resp, b = e.cancel("bob", s); resp.StatusCode != 200 {
		t.Fatalf("cancel by renewer: %d %s", resp.StatusCode, b)
	}
	resp, b = e.withToken("GET", s, "/webhdfs/v1/acme?op=LISTSTATUS")
	wantTokenAuthFailure(t, resp, b, "can't be found in cache")
	resp, b = e.renew("alice", s)
	wantRemote(t, resp, b, 403, invalidTokenException, invalidTokenClass)
	resp, b = e.cancel("alice", s)
	wantRemote(t, resp, b, 403, invalidTokenException, invalidTokenClass)
	resp, b = e.cancel("bob", keep)
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	if resp, _ = e.withToken("GET", keep, "/webhdfs/v1/acme?op=LISTSTATUS"); resp.StatusCode != 200 {
		t.Fatalf("another token was affected: %d", resp.StatusCode)
	}
}

// TestDelegationTokenRestart reopens the store on the same catalog, as a
// restarted server does.
func TestDelegationTokenRestart(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	live, _, liveID := e.getToken("alice", "")
	gone, _, _ := e.getToken("alice", "")
	if resp, _ := e.cancel("alice", gone); resp.StatusCode != 200 {
		t.Fatal("cancel")
	}
	e.skew = 12 * time.Hour
	resp, b := e.renew("alice", live)
	var r struct{ Long int64 }
	json.Unmarshal(b, &r)
	if resp.StatusCode != 200 {
		t.Fatalf("renew: %d %s", resp.StatusCode, b)
	}

	dt, err := OpenTokenStore(e.cat, e.acl.GetPrincipal)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.UseDelegationTokens(dt)
	e.skew = 30 * time.Hour // past the first interval: only the renewal keeps it alive
	if resp, b := e.withToken("GET", live, "/webhdfs/v1/acme?op=LISTSTATUS"); resp.StatusCode != 200 {
		t.Fatalf("token lost on restart: %d %s", resp.StatusCode, b)
	}
	resp, b = e.withToken("GET", gone, "/webhdfs/v1/acme?op=LISTSTATUS")
	wantTokenAuthFailure(t, resp, b, "can't be found in cache")
	_, _, next := e.getToken("alice", "")
	if next.sequence <= liveID.sequence+1 {
		t.Fatalf("sequence %d reused after restart (had %d and a cancelled one)", next.sequence, liveID.sequence)
	}
}

// TestDelegationTokenOwnerDeleted: a token dies with its owner and is not
// inherited by a principal created later under the same name.
func TestDelegationTokenOwnerDeleted(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	s, _, _ := e.getToken("alice", "")
	if err := e.acl.DeletePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := e.acl.CreatePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.acl.AddGrant("alice", acl.Read, "acme"); err != nil {
		t.Fatal(err)
	}
	resp, b := e.withToken("GET", s, "/webhdfs/v1/acme?op=LISTSTATUS")
	wantTokenAuthFailure(t, resp, b, "no longer exists")
}

func TestDelegationTokenDisabled(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	e.srv.UseDelegationTokens(nil)
	var none struct{ Token any }
	e.getJSON("alice", "/webhdfs/v1/?op=GETDELEGATIONTOKEN", &none)
	if none.Token != nil {
		t.Fatalf("token %v without a store", none.Token)
	}
	resp, b := e.renew("alice", "AAAA")
	wantRemote(t, resp, b, 400, "IllegalArgumentException", iaeClass)
}

// A principal at webhdfs.token_max_per_principal live tokens is refused
// another, as an IOException (403), until one is cancelled or lapses;
// other principals are not affected.
func TestDelegationTokenPerPrincipalLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TokenMaxPerPrincipal = 2
	e := newTestEnv(t, cfg)
	first, _, _ := e.getToken("alice", "")
	e.getToken("alice", "")
	resp, b := e.get("alice", "/webhdfs/v1/?op=GETDELEGATIONTOKEN")
	wantRemote(t, resp, b, 403, "IOException", "java.io.IOException")
	if !strings.Contains(string(b), "token_max_per_principal") {
		t.Fatalf("refusal does not name the limit: %s", b)
	}
	e.getToken("bob", "") // another principal's count is its own
	if resp, b := e.cancel("alice", first); resp.StatusCode != 200 {
		t.Fatalf("cancel: %d %s", resp.StatusCode, b)
	}
	e.getToken("alice", "") // room again after a cancellation
	e.skew = 24*time.Hour + time.Second
	e.getToken("alice", "") // and after the others lapsed
}

func TestTokenConfig(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"zero renew":                   func(c *Config) { c.TokenRenewInterval = 0 },
		"zero max":                     func(c *Config) { c.TokenMaxLifetime = 0 },
		"negative per-principal limit": func(c *Config) { c.TokenMaxPerPrincipal = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// An operator lists live tokens (by owner or all) without their
// passwords, and cancels one by its ID, without holding the token.
func TestDelegationTokenListAndCancelByID(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	a1, _, id1 := e.getToken("alice", "&renewer=bob")
	a2, _, id2 := e.getToken("alice", "")
	_, _, id3 := e.getToken("bob", "")
	now := time.Now()
	all := e.srv.dt.List("", now)
	if len(all) != 3 || all[0].ID != id1.sequence || all[1].ID != id2.sequence || all[2].ID != id3.sequence {
		t.Fatalf("List(\"\") = %+v, want tokens %d, %d, %d in order", all, id1.sequence, id2.sequence, id3.sequence)
	}
	if got := all[0]; got.Owner != "alice" || got.Renewer != "bob" || got.Issued.UnixMilli() != id1.issueDate ||
		got.MaxDate.UnixMilli() != id1.maxDate || !got.Expires.After(now) || got.Expires.After(got.MaxDate) {
		t.Fatalf("first token listed as %+v (identifier %+v)", got, id1)
	}
	if got := e.srv.dt.List("bob", now); len(got) != 1 || got[0].ID != id3.sequence {
		t.Fatalf("List(bob) = %+v", got)
	}
	if err := e.srv.dt.CancelID(id1.sequence); err != nil {
		t.Fatal(err)
	}
	resp, b := e.withToken("GET", a1, "/webhdfs/v1/acme?op=LISTSTATUS")
	wantTokenAuthFailure(t, resp, b, "can't be found in cache")
	if resp, _ := e.withToken("GET", a2, "/webhdfs/v1/acme?op=LISTSTATUS"); resp.StatusCode != 200 {
		t.Fatalf("another token was affected: %d", resp.StatusCode)
	}
	if err := e.srv.dt.CancelID(id1.sequence); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("second cancel: %v, want ErrInvalidToken", err)
	}
	// Expired tokens are not listed.
	if got := e.srv.dt.List("", now.Add(8*24*time.Hour)); len(got) != 0 {
		t.Fatalf("listed after every token expired: %+v", got)
	}
}
