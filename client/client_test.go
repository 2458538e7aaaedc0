package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

func TestAdminRoundTrip(t *testing.T) {
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	if err := c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if who, err := c.Whoami(ctx); err != nil || who != "root" {
		t.Fatalf("whoami %q %v", who, err)
	}
	tn, err := c.CreateTenant(ctx, "acme", map[string]string{"team": "web"})
	if err != nil || tn.Name != "acme" || tn.Metadata["team"] != "web" {
		t.Fatalf("create tenant %+v %v", tn, err)
	}
	if _, err := c.CreateTenant(ctx, "acme", nil); !IsExists(err) || !IsConflict(err) {
		t.Fatalf("duplicate tenant: %v", err)
	}
	if _, err := c.GetTenant(ctx, "nosuch"); !IsNotFound(err) {
		t.Fatalf("missing tenant: %v", err)
	}
	if ts, err := c.ListTenants(ctx); err != nil || len(ts) != 1 {
		t.Fatalf("list tenants %v %v", ts, err)
	}
	st, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "clicks", Encoding: EncodingFramed, Segments: 3, Set: "web"})
	if err != nil || len(st.Segments) != 3 || st.Config.Encoding != EncodingFramed || st.Config.Set != "web" {
		t.Fatalf("create stream %+v %v", st, err)
	}
	if _, err := c.CreateStream(ctx, "acme", StreamSpec{Name: "bad", Encoding: "csv"}); !IsInvalid(err) {
		t.Fatalf("bad encoding: %v", err)
	}
	if got, err := c.GetStream(ctx, "acme", "clicks"); err != nil || len(got.Segments) != 3 {
		t.Fatalf("get stream %+v %v", got, err)
	}
	if ss, err := c.ListStreams(ctx, "acme"); err != nil || len(ss) != 1 || ss[0].Name != "clicks" {
		t.Fatalf("list streams %+v %v", ss, err)
	}
	if err := c.DeleteTenant(ctx, "acme"); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("delete non-empty tenant: %v", err)
	}

	p, err := c.CreatePrincipal(ctx, "alice")
	if err != nil || p.Name != "alice" {
		t.Fatalf("create principal %+v %v", p, err)
	}
	if got, err := c.GetPrincipal(ctx, "alice"); err != nil || got.Name != "alice" {
		t.Fatalf("get principal %+v %v", got, err)
	}
	if ps, err := c.ListPrincipals(ctx); err != nil || len(ps) != 2 {
		t.Fatalf("list principals %+v %v", ps, err)
	}
	tok, err := c.IssueToken(ctx, "alice", "laptop", time.Hour)
	if err != nil || tok.Secret == "" || tok.Expires.IsZero() {
		t.Fatalf("issue token %+v %v", tok, err)
	}
	if ts, err := c.ListTokens(ctx, "alice"); err != nil || len(ts) != 1 || ts[0].Secret != "" {
		t.Fatalf("list tokens %+v %v", ts, err)
	}
	alice := s.client(t, WithToken(tok.Secret))
	if who, _ := alice.Whoami(ctx); who != "alice" {
		t.Fatalf("alice is %q", who)
	}
	if _, err := alice.GetStream(ctx, "acme", "clicks"); !IsForbidden(err) {
		t.Fatalf("ungranted read: %v", err)
	}
	g, err := c.AddGrant(ctx, "alice", "read", "acme/group:web")
	if err != nil || g.Action != "read" {
		t.Fatalf("add grant %+v %v", g, err)
	}
	if gs, err := c.ListGrants(ctx, "alice"); err != nil || len(gs) != 1 || gs[0].ID != g.ID {
		t.Fatalf("list grants %+v %v", gs, err)
	}
	if _, err := alice.GetStream(ctx, "acme", "clicks"); err != nil {
		t.Fatalf("granted read: %v", err)
	}
	if err := c.RemoveGrant(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.RevokeToken(ctx, "alice", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Whoami(ctx); !IsUnauthenticated(err) {
		t.Fatalf("revoked token: %v", err)
	}
	if err := c.DeletePrincipal(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteStream(ctx, "acme", "clicks"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteTenant(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	var ae *APIError
	_, err = c.GetTenant(ctx, "acme")
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "not_found" || ae.RequestID == "" {
		t.Fatalf("APIError %#v", err)
	}
}

func TestAppendAndRead(t *testing.T) {
	s := newServer(t)
	c := s.client(t)
	ctx := t.Context()
	c.CreateTenant(ctx, "acme", nil)
	c.CreateStream(ctx, "acme", StreamSpec{Name: "logs", Segments: 2})
	res, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte("a"), []byte("b")}, AppendOptions{Segment: "1"})
	if err != nil || res.Segment != "1" || res.Count != 2 || res.FirstOffset != 0 {
		t.Fatalf("append %+v %v", res, err)
	}
	if _, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte("x\ny")}, AppendOptions{}); !IsInvalid(err) {
		t.Fatalf("newline in a lines stream: %v", err)
	}
	if _, err := c.Append(ctx, "acme", "logs", [][]byte{make([]byte, 2<<20)}, AppendOptions{}); !IsTooLarge(err) {
		t.Fatalf("oversize event: %v", err)
	}
	// Idempotent retry.
	opts := AppendOptions{Segment: "0", WriterID: "w", Seq: 7}
	first, _ := c.Append(ctx, "acme", "logs", [][]byte{[]byte("c")}, opts)
	again, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte("c")}, opts)
	if err != nil || !again.Duplicate || again.FirstOffset != first.FirstOffset {
		t.Fatalf("retry %+v %v", again, err)
	}
	opts.Seq = 3
	if _, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte("d")}, opts); !errors.Is(err, ErrSeqConflict) {
		t.Fatalf("old seq: %v", err)
	}

	b, err := c.Read(ctx, "acme", "logs", ReadOptions{})
	if err != nil || len(b.Events) != 3 || b.NextCursor == "" {
		t.Fatalf("read %+v %v", b, err)
	}
	b2, err := c.Read(ctx, "acme", "logs", ReadOptions{Cursor: b.NextCursor})
	if err != nil || len(b2.Events) != 0 {
		t.Fatalf("read at the end %+v %v", b2, err)
	}
	one, err := c.Read(ctx, "acme", "logs", ReadOptions{Segment: "1", From: 1})
	if err != nil || len(one.Events) != 1 || string(one.Events[0].Data) != "b" || one.Events[0].Segment != "1" {
		t.Fatalf("segment read %+v %v", one, err)
	}
	if _, err := c.Read(ctx, "acme", "logs", ReadOptions{Segment: "1", From: 99}); !IsOutOfRange(err) {
		t.Fatalf("past the end: %v", err)
	}
	end, err := c.Read(ctx, "acme", "logs", ReadOptions{Segment: "1", FromEnd: true, Wait: 50 * time.Millisecond})
	if err != nil || len(end.Events) != 0 {
		t.Fatalf("from end %+v %v", end, err)
	}
	// Long-poll picks up a later append.
	go func() {
		time.Sleep(50 * time.Millisecond)
		c.Append(context.Background(), "acme", "logs", [][]byte{[]byte("late")}, AppendOptions{})
	}()
	late, err := c.Read(ctx, "acme", "logs", ReadOptions{Cursor: b.NextCursor, Wait: 10 * time.Second})
	if err != nil || len(late.Events) != 1 || string(late.Events[0].Data) != "late" {
		t.Fatalf("long-poll %+v %v", late, err)
	}
}

// flaky503 answers the first n requests with 503 and Retry-After.
func flaky503(n int32, calls *atomic.Int32) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) <= n {
				w.Header().Set("Retry-After", "0")
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"error":{"code":"overloaded","message":"busy"}}`)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

func TestRetries(t *testing.T) {
	var calls atomic.Int32
	s := newServer(t, serverOptions{wrap: flaky503(2, &calls)})
	c := s.client(t)
	ctx := t.Context()
	// Reads are retried through 503s.
	if _, err := c.ListTenants(ctx); err != nil {
		t.Fatalf("retried read: %v", err)
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls, want 3", calls.Load())
	}
	// Creations are not: the request reached the server.
	calls.Store(0)
	if _, err := c.CreateTenant(ctx, "acme", nil); !IsUnavailable(err) || !IsRetryable(err) {
		t.Fatalf("create through 503: %v", err)
	}
	if calls.Load() != 1 {
		t.Fatalf("create sent %d times", calls.Load())
	}
	// Give up after the configured attempts.
	var always atomic.Int32
	s2 := newServer(t, serverOptions{wrap: flaky503(1000, &always)})
	few := s2.client(t, WithRetry(2, time.Millisecond, time.Millisecond))
	if _, err := few.ListTenants(ctx); !IsUnavailable(err) || always.Load() != 2 {
		t.Fatalf("after %d calls: %v", always.Load(), err)
	}
}

func TestAppendRetriesOnlyWithWriterID(t *testing.T) {
	s := newServer(t)
	setup := s.client(t)
	ctx := t.Context()
	setup.CreateTenant(ctx, "acme", nil)
	setup.CreateStream(ctx, "acme", StreamSpec{Name: "logs"})
	// The first two append answers are lost: the plain append's, and the
	// first attempt of the idempotent one.
	drop := newDropAckTransport(http.DefaultTransport, 1, isAppend)
	var n atomic.Int32
	drop.droppable = func(r *http.Request) bool { return isAppend(r) && n.Add(1) <= 2 }
	c := s.client(t, WithHTTPClient(&http.Client{Transport: drop}))

	if _, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte("plain")}, AppendOptions{}); !errors.Is(err, errAckDropped) {
		t.Fatalf("append without writer id: %v", err)
	}
	res, err := c.Append(ctx, "acme", "logs", [][]byte{[]byte("idem")}, AppendOptions{WriterID: "w", Seq: 1})
	if err != nil || !res.Duplicate || res.FirstOffset != 1 {
		t.Fatalf("append with writer id: %+v %v", res, err)
	}
	b, _ := setup.Read(ctx, "acme", "logs", ReadOptions{})
	if len(b.Events) != 2 {
		t.Fatalf("stored %d events, want 2 (each once)", len(b.Events))
	}
}

func TestDialErrorsAreRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}
	c, _ := New("http://"+addr, WithHTTPClient(&http.Client{Transport: tr}), WithRetry(3, time.Millisecond, time.Millisecond))
	if _, err := c.CreateTenant(t.Context(), "acme", nil); err == nil || !IsRetryable(err) {
		t.Fatalf("create against nothing: %v", err)
	}
	if dials.Load() != 3 {
		t.Fatalf("%d dials, want 3: a request that never left may be resent", dials.Load())
	}
}

func TestTLS(t *testing.T) {
	s := newServer(t, serverOptions{tls: true})
	pool := x509.NewCertPool()
	pool.AddCert(s.ts.Certificate())
	c := s.client(t, WithTLSConfig(&tls.Config{RootCAs: pool}))
	if who, err := c.Whoami(t.Context()); err != nil || who != "root" {
		t.Fatalf("whoami over TLS: %q %v", who, err)
	}
	plain := s.client(t)
	if _, err := plain.Whoami(t.Context()); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
	if _, err := New(s.ts.URL, WithHTTPClient(&http.Client{Transport: roundTripFunc(nil)}), WithTLSConfig(&tls.Config{})); err == nil {
		t.Fatal("TLS config on a foreign transport accepted")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewValidates(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:7070", "ftp://x", "http://"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	if _, err := New("http://x", WithRetry(0, time.Second, time.Second)); err == nil {
		t.Error("zero attempts accepted")
	}
	c, err := New("http://x:1/prefix/", WithUserAgent("ua"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := c.newRequest(t.Context(), request{method: "GET", path: pathOf("v1", "tenants", "a b")})
	if got := req.URL.String(); got != "http://x:1/prefix/v1/tenants/a%20b" || req.Header.Get("User-Agent") != "ua" {
		t.Fatalf("request URL %q", got)
	}
}

func TestRetryDelay(t *testing.T) {
	p := retryPolicy{attempts: 5, base: 10 * time.Millisecond, max: 80 * time.Millisecond}
	for attempt := 1; attempt < 70; attempt++ {
		ceil := min(p.base<<min(attempt-1, 20), p.max)
		for range 50 {
			if d := p.delay(attempt); d <= 0 || d > ceil+1 {
				t.Fatalf("attempt %d: delay %v outside (0, %v]", attempt, d, ceil)
			}
		}
	}
	for v, want := range map[string]time.Duration{"3": 3 * time.Second, "0": 0} {
		if got, ok := retryAfter(v); !ok || got != want {
			t.Errorf("Retry-After %q = %v %v", v, got, ok)
		}
	}
	if _, ok := retryAfter("soon"); ok {
		t.Error("bad Retry-After accepted")
	}
}

// cutTransport cuts follow responses after a few hundred bytes, as a
// flaky network would.
type cutTransport struct {
	base http.RoundTripper
	cuts atomic.Int32
}

type cutBody struct {
	io.ReadCloser
	left int
	t    *cutTransport
}

var errCut = errors.New("cutTransport: connection reset")

func (b *cutBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.t.cuts.Add(1)
		return 0, errCut
	}
	n, err := b.ReadCloser.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}

func (c *cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err == nil && r.URL.Query().Get("follow") == "true" {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: 300 + int(c.cuts.Load())*37%400, t: c}
	}
	return resp, err
}

func TestFollowReconnects(t *testing.T) {
	s := newServer(t)
	setup := s.client(t)
	ctx := t.Context()
	setup.CreateTenant(ctx, "acme", nil)
	setup.CreateStream(ctx, "acme", StreamSpec{Name: "logs", Segments: 3})
	const total = 120
	send := func(from, to int) {
		for i := from; i < to; i++ {
			ev := fmt.Sprintf("event-%03d", i)
			if _, err := setup.Append(ctx, "acme", "logs", [][]byte{[]byte(ev)}, AppendOptions{Key: ev}); err != nil {
				t.Error(err)
			}
		}
	}
	send(0, total/2)
	cut := &cutTransport{base: http.DefaultTransport}
	c := s.client(t, WithHTTPClient(&http.Client{Transport: cut}))

	seen := map[string]bool{}
	last := map[string]int64{}
	errEnough := errors.New("enough")
	go send(total/2, total)
	err := c.Follow(ctx, "acme", "logs", "", func(ev Event) error {
		if seen[string(ev.Data)] {
			t.Errorf("%s delivered twice", ev.Data)
		}
		seen[string(ev.Data)] = true
		if l, ok := last[ev.Segment]; ok && int64(ev.Offset) != l+1 {
			t.Errorf("segment %s: offset %d after %d", ev.Segment, ev.Offset, l)
		}
		last[ev.Segment] = int64(ev.Offset)
		if len(seen) == total {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) {
		t.Fatalf("Follow: %v", err)
	}
	if cut.cuts.Load() == 0 {
		t.Fatal("the follow was never cut; the test proves nothing")
	}
	t.Logf("%d events over %d reconnects", total, cut.cuts.Load())

	// A cancelled context ends Follow.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := setup.Follow(cctx, "acme", "logs", "end", func(Event) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Follow after its deadline: %v", err)
	}
	// Errors retrying cannot fix end Follow.
	if err := setup.Follow(ctx, "acme", "nosuch", "", func(Event) error { return nil }); !IsNotFound(err) {
		t.Fatalf("Follow of a missing stream: %v", err)
	}
}
