// Package client is the Go SDK for silt's native HTTP API (docs/api.md):
// tenants, streams, appends, reads and follows, principals, tokens and
// grants, a batching Producer whose retries are exactly-once, and a
// GroupReader that shares a reader group's segments with other readers.
// The silt CLI is built on it.
//
// Requests are retried with exponential backoff and full jitter after
// network errors and on 502, 503 (honouring Retry-After) and 504 — but a
// request that may have reached the server is retried only when repeating
// it is harmless: reads, deletes, and appends that carry a writer id and
// sequence number, which the server deduplicates. Other appends and
// creations are retried only when the connection could not be made at all.
// WithRetry sets the number of tries, the first ceiling and the cap.
//
// The long-lived users of connections reconnect beyond one call's tries,
// with the same backoff: a Producer retries a batch with the same sequence
// number until it is acknowledged or ProducerOptions.DeliveryTimeout
// passes; Follow resumes from its last cursor until its context ends; a
// GroupReader retries reads, commits and joins for
// GroupReaderOptions.RetryTimeout, and a reader cut off for longer than
// the session timeout rejoins by itself. docs/api.md ("Go SDK: reconnects")
// lists the settings.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one silt server. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	hc    *http.Client
	token string
	ua    string
	retry retryPolicy
}

type options struct {
	token string
	hc    *http.Client
	tls   *tls.Config
	retry retryPolicy
	ua    string
}

// Option configures a Client.
type Option func(*options) error

// WithToken authenticates every request with the bearer token.
func WithToken(token string) Option {
	return func(o *options) error { o.token = token; return nil }
}

// WithHTTPClient uses hc instead of a client of its own. Leave hc.Timeout
// zero: it would also cut off long-polls and follows.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *options) error {
		if hc == nil {
			return errors.New("client: nil http.Client")
		}
		o.hc = hc
		return nil
	}
}

// WithTLSConfig uses cfg for HTTPS (for instance with RootCAs from the
// CLI's --ca-file). With WithHTTPClient, that client's transport must be
// an *http.Transport; it is copied, not modified.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(o *options) error { o.tls = cfg; return nil }
}

// WithRetry sets how often and how patiently requests are retried:
// at most maxAttempts tries in all (1 disables retries), sleeping a random
// time up to baseDelay·2ⁿ, capped at maxDelay, between them.
func WithRetry(maxAttempts int, baseDelay, maxDelay time.Duration) Option {
	return func(o *options) error {
		if maxAttempts < 1 || baseDelay <= 0 || maxDelay < baseDelay {
			return fmt.Errorf("client: retry: want maxAttempts >= 1 and 0 < baseDelay <= maxDelay")
		}
		o.retry = retryPolicy{attempts: maxAttempts, base: baseDelay, max: maxDelay}
		return nil
	}
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option {
	return func(o *options) error { o.ua = ua; return nil }
}

// New returns a client for the server at baseURL ("http://127.0.0.1:7070").
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("client: base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http://host:port or https://host:port", baseURL)
	}
	o := options{
		retry: retryPolicy{attempts: 4, base: 100 * time.Millisecond, max: 5 * time.Second},
		ua:    "silt-go-client",
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, err
		}
	}
	hc := o.hc
	if hc == nil {
		// The SDK's own transport (h1.go), with the TLS config if any.
		return &Client{base: u, hc: &http.Client{Transport: newH1Transport(o.tls)}, token: o.token, ua: o.ua, retry: o.retry}, nil
	}
	if o.tls != nil {
		rt := hc.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		t, ok := rt.(*http.Transport)
		if !ok {
			return nil, fmt.Errorf("client: WithTLSConfig needs an *http.Transport, the HTTP client has %T", rt)
		}
		t = t.Clone()
		t.TLSClientConfig = o.tls.Clone()
		copied := *hc
		copied.Transport = t
		hc = &copied
	}
	return &Client{base: u, hc: hc, token: o.token, ua: o.ua, retry: o.retry}, nil
}

// request describes one API call.
type request struct {
	method      string
	path        string // escaped, from pathOf
	query       url.Values
	header      http.Header
	body        []byte
	contentType string
	// idempotent requests may be retried even when they may have reached
	// the server.
	idempotent bool
	// once disables retries (Follow does its own).
	once bool
}

// pathOf joins escaped path segments.
func pathOf(parts ...string) string {
	var sb strings.Builder
	for _, p := range parts {
		sb.WriteByte('/')
		sb.WriteString(url.PathEscape(p))
	}
	return sb.String()
}

func (c *Client) newRequest(ctx context.Context, rq request) (*http.Request, error) {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + rq.path
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		return nil, fmt.Errorf("client: path %q: %w", rq.path, err)
	}
	u.Path = p
	if len(rq.query) > 0 {
		u.RawQuery = rq.query.Encode()
	}
	var body io.Reader
	if rq.body != nil {
		body = bytes.NewReader(rq.body)
	}
	req, err := http.NewRequestWithContext(ctx, rq.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range rq.header {
		req.Header[k] = v
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	req.Header.Set("User-Agent", c.ua)
	return req, nil
}

// do sends rq, retrying as the policy and rq allow, and returns a 2xx
// response whose body the caller must close. Other statuses become
// *APIError.
func (c *Client) do(ctx context.Context, rq request) (*http.Response, error) {
	attempts := c.retry.attempts
	if rq.once {
		attempts = 1
	}
	for attempt := 1; ; attempt++ {
		req, err := c.newRequest(ctx, rq)
		if err != nil {
			return nil, err
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if attempt >= attempts || !(rq.idempotent || notSent(err)) {
				return nil, fmt.Errorf("silt: %s %s: %w", rq.method, rq.path, err)
			}
			if err := sleep(ctx, c.retry.delay(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		if resp.StatusCode < 300 {
			return resp, nil
		}
		apiErr := readAPIError(resp)
		if attempt >= attempts || !rq.idempotent || !retryableStatus(resp.StatusCode) {
			return nil, apiErr
		}
		d := c.retry.delay(attempt)
		if ra, ok := retryAfter(resp.Header.Get("Retry-After")); ok {
			d = ra
		}
		if err := sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

// doJSON sends rq with v (if not nil) as its JSON body and decodes the
// response into out (if not nil).
func (c *Client) doJSON(ctx context.Context, rq request, in, out any) error {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("client: encode request: %w", err)
		}
		rq.body, rq.contentType = b, "application/json"
	}
	resp, err := c.do(ctx, rq)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("silt: %s %s: decode response: %w", rq.method, rq.path, err)
	}
	return nil
}

// notSent reports whether err shows that the request never left: the
// connection could not be made, so even a non-idempotent request may be
// sent again.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns)
}

func retryableStatus(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// retryable reports whether an error from a call may go away by itself:
// network errors and 502/503/504. Context errors are not.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return retryableStatus(ae.Status) || ae.Code == "unavailable" || ae.Code == "overloaded" || ae.Code == "shutting_down"
	}
	var ce *callbackError
	return !errors.As(err, &ce)
}

func retryAfter(v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

type retryPolicy struct {
	attempts  int
	base, max time.Duration
}

// delay is the sleep before retry number attempt (from 1): full jitter
// over an exponentially growing ceiling, so that clients refused together
// do not come back together.
func (p retryPolicy) delay(attempt int) time.Duration {
	ceil := p.max
	if attempt < 32 {
		if d := p.base << (attempt - 1); d > 0 && d < p.max {
			ceil = d
		}
	}
	return rand.N(ceil) + 1
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseIdleConnections closes the connections kept open for reuse; the
// client stays usable. Pooled connections also close by themselves once
// idle for 90 seconds.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }
