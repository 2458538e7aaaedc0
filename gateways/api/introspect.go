package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/internal/httpmetrics"
)

// Introspection is what the API needs of the introspection store
// (introspect.Recorder): an event per answered request, the deletion of
// a deleted tenant's system streams, and the health summary read back
// from the system streams. The server wiring passes it in.
type Introspection interface {
	// ObserveRequest queues the request's event; it never blocks.
	ObserveRequest(httpmetrics.Request)
	// ForgetTenant deletes the system streams of a deleted tenant.
	ForgetTenant(ctx context.Context, tenant string)
	// Health summarises the events of the last window: of tenant, or of
	// every tenant and the server for "".
	Health(ctx context.Context, tenant string, window time.Duration) (any, error)
}

// UseIntrospection connects the introspection store. Call it before
// serving; without it requests make no events and /v1/health answers 501.
func (s *Server) UseIntrospection(in Introspection) { s.intro = in }

// ReadSegment reads a segment from tier 1, or from tier 2 below what tier
// 1 holds, as the events route does (for readers of system streams).
func (s *Server) ReadSegment(ctx context.Context, req core.ReadRequest) (core.ReadResult, error) {
	return s.readSegment(ctx, req)
}

// OldestOffset is the first offset of a segment either tier holds.
func (s *Server) OldestOffset(ctx context.Context, tenant, stream string, sg core.SegmentInfo) (uint64, error) {
	return s.oldestOffset(ctx, tenant, stream, sg)
}

const (
	defaultHealthWindow = 5 * time.Minute
	maxHealthWindow     = 24 * time.Hour
)

// health answers GET /v1/health: admin on "*" for the whole server, or,
// with tenant=, admin on that tenant for its own view.
func (s *Server) health(c *call) (op, error) {
	q := c.r.URL.Query()
	tenant := q.Get("tenant")
	if tenant != "" {
		if err := names.Tenant(tenant); err != nil {
			return op{}, err
		}
	}
	window := defaultHealthWindow
	if v := q.Get("minutes"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 || time.Duration(n)*time.Minute > maxHealthWindow {
			return op{}, badRequest("minutes %q: want a whole number of minutes from 1 to %d", v, int(maxHealthWindow/time.Minute))
		}
		window = time.Duration(n) * time.Minute
	}
	return op{res: acl.Resource{Tenant: tenant}, run: func() error {
		if s.intro == nil {
			return &httpError{status: http.StatusNotImplemented, code: "not_implemented",
				msg: "introspection is off on this server (introspect.enabled=false): there are no events to summarise"}
		}
		if tenant != "" {
			if _, err := s.store.GetTenant(c.r.Context(), tenant); err != nil {
				return err
			}
		}
		rep, err := s.intro.Health(c.r.Context(), tenant, window)
		if err != nil {
			return fmt.Errorf("health: %w", err)
		}
		writeJSON(c.w, http.StatusOK, rep)
		return nil
	}}, nil
}
