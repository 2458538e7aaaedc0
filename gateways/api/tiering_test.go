package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/silt-io/silt/core"
)

// stuckTiering is a fault-injecting Tiering: its backlog is over the bound
// for one stream, as when tier 2 is down.
type stuckTiering struct{ stream string }

func (f stuckTiering) Backpressure(tenant, stream string) error {
	if stream == f.stream {
		return fmt.Errorf("%w: stream %s/%s has too much not yet in tier 2", core.ErrUnavailable, tenant, stream)
	}
	return nil
}

func (f stuckTiering) StreamStatus(tenant, stream string) (any, error) {
	if stream == "broken" {
		return nil, errors.New("status unavailable")
	}
	return map[string]any{"segments": []map[string]any{{"segment": "0", "tiered_offset": 7}}}, nil
}

func (f stuckTiering) ReadTiered(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) ([]core.Event, uint64, error) {
	return nil, from, nil
}

func TestTieringBackpressureAndDescribe(t *testing.T) {
	e := newEnv(t)
	e.srv.UseTiering(stuckTiering{stream: "stuck"})
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants", body: []byte(`{"name":"acme"}`)})
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams", body: []byte(`{"name":"stuck"}`)})
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/tenants/acme/streams", body: []byte(`{"name":"fine"}`)})
	rep := e.do(req{method: "POST", path: "/v1/tenants/acme/streams/stuck/events", body: []byte("x"), token: e.root})
	if rep.status != http.StatusServiceUnavailable || rep.header.Get("Retry-After") == "" || !strings.Contains(string(rep.body), "tier 2") {
		t.Fatalf("append to a backlogged stream: %d %q %s", rep.status, rep.header.Get("Retry-After"), rep.body)
	}
	if n := e.nextOffset("acme", "stuck", "0"); n != 0 {
		t.Fatalf("refused append was stored: next offset %d", n)
	}
	e.must(http.StatusOK, req{method: "POST", path: "/v1/tenants/acme/streams/fine/events", body: []byte("x")})
	var desc struct {
		Tiering struct {
			Segments []struct {
				TieredOffset int `json:"tiered_offset"`
			} `json:"segments"`
		} `json:"tiering"`
	}
	e.must(http.StatusOK, req{method: "GET", path: "/v1/tenants/acme/streams/fine"}).json(t, &desc)
	if len(desc.Tiering.Segments) != 1 || desc.Tiering.Segments[0].TieredOffset != 7 {
		t.Fatalf("describe without tiering state: %+v", desc)
	}
}

func (stuckTiering) FirstTiered(context.Context, string, string, string) (uint64, bool, error) {
	return 0, false, nil
}

// fullTiering refuses every append node-wide, as when tier 1 is short of
// space; readiness must say so.
type fullTiering struct {
	stuckTiering
	refused error
}

func (f *fullTiering) AppendsRefused() error { return f.refused }

func TestReadyzWhileAppendsRefused(t *testing.T) {
	e := newEnv(t)
	ft := &fullTiering{}
	e.srv.UseTiering(ft)
	tests := []struct {
		name    string
		refused error
		want    int
	}{
		{"appends accepted", nil, http.StatusOK},
		{"tier 1 full", fmt.Errorf("%w: tier 1 has no space left on device for appends", core.ErrUnavailable), http.StatusServiceUnavailable},
		{"space again", nil, http.StatusOK},
	}
	for _, tc := range tests {
		ft.refused = tc.refused
		r := e.must(tc.want, req{method: "GET", path: "/readyz"})
		if tc.refused != nil && !strings.Contains(string(r.body), "no space left") {
			t.Fatalf("%s: body %s does not say why", tc.name, r.body)
		}
	}
}
