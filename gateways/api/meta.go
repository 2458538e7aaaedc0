package api

import (
	_ "embed"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/silt-io/silt/core"
)

// openapiSpec is the API's OpenAPI 3.0 description. It lives beside the
// code (go:embed cannot reach parent directories) and is the only copy;
// docs/api.md links to it, and TestOpenAPIMatchesRoutes keeps it in step
// with routeTable.
//
//go:embed openapi.yaml
var openapiSpec []byte

func (s *Server) healthz(c *call) (op, error) {
	return op{run: func() error {
		writeJSON(c.w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}}, nil
}

// readyz fails while draining, so that load balancers move traffic away
// before connections are closed, when the store cannot answer, and in a
// cluster while etcd is out of reach.
func (s *Server) readyz(c *call) (op, error) {
	return op{run: func() error {
		if s.drain.Err() != nil {
			return &httpError{status: http.StatusServiceUnavailable, code: "shutting_down", msg: "the server is shutting down"}
		}
		// core has no health call; looking up a stream that cannot exist
		// goes through the same path as real requests and fails with
		// ErrClosed once the store is closed.
		_, err := s.store.GetStream(c.r.Context(), "", "")
		if err != nil && !errors.Is(err, core.ErrNotFound) && !errors.Is(err, core.ErrInvalid) {
			return err
		}
		if err := s.clusterReady(); err != nil {
			return err
		}
		// While backpressure refuses every append (tier 1 short of space),
		// a load balancer must be able to tell: not ready, with the reason.
		if r, ok := s.tiering.(interface{ AppendsRefused() error }); ok {
			if err := r.AppendsRefused(); err != nil {
				return &httpError{status: http.StatusServiceUnavailable, code: "appends_refused", msg: err.Error()}
			}
		}
		writeJSON(c.w, http.StatusOK, map[string]string{"status": "ready"})
		return nil
	}}, nil
}

func (s *Server) metricsPage(c *call) (op, error) {
	h := promhttp.HandlerFor(s.gather, promhttp.HandlerOpts{})
	return op{run: func() error {
		h.ServeHTTP(c.w, c.r)
		return nil
	}}, nil
}

func (s *Server) openapi(c *call) (op, error) {
	return op{run: func() error {
		c.w.Header().Set("Content-Type", "application/yaml")
		c.w.WriteHeader(http.StatusOK)
		c.w.Write(openapiSpec)
		return nil
	}}, nil
}

type whoamiJSON struct {
	Principal string `json:"principal"`
	// Insecure is set when the caller is unauthenticated on a server in
	// insecure development mode, and so may do anything.
	Insecure bool `json:"insecure,omitempty"`
}

func (s *Server) whoami(c *call) (op, error) {
	return op{run: func() error {
		writeJSON(c.w, http.StatusOK, whoamiJSON{Principal: c.principal.Name, Insecure: c.superuser})
		return nil
	}}, nil
}
