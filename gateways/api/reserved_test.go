package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

// TestSystemTenantReserved checks that no user, not even an admin on
// "*", can create, delete or write the system tenant, and that the
// refusal names the rule; reading it stays a matter of grants.
func TestSystemTenantReserved(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.store.CreateTenant(ctx, names.SystemTenant, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateStream(ctx, names.SystemTenant, "acme.requests", core.StreamConfig{Encoding: core.EncodingLines, Segments: 1}); err != nil {
		t.Fatal(err)
	}
	sys := "/v1/tenants/" + names.SystemTenant
	cases := map[string]req{
		"create tenant":  {method: "POST", path: "/v1/tenants", body: []byte(`{"name":"silt-system"}`)},
		"delete tenant":  {method: "DELETE", path: sys},
		"create stream":  {method: "POST", path: sys + "/streams", body: []byte(`{"name":"mine"}`)},
		"delete stream":  {method: "DELETE", path: sys + "/streams/acme.requests"},
		"append":         {method: "POST", path: sys + "/streams/acme.requests/events", body: []byte("{\"forged\":1}\n")},
		"create group":   {method: "POST", path: sys + "/groups", body: []byte(`{"name":"g","streams":["acme.requests"]}`)},
		"append unknown": {method: "POST", path: sys + "/streams/nope/events", body: []byte("x\n")},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			r.token = e.root
			rep := e.do(r)
			if rep.status != http.StatusForbidden || rep.errCode(t) != "reserved" {
				t.Fatalf("%s %s: %d %s, want 403 reserved", r.method, r.path, rep.status, rep.body)
			}
			if !strings.Contains(string(rep.body), "reserved for silt's own telemetry") {
				t.Fatalf("message does not name the rule: %s", rep.body)
			}
		})
	}
	// Nothing was written: the stream is still there and empty.
	st, err := e.store.GetStream(ctx, names.SystemTenant, "acme.requests")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.Segments[0].NextOffset; n != 0 {
		t.Fatalf("system stream holds %d events after refused appends, want 0", n)
	}
	// Reading is a grant's business as anywhere else.
	e.must(http.StatusOK, req{method: "GET", path: sys + "/streams/acme.requests/events"})
	// Other tenants' names are not affected.
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"silt-systems"}`)})
}
