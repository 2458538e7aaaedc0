package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// Listings come a page at a time: the server answers at most MaxListPage
// entries and a token for the next page, and a page costs the server what
// it returns, so listing a tenant of a million streams is as cheap per
// entry as listing ten. A page may be short, even empty, while a token
// follows (the server reads a bounded number of names per request and
// shows only those the caller may read); the listing ends where the token
// is empty.

// MaxListPage is the largest page the server answers.
const MaxListPage = 1000

// ListTenantsPage returns one page of the tenants the caller can see,
// starting after the position pageToken names ("" starts at the first),
// and the token of the next page ("" at the end). limit 0 asks for the
// server's default (MaxListPage).
func (c *Client) ListTenantsPage(ctx context.Context, pageToken string, limit int) ([]Tenant, string, error) {
	var out struct {
		Tenants []Tenant `json:"tenants"`
		Next    string   `json:"next_page_token"`
	}
	rq := get("/v1/tenants")
	rq.query = listQuery(pageToken, limit)
	err := c.doJSON(ctx, rq, nil, &out)
	return out.Tenants, out.Next, err
}

// ListStreamsPage returns one page of the streams of tenant that the
// caller may read, as ListTenantsPage does for tenants.
func (c *Client) ListStreamsPage(ctx context.Context, tenant, pageToken string, limit int) ([]Stream, string, error) {
	var out struct {
		Streams []Stream `json:"streams"`
		Next    string   `json:"next_page_token"`
	}
	rq := get(pathOf("v1", "tenants", tenant, "streams"))
	rq.query = listQuery(pageToken, limit)
	err := c.doJSON(ctx, rq, nil, &out)
	return out.Streams, out.Next, err
}

// TenantPages iterates over the pages of the tenant listing; it stops at
// the first error, which it yields.
func (c *Client) TenantPages(ctx context.Context) iter.Seq2[[]Tenant, error] {
	return pages(func(tok string) ([]Tenant, string, error) { return c.ListTenantsPage(ctx, tok, 0) })
}

// StreamPages iterates over the pages of tenant's stream listing; it
// stops at the first error, which it yields.
func (c *Client) StreamPages(ctx context.Context, tenant string) iter.Seq2[[]Stream, error] {
	return pages(func(tok string) ([]Stream, string, error) { return c.ListStreamsPage(ctx, tenant, tok, 0) })
}

// Tenants iterates over every tenant the caller can see, a page at a
// time; it stops at the first error, which it yields.
func (c *Client) Tenants(ctx context.Context) iter.Seq2[Tenant, error] {
	return flatten(c.TenantPages(ctx))
}

// Streams iterates over every stream of tenant the caller may read, a
// page at a time; it stops at the first error, which it yields.
func (c *Client) Streams(ctx context.Context, tenant string) iter.Seq2[Stream, error] {
	return flatten(c.StreamPages(ctx, tenant))
}

// ListTenants lists every tenant the caller can see. It holds the whole
// listing; Tenants and ListTenantsPage do not.
func (c *Client) ListTenants(ctx context.Context) ([]Tenant, error) {
	return collect(c.Tenants(ctx))
}

// ListStreams lists every stream of tenant that the caller may read. It
// holds the whole listing; Streams and ListStreamsPage do not.
func (c *Client) ListStreams(ctx context.Context, tenant string) ([]Stream, error) {
	return collect(c.Streams(ctx, tenant))
}

func listQuery(pageToken string, limit int) url.Values {
	q := url.Values{}
	if pageToken != "" {
		q.Set("page_token", pageToken)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return q
}

// errTokenRepeated stops a listing whose server hands back the token it
// was given, which would otherwise page for ever.
var errTokenRepeated = errors.New("client: the server answered a page token with the same token")

func pages[T any](page func(tok string) ([]T, string, error)) iter.Seq2[[]T, error] {
	return func(yield func([]T, error) bool) {
		tok := ""
		for {
			items, next, err := page(tok)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(items, nil) || next == "" {
				return
			}
			if next == tok {
				yield(nil, fmt.Errorf("%w (%q)", errTokenRepeated, tok))
				return
			}
			tok = next
		}
	}
}

func flatten[T any](seq iter.Seq2[[]T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for page, err := range seq {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	out := []T{}
	for it, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, nil
}
