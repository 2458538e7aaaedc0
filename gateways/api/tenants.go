package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

// Tenants and streams. Creating and deleting tenants is server-wide admin
// (a tenant is the isolation unit, so making one is not a tenant's own
// business); everything inside a tenant is checked on the tenant or the
// stream.

func (s *Server) createTenant(c *call) (op, error) {
	var req createTenantRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	// Names are checked before access, as path names are (routes.go).
	if err := names.Tenant(req.Name); err != nil {
		return op{}, err
	}
	if err := names.CheckWritable(req.Name, "create"); err != nil {
		return op{}, err
	}
	return op{res: acl.Resource{}, run: func() error {
		t, err := s.store.CreateTenant(c.r.Context(), req.Name, req.Metadata)
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/tenants/"+url.PathEscape(t.Name))
		writeJSON(c.w, http.StatusCreated, toTenantJSON(t))
		return nil
	}}, nil
}

func (s *Server) getTenant(c *call) (op, error) {
	name := c.r.PathValue("tenant")
	return op{res: acl.Resource{Tenant: name}, run: func() error {
		t, err := s.store.GetTenant(c.r.Context(), name)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, toTenantJSON(t))
		return nil
	}}, nil
}

func (s *Server) deleteTenant(c *call) (op, error) {
	name := c.r.PathValue("tenant")
	return op{res: acl.Resource{}, run: func() error {
		// A group outlives its streams (it can only be deleted then), but
		// not its tenant: a tenant created again under the name would
		// find it.
		if s.groups != nil {
			if gs := s.groups.List(name); len(gs) > 0 {
				return fmt.Errorf("%w: tenant %q has %d reader group(s), such as %q; delete them first", core.ErrNotEmpty, name, len(gs), gs[0].Name)
			}
		}
		if err := s.store.DeleteTenant(c.r.Context(), name); err != nil {
			return err
		}
		s.producers.ForgetTenant(name)
		if s.intro != nil {
			s.intro.ForgetTenant(c.r.Context(), name)
		}
		noContent(c.w)
		return nil
	}}, nil
}

func (s *Server) createStream(c *call) (op, error) {
	tenant := c.r.PathValue("tenant")
	var req createStreamRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	enc := core.Encoding(req.Encoding)
	if enc != "" && !enc.Valid() {
		return op{}, badRequest("encoding %q: want %q or %q", req.Encoding, core.EncodingLines, core.EncodingFramed)
	}
	// The new names go into the resource checked below: a name that
	// cannot exist must be refused as such first, whoever asks.
	if err := names.Stream(req.Name); err != nil {
		return op{}, err
	}
	switch {
	case req.Set == "":
		req.Set = req.Group
	case req.Group != "" && req.Group != req.Set:
		return op{}, badRequest("set %q and group %q differ; group is the deprecated name of set, give only set", req.Set, req.Group)
	}
	if req.Set != "" {
		if err := names.Stream(req.Set); err != nil {
			return op{}, badRequest("set follows the stream-name rules: %v", err)
		}
	}
	if req.Segments < 0 {
		return op{}, badRequest("segments must not be negative (0 takes the server default)")
	}
	ret, err := req.Retention.toCore()
	if err != nil {
		return op{}, err
	}
	// The new stream's name and set are part of the resource, so that
	// admin on a glob or set that will cover the stream allows creating
	// it, while admin on some other stream does not.
	res := acl.Resource{Tenant: tenant, Stream: req.Name, Set: req.Set}
	return op{res: res, run: func() error {
		st, err := s.store.CreateStream(c.r.Context(), tenant, req.Name, core.StreamConfig{
			Encoding: enc, Segments: req.Segments, Metadata: req.Metadata, Set: req.Set, Retention: ret,
			TierPrefix: req.TierPrefix,
		})
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/tenants/"+url.PathEscape(tenant)+"/streams/"+url.PathEscape(st.Name))
		writeJSON(c.w, http.StatusCreated, toStreamJSON(st))
		return nil
	}}, nil
}

// streamTarget looks the path's stream up so that the check can include its
// stream set: a set grant must cover every operation on its streams. A failed
// lookup is returned only after the check, so that callers without access
// cannot probe which streams exist.
func (s *Server) streamTarget(c *call) (core.Stream, acl.Resource, error) {
	tenant, name := c.r.PathValue("tenant"), c.r.PathValue("stream")
	st, err := s.store.GetStream(c.r.Context(), tenant, name)
	return st, acl.Resource{Tenant: tenant, Stream: name, Set: st.Config.Set}, err
}

func (s *Server) getStream(c *call) (op, error) {
	st, res, lookupErr := s.streamTarget(c)
	return op{res: res, run: func() error {
		if lookupErr != nil {
			return lookupErr
		}
		out := toStreamJSON(st)
		if s.tiering != nil {
			tier, err := s.tiering.StreamStatus(st.Tenant, st.Name)
			if err != nil {
				return err
			}
			out.Tiering = tier
		}
		writeJSON(c.w, http.StatusOK, out)
		return nil
	}}, nil
}

func (s *Server) deleteStream(c *call) (op, error) {
	_, res, lookupErr := s.streamTarget(c)
	return op{res: res, run: func() error {
		if lookupErr != nil {
			return lookupErr
		}
		if err := s.store.DeleteStream(c.r.Context(), res.Tenant, res.Stream); err != nil {
			return err
		}
		s.producers.ForgetStream(res.Tenant, res.Stream)
		noContent(c.w)
		return nil
	}}, nil
}
