package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

func TestProbesMetricsAndSpec(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/healthz", "/readyz"} {
		if rep := e.do(req{method: "GET", path: p}); rep.status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, rep.status, rep.body)
		}
	}
	rep := e.do(req{method: "GET", path: "/openapi.yaml"})
	if rep.status != http.StatusOK || !strings.HasPrefix(string(rep.body), "openapi: 3.0") ||
		rep.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("openapi.yaml: %d %q %.40s", rep.status, rep.header.Get("Content-Type"), rep.body)
	}
	rep = e.do(req{method: "GET", path: "/metrics"})
	if rep.status != http.StatusOK || !strings.Contains(string(rep.body), `silt_head_requests_total{head="api",op="GET /healthz",status="ok"}`) {
		t.Fatalf("metrics: %d\n%s", rep.status, rep.body)
	}
	if rep.header.Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
	rep = e.do(req{method: "GET", path: "/healthz", header: map[string]string{"X-Request-Id": "trace-42"}})
	if got := rep.header.Get("X-Request-Id"); got != "trace-42" {
		t.Fatalf("request id not echoed: %q", got)
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	e := newEnv(t)
	rep := e.do(req{method: "GET", path: "/v2/nothing"})
	if rep.status != http.StatusNotFound || rep.errCode(t) != "not_found" {
		t.Fatalf("unknown route: %d %s", rep.status, rep.body)
	}
	rep = e.do(req{method: "PUT", path: "/v1/tenants"})
	if rep.status != http.StatusMethodNotAllowed || rep.errCode(t) != "method_not_allowed" {
		t.Fatalf("wrong method: %d %s", rep.status, rep.body)
	}
	if allow := rep.header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Fatalf("Allow = %q", allow)
	}
	if got := e.series("silt_head_requests_total", "head", "api", "op", "unmatched", "status", "client_error"); got != 2 {
		t.Fatalf("unmatched 404 and 405 counted %v times, want 2", got)
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	var who whoamiJSON
	e.must(http.StatusOK, req{method: "GET", path: "/v1/whoami"}).json(t, &who)
	if who.Principal != "root" || who.Insecure {
		t.Fatalf("whoami = %+v", who)
	}
	rep := e.do(req{method: "GET", path: "/v1/whoami"})
	rep.json(t, &who)
	if rep.status != http.StatusOK || who.Principal != acl.Anonymous.Name {
		t.Fatalf("anonymous whoami: %d %s", rep.status, rep.body)
	}
	for name, h := range map[string]string{
		"unknown token": "Bearer silt_nope",
		"basic":         "Basic cm9vdDpyb290",
		"empty bearer":  "Bearer ",
	} {
		rep := e.do(req{method: "GET", path: "/v1/whoami", header: map[string]string{"Authorization": h}})
		if rep.status != http.StatusUnauthorized || rep.errCode(t) != "unauthenticated" {
			t.Fatalf("%s: %d %s", name, rep.status, rep.body)
		}
		if got := rep.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer realm="silt"`) {
			t.Fatalf("%s: WWW-Authenticate = %q", name, got)
		}
	}
}

func TestAuthorization(t *testing.T) {
	e := newEnv(t)
	e.mkStream("acme", "clicks", "lines", 1)
	e.mkStream("acme", "views", "lines", 1)
	e.mkStream("other", "clicks", "lines", 1)
	reader := e.user("reader", "read:acme/clicks")

	// Anonymous, not granted: 401 with a challenge.
	rep := e.do(req{method: "GET", path: "/v1/tenants/acme/streams/clicks"})
	if rep.status != http.StatusUnauthorized || rep.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("anonymous: %d %s", rep.status, rep.body)
	}
	// Authenticated, not granted: 403.
	for _, r := range []req{
		{method: "GET", path: "/v1/tenants/acme/streams/views"},
		{method: "GET", path: "/v1/tenants/other"},
		{method: "POST", path: eventsPath("acme", "clicks"), body: []byte("x")},
		{method: "DELETE", path: "/v1/tenants/acme/streams/clicks"},
		{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"mine"}`)},
		{method: "GET", path: "/v1/principals"},
		// A stream that does not exist is refused, not reported missing.
		{method: "GET", path: "/v1/tenants/acme/streams/nosuch"},
	} {
		r.token = reader
		rep := e.do(r)
		if rep.status != http.StatusForbidden || rep.errCode(t) != "forbidden" {
			t.Fatalf("%s %s: %d %s", r.method, r.path, rep.status, rep.body)
		}
	}
	// Granted: allowed, and listings are filtered.
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/clicks", token: reader})
	var tl tenantList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants", token: reader}).json(t, &tl)
	if len(tl.Tenants) != 1 || tl.Tenants[0].Name != "acme" {
		t.Fatalf("reader's tenants: %+v", tl)
	}
	var sl streamList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams", token: reader}).json(t, &sl)
	if len(sl.Streams) != 1 || sl.Streams[0].Name != "clicks" {
		t.Fatalf("reader's streams: %+v", sl)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants", token: e.root}).json(t, &tl)
	if len(tl.Tenants) != 2 {
		t.Fatalf("root's tenants: %+v", tl)
	}

	// Grants to anonymous apply to requests without a token...
	e.grant(acl.Anonymous.Name, "read:acme/views")
	if rep := e.do(req{method: "GET", path: "/v1/tenants/acme/streams/views"}); rep.status != http.StatusOK {
		t.Fatalf("anonymous with a grant: %d %s", rep.status, rep.body)
	}
	// ...but an invalid token is refused even then.
	rep = e.do(req{method: "GET", path: "/v1/tenants/acme/streams/views", token: "silt_bogus"})
	if rep.status != http.StatusUnauthorized {
		t.Fatalf("invalid token with anonymous grant: %d", rep.status)
	}
	var eb errorBody
	rep.json(t, &eb)
	if m := eb.Error.Message; m != "not authenticated: unknown or revoked token" {
		t.Fatalf("invalid token: message %q, want the reason once", m)
	}

	// Admin on a glob may create streams that match it, not others.
	e.user("ops", "admin:acme/log-*")
	ops := e.token("ops")
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams", token: ops, body: []byte(`{"name":"log-app"}`)})
	if rep := e.do(req{method: "POST", path: "/v1/tenants/acme/streams", token: ops, body: []byte(`{"name":"metrics"}`)}); rep.status != http.StatusForbidden {
		t.Fatalf("create outside glob: %d %s", rep.status, rep.body)
	}
}

func TestInsecureDev(t *testing.T) {
	e := newEnv(t, envOptions{auth: func(a *Auth) { a.Insecure = true }})
	var who whoamiJSON
	rep := e.do(req{method: "GET", path: "/v1/whoami"})
	rep.json(t, &who)
	if !who.Insecure {
		t.Fatalf("whoami in insecure mode: %s", rep.body)
	}
	if rep := e.do(req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"dev"}`)}); rep.status != http.StatusCreated {
		t.Fatalf("insecure create: %d %s", rep.status, rep.body)
	}
	// A presented token is still checked.
	nobody := e.user("nobody")
	if rep := e.do(req{method: "GET", path: "/v1/tenants/dev", token: nobody}); rep.status != http.StatusForbidden {
		t.Fatalf("token in insecure mode: %d", rep.status)
	}
	// A read-only token cannot grant itself admin, nor can an unknown one.
	viewer := e.user("viewer", "read:dev")
	grant := []byte(`{"principal":"viewer","action":"admin","resource":"*"}`)
	if rep := e.do(req{method: "POST", path: "/v1/grants", token: viewer, body: grant}); rep.status != http.StatusForbidden {
		t.Fatalf("read-only token grants itself admin in insecure mode: %d %s", rep.status, rep.body)
	}
	if rep := e.do(req{method: "POST", path: "/v1/grants", token: "silt_unknown", body: grant}); rep.status != http.StatusUnauthorized {
		t.Fatalf("unknown token in insecure mode: %d %s", rep.status, rep.body)
	}
	if gs, _ := e.acl.ListGrants("viewer"); len(gs) != 1 || gs[0].Action != acl.Read {
		t.Fatalf("viewer's grants after the attempts: %+v", gs)
	}
}

func TestTenants(t *testing.T) {
	e := newEnv(t)
	var tj tenantJSON
	rep := e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"acme","metadata":{"team":"web"}}`)})
	rep.json(t, &tj)
	if tj.Name != "acme" || tj.Metadata["team"] != "web" || rep.header.Get("Location") != "/v1/tenants/acme" {
		t.Fatalf("created %+v, Location %q", tj, rep.header.Get("Location"))
	}
	cases := map[string]struct {
		r    req
		want int
		code string
	}{
		"duplicate":     {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"acme"}`)}, http.StatusConflict, "already_exists"},
		"bad name":      {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"A_B"}`)}, http.StatusBadRequest, "invalid_argument"},
		"malformed":     {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":`)}, http.StatusBadRequest, "invalid_argument"},
		"syntax":        {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name" "x"}`)}, http.StatusBadRequest, "invalid_argument"},
		"unknown field": {req{method: "POST", path: "/v1/tenants", body: []byte(`{"nmae":"x"}`)}, http.StatusBadRequest, "invalid_argument"},
		"wrong type":    {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":7}`)}, http.StatusBadRequest, "invalid_argument"},
		"empty body":    {req{method: "POST", path: "/v1/tenants"}, http.StatusBadRequest, "invalid_argument"},
		"two values":    {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"x"} {}`)}, http.StatusBadRequest, "invalid_argument"},
		"huge body":     {req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"` + strings.Repeat("a", maxJSONBody) + `"}`)}, http.StatusRequestEntityTooLarge, "too_large"},
		"missing":       {req{method: "GET", path: "/v1/tenants/nosuch"}, http.StatusNotFound, "not_found"},
		"delete gone":   {req{method: "DELETE", path: "/v1/tenants/nosuch"}, http.StatusNotFound, "not_found"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			c.r.token = e.root
			rep := e.do(c.r)
			if rep.status != c.want || rep.errCode(t) != c.code {
				t.Fatalf("%d %s, want %d %s", rep.status, rep.body, c.want, c.code)
			}
		})
	}
	rep = e.do(req{method: "POST", path: "/v1/tenants", token: e.root, body: []byte(`{"nmae":"x"}`)})
	if !strings.Contains(string(rep.body), `unknown field \"nmae\"`) {
		t.Fatalf("unknown field message: %s", rep.body)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme"}).json(t, &tj)
	e.mkStream("acme", "s", "lines", 1)
	rep = e.do(req{method: "DELETE", path: "/v1/tenants/acme", token: e.root})
	if rep.status != http.StatusConflict || rep.errCode(t) != "not_empty" {
		t.Fatalf("delete non-empty: %d %s", rep.status, rep.body)
	}
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme/streams/s"})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme"})
	e.must(http.StatusNotFound, req{method: "GET", path: "/v1/tenants/acme"})
}

func TestStreams(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"acme"}`)})
	var st streamJSON
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams",
		body: []byte(`{"name":"clicks","encoding":"framed","segments":4,"metadata":{"k":"v"},"set":"web"}`)}).json(t, &st)
	if st.Config.Encoding != "framed" || st.Config.Segments != 4 || st.Config.Set != "web" || st.Config.Group != "web" || len(st.Segments) != 4 {
		t.Fatalf("created %+v", st)
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/clicks"}).json(t, &st)
	if len(st.Segments) != 4 || st.Segments[0].KeyLow != 0 || st.Segments[3].KeyHigh != 1<<32-1 {
		t.Fatalf("described %+v", st.Segments)
	}
	var sl streamList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams"}).json(t, &sl)
	if len(sl.Streams) != 1 || sl.Streams[0].Name != "clicks" {
		t.Fatalf("list %+v", sl)
	}
	for name, c := range map[string]struct {
		body string
		want int
	}{
		"duplicate":        {`{"name":"clicks"}`, http.StatusConflict},
		"bad encoding":     {`{"name":"x","encoding":"csv"}`, http.StatusBadRequest},
		"too many":         {`{"name":"x","segments":999}`, http.StatusBadRequest},
		"negative":         {`{"name":"x","segments":-1}`, http.StatusBadRequest},
		"bad name":         {`{"name":".hidden"}`, http.StatusBadRequest},
		"segments as text": {`{"name":"x","segments":"4"}`, http.StatusBadRequest},
	} {
		rep := e.do(req{method: "POST", path: "/v1/tenants/acme/streams", token: e.root, body: []byte(c.body)})
		if rep.status != c.want {
			t.Fatalf("%s: %d %s", name, rep.status, rep.body)
		}
	}
	if rep := e.do(req{method: "POST", path: "/v1/tenants/nosuch/streams", token: e.root, body: []byte(`{"name":"x"}`)}); rep.status != http.StatusNotFound {
		t.Fatalf("stream in missing tenant: %d", rep.status)
	}
	// A stream-set grant covers the stream for every operation.
	web := e.user("web", "read:acme/set:web")
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/clicks", token: web})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/tenants/acme/streams/clicks"})
	e.must(http.StatusNotFound, req{method: "GET", path: "/v1/tenants/acme/streams/clicks"})
}

func TestStreamRetention(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"acme"}`)})
	var st streamJSON
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams",
		body: []byte(`{"name":"kept","retention":{"max_age":"720h","max_bytes":1073741824}}`)}).json(t, &st)
	want := retentionJSON{MaxAge: "720h0m0s", MaxBytes: 1 << 30}
	if st.Config.Retention == nil || *st.Config.Retention != want {
		t.Fatalf("created with retention %+v, want %+v", st.Config.Retention, want)
	}
	st = streamJSON{}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/kept"}).json(t, &st)
	if st.Config.Retention == nil || *st.Config.Retention != want {
		t.Fatalf("described retention %+v, want %+v", st.Config.Retention, want)
	}
	if got, err := e.store.GetStream(context.Background(), "acme", "kept"); err != nil ||
		got.Config.Retention != (core.Retention{MaxAge: 720 * time.Hour, MaxBytes: 1 << 30}) {
		t.Fatalf("stored retention %+v, %v", got.Config.Retention, err)
	}
	// Only one bound, and none: the other is absent (keep forever).
	st = streamJSON{}
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams",
		body: []byte(`{"name":"sized","retention":{"max_bytes":5000}}`)}).json(t, &st)
	if r := st.Config.Retention; r == nil || r.MaxAge != "" || r.MaxBytes != 5000 {
		t.Fatalf("bytes-only retention %+v", r)
	}
	rep := e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams", body: []byte(`{"name":"forever","retention":{"max_age":"0"}}`)})
	if strings.Contains(string(rep.body), "retention") {
		t.Fatalf("zero retention shown: %s", rep.body)
	}
	for name, body := range map[string]string{
		"age not a duration": `{"name":"x","retention":{"max_age":"30 days"}}`,
		"age as a number":    `{"name":"x","retention":{"max_age":3600}}`,
		"negative age":       `{"name":"x","retention":{"max_age":"-1h"}}`,
		"negative bytes":     `{"name":"x","retention":{"max_bytes":-1}}`,
		"bytes as text":      `{"name":"x","retention":{"max_bytes":"1GB"}}`,
		"unknown field":      `{"name":"x","retention":{"max_events":10}}`,
	} {
		rep := e.do(req{method: "POST", path: "/v1/tenants/acme/streams", token: e.root, body: []byte(body)})
		if rep.status != http.StatusBadRequest || rep.errCode(t) != "invalid_argument" {
			t.Fatalf("%s: %d %s", name, rep.status, rep.body)
		}
	}
	if rep := e.do(req{method: "GET", path: "/v1/tenants/acme/streams/x", token: e.root}); rep.status != http.StatusNotFound {
		t.Fatalf("a rejected stream was created: %d", rep.status)
	}
}

func TestAccessManagement(t *testing.T) {
	e := newEnv(t)
	var p acl.PrincipalInfo
	rep := e.must(http.StatusCreated, req{method: "POST", path: "/v1/principals", body: []byte(`{"name":"alice"}`)})
	rep.json(t, &p)
	if p.Name != "alice" {
		t.Fatalf("principal %+v", p)
	}
	e.must(http.StatusConflict, req{method: "POST", path: "/v1/principals", body: []byte(`{"name":"alice"}`)})
	e.must(http.StatusBadRequest, req{method: "POST", path: "/v1/principals", body: []byte(`{"name":"Bad Name"}`)})
	e.must(http.StatusOK, req{method: "GET", path: "/v1/principals/alice"})
	e.must(http.StatusNotFound, req{method: "GET", path: "/v1/principals/bob"})
	var pl principalList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/principals"}).json(t, &pl)
	if len(pl.Principals) != 2 {
		t.Fatalf("principals %+v", pl)
	}

	var tok tokenJSON
	rep = e.must(http.StatusCreated, req{method: "POST", path: "/v1/principals/alice/tokens", body: []byte(`{"label":"ci","ttl":"24h"}`)})
	rep.json(t, &tok)
	if tok.Token == "" || tok.ID == "" || tok.Expires.IsZero() || rep.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token %+v", tok)
	}
	e.must(http.StatusBadRequest, req{method: "POST", path: "/v1/principals/alice/tokens", body: []byte(`{"ttl":"1 day"}`)})
	var forever tokenJSON
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/principals/alice/tokens"}).json(t, &forever)
	if forever.Token == "" || !forever.Expires.IsZero() {
		t.Fatalf("token without a body: %+v", forever)
	}
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/principals/alice/tokens/" + forever.ID})
	var who whoamiJSON
	e.must(http.StatusOK, req{method: "GET", path: "/v1/whoami", token: tok.Token}).json(t, &who)
	if who.Principal != "alice" {
		t.Fatalf("alice's token is %q", who.Principal)
	}
	var tl tokenList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/principals/alice/tokens"}).json(t, &tl)
	if len(tl.Tokens) != 1 || tl.Tokens[0].ID != tok.ID {
		t.Fatalf("tokens %+v", tl)
	}
	if strings.Contains(string(e.must(http.StatusOK, req{method: "GET", path: "/v1/principals/alice/tokens"}).body), tok.Token) {
		t.Fatal("token list shows the secret")
	}

	var g acl.Grant
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/grants", body: []byte(`{"principal":"alice","action":"admin","resource":"*"}`)}).json(t, &g)
	e.must(http.StatusBadRequest, req{method: "POST", path: "/v1/grants", body: []byte(`{"principal":"alice","action":"write","resource":"*"}`)})
	e.must(http.StatusNotFound, req{method: "POST", path: "/v1/grants", body: []byte(`{"principal":"bob","action":"read","resource":"*"}`)})
	var gl grantList
	e.must(http.StatusOK, req{method: "GET", path: "/v1/grants?principal=alice"}).json(t, &gl)
	if len(gl.Grants) != 1 || gl.Grants[0].ID != g.ID {
		t.Fatalf("grants %+v", gl)
	}
	// alice is now an admin herself.
	e.must(http.StatusOK, req{method: "GET", path: "/v1/principals", token: tok.Token})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/grants/" + g.ID})
	e.must(http.StatusNotFound, req{method: "DELETE", path: "/v1/grants/" + g.ID})
	e.must(http.StatusForbidden, req{method: "GET", path: "/v1/principals", token: tok.Token})

	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/principals/alice/tokens/" + tok.ID})
	if rep := e.do(req{method: "GET", path: "/v1/whoami", token: tok.Token}); rep.status != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d", rep.status)
	}
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/principals/alice"})
	e.must(http.StatusNotFound, req{method: "DELETE", path: "/v1/principals/alice"})
}

func TestNoAdminStore(t *testing.T) {
	e := newEnv(t, envOptions{auth: func(a *Auth) { a.Admin = nil }})
	rep := e.do(req{method: "GET", path: "/v1/principals", token: e.root})
	if rep.status != http.StatusNotImplemented || rep.errCode(t) != "not_configured" {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
}

func TestInternalErrorIsGeneric(t *testing.T) {
	e := newEnv(t, envOptions{auth: func(a *Auth) {
		a.Authn = func(string) (acl.Principal, error) {
			return acl.Principal{}, errors.New("disk on fire at /secret/path")
		}
	}})
	rep := e.do(req{method: "GET", path: "/v1/whoami", token: "whatever"})
	if rep.status != http.StatusInternalServerError || strings.Contains(string(rep.body), "secret") {
		t.Fatalf("%d %s", rep.status, rep.body)
	}
	var b errorBody
	rep.json(t, &b)
	if b.Error.RequestID == "" || b.Error.RequestID != rep.header.Get("X-Request-Id") {
		t.Fatalf("request id %q vs header %q", b.Error.RequestID, rep.header.Get("X-Request-Id"))
	}
}

func TestNewValidates(t *testing.T) {
	e := newEnv(t, envOptions{noServer: true})
	cfg := DefaultConfig()
	if _, err := New(cfg, e.store, Auth{}, nil, nil); err == nil {
		t.Fatal("New without Authz succeeded")
	}
	cfg.MaxInflightBytes = testMaxBatch
	if _, err := New(cfg, e.store, Auth{Authz: acl.AllowAll{}}, nil, nil); err == nil {
		t.Fatal("New with a budget below one request succeeded")
	}
	// The insecure mode as silt serve once wired it: every token was
	// allowed everything.
	insecure := Auth{Authn: e.acl.Authenticate, Authz: acl.AllowAll{}, Admin: e.acl, Insecure: true}
	if _, err := New(DefaultConfig(), e.store, insecure, nil, nil); err == nil || !strings.Contains(err.Error(), "real authorizer") {
		t.Fatalf("New with Insecure over AllowAll: %v, want a refusal", err)
	}
	bad := DefaultConfig()
	bad.Listen = "nope"
	if bad.Validate() == nil {
		t.Fatal("bad listen address accepted")
	}
	bad = DefaultConfig()
	bad.MaxWait = 0
	if bad.Validate() == nil {
		t.Fatal("zero max_wait accepted")
	}
	// A second server on the same registry reuses the metrics.
	if _, err := New(DefaultConfig(), e.store, Auth{Authz: acl.AllowAll{}}, nil, e.reg); err != nil {
		t.Fatal(err)
	}
	if _, err := New(DefaultConfig(), e.store, Auth{Authz: acl.AllowAll{}}, nil, e.reg); err != nil {
		t.Fatal(err)
	}
}

// The stream set's former API field "group" and grant spelling
// "<tenant>/group:<set>" still work; "set" and "group" that disagree are
// refused and nothing is created.
func TestStreamSetDeprecatedGroup(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"acme"}`)})
	var st streamJSON
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams",
		body: []byte(`{"name":"clicks","group":"web"}`)}).json(t, &st)
	if st.Config.Set != "web" || st.Config.Group != "web" {
		t.Fatalf("created with group web: set %q, group %q", st.Config.Set, st.Config.Group)
	}
	if got, err := e.store.GetStream(context.Background(), "acme", "clicks"); err != nil || got.Config.Set != "web" {
		t.Fatalf("stored set %q, %v", got.Config.Set, err)
	}
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams",
		body: []byte(`{"name":"views","set":"web","group":"web"}`)})
	rep := e.do(req{method: "POST", path: "/v1/tenants/acme/streams", token: e.root,
		body: []byte(`{"name":"logs","set":"web","group":"ops"}`)})
	if rep.status != http.StatusBadRequest || !strings.Contains(string(rep.body), "deprecated") {
		t.Fatalf("set and group differ: %d %s", rep.status, rep.body)
	}
	e.must(http.StatusNotFound, req{method: "GET", path: "/v1/tenants/acme/streams/logs"})
	web := e.user("web", "read:acme/group:web")
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/clicks", token: web})
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/views", token: web})
}
