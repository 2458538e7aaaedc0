package webhdfs

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
)

// tokenPost sends a form to the token endpoint and decodes the JSON answer.
func (e *testEnv) tokenPost(contentType, body string) (int, http.Header, map[string]any) {
	e.t.Helper()
	resp, err := http.Post(e.url+oauth2Path, contentType, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("token endpoint: %d, body %q is not JSON", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Fatalf("token endpoint: Content-Type %q", ct)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		e.t.Fatalf("token endpoint: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	return resp.StatusCode, resp.Header, m
}

const formType = "application/x-www-form-urlencoded"

func grantForm(id, secret string) string {
	return url.Values{"grant_type": {"client_credentials"}, "client_id": {id}, "client_secret": {secret}}.Encode()
}

func TestOAuth2TokenGrant(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	code, _, m := e.tokenPost(formType+"; charset=UTF-8", grantForm("alice", e.tokens["alice"]))
	if code != 200 || m["token_type"] != "bearer" || m["expires_in"] != float64(3600) {
		t.Fatalf("grant: %d %v", code, m)
	}
	tok, _ := m["access_token"].(string)
	if tok == "" || tok == e.tokens["alice"] {
		t.Fatalf("access_token %q: want a new token", tok)
	}
	// The access token is alice's: it reads what she may read, and only that.
	e.tokens["alice-oauth"] = tok
	if resp, b := e.do("GET", "alice-oauth", "/webhdfs/v1/acme/clicks/_manifest.json?op=GETFILESTATUS", nil); resp.StatusCode != 200 {
		t.Fatalf("GETFILESTATUS with the access token: %d %s", resp.StatusCode, b)
	}
	if resp, _ := e.do("GET", "alice-oauth", "/webhdfs/v1/other/logs?op=LISTSTATUS", nil); resp.StatusCode != 403 {
		t.Fatalf("LISTSTATUS of an ungranted tenant with the access token: %d", resp.StatusCode)
	}
	// It is a short-lived token with its own label in the acl store.
	p, err := e.srv.authn(tok)
	if err != nil || p.Name != "alice" {
		t.Fatalf("authn(access token) = %v, %v", p, err)
	}
	// Trading an access token for another would outlive the API token.
	if code, _, m := e.tokenPost(formType, grantForm("alice", tok)); code != 401 || m["error"] != "invalid_client" {
		t.Fatalf("access token as client_secret: %d %v", code, m)
	}
}

func TestOAuth2TokenIssuedAs(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	var got struct {
		principal, label string
		ttl              time.Duration
	}
	e.srv.issue = func(principal, label string, ttl time.Duration) (string, acl.TokenInfo, error) {
		got.principal, got.label, got.ttl = principal, label, ttl
		return "silt_issued", acl.TokenInfo{}, nil
	}
	code, _, m := e.tokenPost(formType, grantForm("bob", e.tokens["bob"]))
	if code != 200 || m["access_token"] != "silt_issued" {
		t.Fatalf("grant: %d %v", code, m)
	}
	if got.principal != "bob" || got.label != "webhdfs-oauth2" || got.ttl != time.Hour {
		t.Fatalf("issued %+v", got)
	}
	e.srv.issue = func(string, string, time.Duration) (string, acl.TokenInfo, error) {
		return "", acl.TokenInfo{}, errors.New("store closed")
	}
	if code, _, m := e.tokenPost(formType, grantForm("bob", e.tokens["bob"])); code != 500 || m["error"] != "server_error" {
		t.Fatalf("issuer failure: %d %v", code, m)
	}
	e.srv.issue = nil
	if code, _, _ := e.tokenPost(formType, grantForm("bob", e.tokens["bob"])); code != 404 {
		t.Fatalf("without an issuer: %d", code)
	}
}

func TestOAuth2TokenRefused(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	alice := e.tokens["alice"]
	big := grantForm("alice", alice) + "&pad=" + strings.Repeat("x", maxOAuth2Body)
	for name, c := range map[string]struct {
		contentType, body string
		status            int
		err               string
	}{
		"another principal's token": {formType, grantForm("bob", alice), 401, "invalid_client"},
		"unknown principal":         {formType, grantForm("mallory", alice), 401, "invalid_client"},
		"wrong secret":              {formType, grantForm("alice", "silt_not_a_real_token"), 401, "invalid_client"},
		"no secret":                 {formType, "grant_type=client_credentials&client_id=alice", 401, "invalid_client"},
		"no client_id":              {formType, "grant_type=client_credentials&client_secret=" + alice, 401, "invalid_client"},
		"anonymous":                 {formType, grantForm("anonymous", ""), 401, "invalid_client"},
		"password grant":            {formType, "grant_type=password&username=alice&password=" + alice, 400, "unsupported_grant_type"},
		"refresh grant":             {formType, "grant_type=refresh_token&refresh_token=" + alice, 400, "unsupported_grant_type"},
		"no grant_type":             {formType, "client_id=alice&client_secret=" + alice, 400, "invalid_request"},
		"bad form":                  {formType, "grant_type=client_credentials&client_id=%zz", 400, "invalid_request"},
		"repeated parameter":        {formType, grantForm("alice", alice) + "&client_id=bob", 400, "invalid_request"},
		"JSON body":                 {"application/json", `{"grant_type":"client_credentials"}`, 400, "invalid_request"},
		"no content type":           {"", grantForm("alice", alice), 400, "invalid_request"},
		"body over 64 KiB":          {formType, big, 400, "invalid_request"},
	} {
		code, _, m := e.tokenPost(c.contentType, c.body)
		if code != c.status || m["error"] != c.err {
			t.Errorf("%s: %d %v, want %d %s", name, code, m, c.status, c.err)
		}
		if _, ok := m["access_token"]; ok {
			t.Errorf("%s: access_token sent", name)
		}
	}
}

func TestOAuth2TokenParams(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	// Credentials count only in the body, never in the query string.
	resp, err := http.Post(e.url+oauth2Path+"?"+grantForm("alice", e.tokens["alice"]), formType, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Fatal("credentials in the query string accepted")
	}
	// GET is not a token request.
	resp, err = http.Get(e.url + oauth2Path + "?" + grantForm("alice", e.tokens["alice"]))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	// A body announced over the bound is refused without reading it.
	body := &countingBody{}
	r := httptest.NewRequest("POST", oauth2Path, nil)
	r.Header.Set("Content-Type", formType)
	r.Body, r.ContentLength = body, 1<<30
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, r)
	if rec.Code != 400 || body.reads != 0 || rec.Header().Get("Connection") != "close" {
		t.Fatalf("large body: %d, %d reads, Connection %q", rec.Code, body.reads, rec.Header().Get("Connection"))
	}
	// The WebHDFS tree is unaffected by the new route.
	if resp, _ := e.do("POST", "alice", "/webhdfs/v1/acme/x?op=APPEND", nil); resp.StatusCode != 403 {
		t.Fatalf("APPEND: %d", resp.StatusCode)
	}
}
