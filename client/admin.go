package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Health checks that the server is alive (GET /healthz).
func (c *Client) Health(ctx context.Context) error {
	return c.doJSON(ctx, request{method: http.MethodGet, path: "/healthz", idempotent: true}, nil, nil)
}

// Ready checks that the server can serve (GET /readyz); it fails while the
// server drains.
func (c *Client) Ready(ctx context.Context) error {
	return c.doJSON(ctx, request{method: http.MethodGet, path: "/readyz", idempotent: true, once: true}, nil, nil)
}

// Whoami returns the name of the principal the client's token stands for.
func (c *Client) Whoami(ctx context.Context) (string, error) {
	var out struct {
		Principal string `json:"principal"`
	}
	err := c.doJSON(ctx, request{method: http.MethodGet, path: "/v1/whoami", idempotent: true}, nil, &out)
	return out.Principal, err
}

func get(path string) request { return request{method: http.MethodGet, path: path, idempotent: true} }
func del(path string) request {
	return request{method: http.MethodDelete, path: path, idempotent: true}
}
func create(path string) request { return request{method: http.MethodPost, path: path} }

// CreateTenant creates a tenant.
func (c *Client) CreateTenant(ctx context.Context, name string, metadata map[string]string) (Tenant, error) {
	var t Tenant
	in := map[string]any{"name": name}
	if len(metadata) > 0 {
		in["metadata"] = metadata
	}
	err := c.doJSON(ctx, create("/v1/tenants"), in, &t)
	return t, err
}

// GetTenant describes one tenant.
func (c *Client) GetTenant(ctx context.Context, name string) (Tenant, error) {
	var t Tenant
	err := c.doJSON(ctx, get(pathOf("v1", "tenants", name)), nil, &t)
	return t, err
}

// DeleteTenant deletes an empty tenant (a conflict while it has streams).
// A delete retried after a lost answer may report not-found.
func (c *Client) DeleteTenant(ctx context.Context, name string) error {
	return c.doJSON(ctx, del(pathOf("v1", "tenants", name)), nil, nil)
}

// CreateStream creates a stream in tenant.
func (c *Client) CreateStream(ctx context.Context, tenant string, spec StreamSpec) (Stream, error) {
	var st Stream
	err := c.doJSON(ctx, create(pathOf("v1", "tenants", tenant, "streams")), spec, &st)
	return st, err
}

// GetStream describes a stream including its segments.
func (c *Client) GetStream(ctx context.Context, tenant, name string) (Stream, error) {
	var st Stream
	err := c.doJSON(ctx, get(pathOf("v1", "tenants", tenant, "streams", name)), nil, &st)
	return st, err
}

// DeleteStream deletes a stream and its data.
func (c *Client) DeleteStream(ctx context.Context, tenant, name string) error {
	return c.doJSON(ctx, del(pathOf("v1", "tenants", tenant, "streams", name)), nil, nil)
}

// CreatePrincipal creates a principal (server-wide admin).
func (c *Client) CreatePrincipal(ctx context.Context, name string) (Principal, error) {
	var p Principal
	err := c.doJSON(ctx, create("/v1/principals"), map[string]string{"name": name}, &p)
	return p, err
}

// ListPrincipals lists every principal.
func (c *Client) ListPrincipals(ctx context.Context) ([]Principal, error) {
	var out struct {
		Principals []Principal `json:"principals"`
	}
	err := c.doJSON(ctx, get("/v1/principals"), nil, &out)
	return out.Principals, err
}

// GetPrincipal describes one principal.
func (c *Client) GetPrincipal(ctx context.Context, name string) (Principal, error) {
	var p Principal
	err := c.doJSON(ctx, get(pathOf("v1", "principals", name)), nil, &p)
	return p, err
}

// DeletePrincipal deletes a principal with its tokens and grants.
func (c *Client) DeletePrincipal(ctx context.Context, name string) error {
	return c.doJSON(ctx, del(pathOf("v1", "principals", name)), nil, nil)
}

// IssueToken creates a bearer token for principal; ttl 0 never expires.
// The returned Token's Secret is shown this once.
func (c *Client) IssueToken(ctx context.Context, principal, label string, ttl time.Duration) (Token, error) {
	in := map[string]string{}
	if label != "" {
		in["label"] = label
	}
	if ttl != 0 {
		in["ttl"] = ttl.String()
	}
	var t Token
	err := c.doJSON(ctx, create(pathOf("v1", "principals", principal, "tokens")), in, &t)
	return t, err
}

// ListTokens lists a principal's tokens (without secrets).
func (c *Client) ListTokens(ctx context.Context, principal string) ([]Token, error) {
	var out struct {
		Tokens []Token `json:"tokens"`
	}
	err := c.doJSON(ctx, get(pathOf("v1", "principals", principal, "tokens")), nil, &out)
	return out.Tokens, err
}

// RevokeToken revokes one of a principal's tokens by id.
func (c *Client) RevokeToken(ctx context.Context, principal, id string) error {
	return c.doJSON(ctx, del(pathOf("v1", "principals", principal, "tokens", id)), nil, nil)
}

// AddGrant allows principal action on resource.
func (c *Client) AddGrant(ctx context.Context, principal, action, resource string) (Grant, error) {
	var g Grant
	in := map[string]string{"principal": principal, "action": action, "resource": resource}
	err := c.doJSON(ctx, create("/v1/grants"), in, &g)
	return g, err
}

// ListGrants lists the grants of principal, or every grant for "".
func (c *Client) ListGrants(ctx context.Context, principal string) ([]Grant, error) {
	rq := get("/v1/grants")
	if principal != "" {
		rq.query = url.Values{"principal": {principal}}
	}
	var out struct {
		Grants []Grant `json:"grants"`
	}
	err := c.doJSON(ctx, rq, nil, &out)
	return out.Grants, err
}

// RemoveGrant removes a grant by id.
func (c *Client) RemoveGrant(ctx context.Context, id string) error {
	return c.doJSON(ctx, del(pathOf("v1", "grants", id)), nil, nil)
}

// S3Key is an access key for the S3 head. SecretAccessKey is only set in
// the answer to IssueS3Key.
type S3Key struct {
	AccessKeyID     string    `json:"access_key_id"`
	SecretAccessKey string    `json:"secret_access_key,omitempty"`
	Principal       string    `json:"principal"`
	Created         time.Time `json:"created,omitzero"`
}

// IssueS3Key creates an S3 access key for principal.
func (c *Client) IssueS3Key(ctx context.Context, principal string) (S3Key, error) {
	var k S3Key
	err := c.doJSON(ctx, create(pathOf("v1", "principals", principal, "s3-keys")), nil, &k)
	return k, err
}

// ListS3Keys lists a principal's S3 access keys, without secrets.
func (c *Client) ListS3Keys(ctx context.Context, principal string) ([]S3Key, error) {
	var out struct {
		Keys []S3Key `json:"keys"`
	}
	err := c.doJSON(ctx, get(pathOf("v1", "principals", principal, "s3-keys")), nil, &out)
	return out.Keys, err
}

// RevokeS3Key deletes an S3 access key.
func (c *Client) RevokeS3Key(ctx context.Context, accessKeyID string) error {
	return c.doJSON(ctx, del(pathOf("v1", "s3-keys", accessKeyID)), nil, nil)
}

// DelegationToken is a live WebHDFS delegation token as an admin sees it
// (no password).
type DelegationToken struct {
	ID      int32     `json:"id"`
	Owner   string    `json:"owner"`
	Renewer string    `json:"renewer"`
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`  // unless renewed before
	MaxDate time.Time `json:"max_date"` // no renewal goes past it
}

// ListDelegationTokens lists the WebHDFS head's live delegation tokens,
// only owner's unless owner is "".
func (c *Client) ListDelegationTokens(ctx context.Context, owner string) ([]DelegationToken, error) {
	rq := get(pathOf("v1", "delegation-tokens"))
	if owner != "" {
		rq.query = url.Values{"owner": {owner}}
	}
	var out struct {
		Tokens []DelegationToken `json:"tokens"`
	}
	err := c.doJSON(ctx, rq, nil, &out)
	return out.Tokens, err
}

// CancelDelegationToken ends a WebHDFS delegation token by its id.
func (c *Client) CancelDelegationToken(ctx context.Context, id int32) error {
	return c.doJSON(ctx, del(pathOf("v1", "delegation-tokens", strconv.FormatInt(int64(id), 10))), nil, nil)
}
