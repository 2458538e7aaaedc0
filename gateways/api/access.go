package api

import (
	"net/http"
	"net/url"
	"time"

	"github.com/silt-io/silt/acl"
)

// Principals, tokens and grants: all server-wide admin, checked on
// acl.Resource{} by the route table.

var errNoAdmin = &httpError{status: http.StatusNotImplemented, code: "not_configured",
	msg: "this server has no principal store; principals, tokens and grants cannot be managed"}

// adminOp builds the op of an access-management route, or refuses when the
// server has no acl.Store.
func (s *Server) adminOp(run func(a *acl.Store) error) (op, error) {
	if s.auth.Admin == nil {
		return op{}, errNoAdmin
	}
	return op{res: acl.Resource{}, run: func() error { return run(s.auth.Admin) }}, nil
}

type principalList struct {
	Principals []acl.PrincipalInfo `json:"principals"`
}

type tokenList struct {
	Tokens []acl.TokenInfo `json:"tokens"`
}

type grantList struct {
	Grants []acl.Grant `json:"grants"`
}

func (s *Server) createPrincipal(c *call) (op, error) {
	var req createPrincipalRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	return s.adminOp(func(a *acl.Store) error {
		p, err := a.CreatePrincipal(req.Name)
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/principals/"+url.PathEscape(p.Name))
		writeJSON(c.w, http.StatusCreated, p)
		return nil
	})
}

func (s *Server) listPrincipals(c *call) (op, error) {
	return s.adminOp(func(a *acl.Store) error {
		ps, err := a.ListPrincipals()
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, principalList{Principals: nonNil(ps)})
		return nil
	})
}

func (s *Server) getPrincipal(c *call) (op, error) {
	name := c.r.PathValue("principal")
	return s.adminOp(func(a *acl.Store) error {
		p, err := a.GetPrincipal(name)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, p)
		return nil
	})
}

func (s *Server) deletePrincipal(c *call) (op, error) {
	name := c.r.PathValue("principal")
	return s.adminOp(func(a *acl.Store) error {
		if err := a.DeletePrincipal(name); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}

func (s *Server) issueToken(c *call) (op, error) {
	name := c.r.PathValue("principal")
	// The body is optional: a token without label or expiry needs none.
	var req issueTokenRequest
	if err := c.decodeJSON(&req); err != nil && err != errEmptyJSON {
		return op{}, err
	}
	var ttl time.Duration
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d < 0 {
			return op{}, badRequest("ttl %q: want a Go duration such as \"24h\" or \"90m\" (\"0\" never expires)", req.TTL)
		}
		ttl = d
	}
	return s.adminOp(func(a *acl.Store) error {
		secret, info, err := a.IssueToken(name, req.Label, ttl)
		if err != nil {
			return err
		}
		// The secret is not stored and cannot be shown again; say so to
		// any cache on the way.
		c.w.Header().Set("Cache-Control", "no-store")
		writeJSON(c.w, http.StatusCreated, tokenJSON{TokenInfo: info, Token: secret})
		return nil
	})
}

func (s *Server) listTokens(c *call) (op, error) {
	name := c.r.PathValue("principal")
	return s.adminOp(func(a *acl.Store) error {
		ts, err := a.ListTokens(name)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, tokenList{Tokens: nonNil(ts)})
		return nil
	})
}

func (s *Server) revokeToken(c *call) (op, error) {
	name, id := c.r.PathValue("principal"), c.r.PathValue("token")
	return s.adminOp(func(a *acl.Store) error {
		if err := a.RevokeToken(name, id); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}

func (s *Server) addGrant(c *call) (op, error) {
	var req addGrantRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	action, err := acl.ParseAction(req.Action)
	if err != nil {
		return op{}, err
	}
	return s.adminOp(func(a *acl.Store) error {
		g, err := a.AddGrant(req.Principal, action, req.Resource)
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/grants/"+url.PathEscape(g.ID))
		writeJSON(c.w, http.StatusCreated, g)
		return nil
	})
}

func (s *Server) listGrants(c *call) (op, error) {
	principal := c.r.URL.Query().Get("principal")
	return s.adminOp(func(a *acl.Store) error {
		gs, err := a.ListGrants(principal)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, grantList{Grants: nonNil(gs)})
		return nil
	})
}

func (s *Server) removeGrant(c *call) (op, error) {
	id := c.r.PathValue("grant")
	return s.adminOp(func(a *acl.Store) error {
		if err := a.RemoveGrant(id); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}

// nonNil makes empty lists encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
