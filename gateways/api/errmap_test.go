package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

func TestMapError(t *testing.T) {
	cases := map[string]struct {
		err    error
		status int
		code   string
		msg    string // expected message, when checked
	}{
		"core not found":  {fmt.Errorf("%w: stream %q in tenant %q", core.ErrNotFound, "x", "t"), 404, "not_found", `not found: stream "x" in tenant "t"`},
		"acl not found":   {fmt.Errorf("%w: principal %q", acl.ErrNotFound, "bob"), 404, "not_found", `not found: principal "bob"`},
		"core exists":     {fmt.Errorf("%w: tenant %q", core.ErrExists, "t"), 409, "already_exists", ""},
		"acl exists":      {acl.ErrExists, 409, "already_exists", "already exists"},
		"core invalid":    {fmt.Errorf("wrapped: %w", core.ErrInvalid), 400, "invalid_argument", "wrapped: invalid argument"},
		"acl invalid":     {acl.ErrInvalid, 400, "invalid_argument", ""},
		"too large":       {core.ErrTooLarge, 413, "too_large", ""},
		"not empty":       {core.ErrNotEmpty, 409, "not_empty", ""},
		"out of range":    {core.ErrOutOfRange, 416, "out_of_range", ""},
		"seq conflict":    {core.ErrSeqConflict, 409, "sequence_conflict", ""},
		"unavailable":     {core.ErrUnavailable, 503, "unavailable", ""},
		"closed":          {core.ErrClosed, 503, "shutting_down", ""},
		"unauthenticated": {fmt.Errorf("%w: unknown token", acl.ErrUnauthenticated), 401, "unauthenticated", "not authenticated: unknown token"},
		"denied":          {fmt.Errorf("%w: principal %q may not read", acl.ErrDenied, "p"), 403, "forbidden", `access denied: principal "p" may not read`},
		// acl wraps both into anonymous denials: they must ask for credentials.
		"anonymous denied": {fmt.Errorf("%w: %w: anonymous requests may not read", acl.ErrDenied, acl.ErrUnauthenticated), 401, "unauthenticated", ""},
		"body too large":   {fmt.Errorf("read: %w", &http.MaxBytesError{Limit: 10}), 413, "too_large", "request body is larger than 10 bytes"},
		"read timeout":     {fmt.Errorf("read body: %w", os.ErrDeadlineExceeded), 408, "timeout", ""},
		"client gone":      {context.Canceled, statusClientClosed, "canceled", ""},
		"api error":        {badRequest("max %q is bad", "x"), 400, "invalid_argument", `max "x" is bad`},
		"overloaded":       {errOverloaded, 503, "overloaded", ""},
		"anything else":    {errors.New("pebble: corrupt sstable /var/lib/x"), 500, "internal", ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := mapError(c.err)
			if m.status != c.status || m.code != c.code {
				t.Fatalf("mapError(%v) = %d %s, want %d %s", c.err, m.status, m.code, c.status, c.code)
			}
			if c.msg != "" && m.message != c.msg {
				t.Fatalf("message %q, want %q", m.message, c.msg)
			}
			if m.internal != (c.status == 500) {
				t.Fatalf("internal = %v", m.internal)
			}
			if m.internal && m.message == c.err.Error() {
				t.Fatal("internal error text shown to the client")
			}
		})
	}
}

func TestFailHeaders(t *testing.T) {
	e := newEnv(t, envOptions{noServer: true})
	for name, c := range map[string]struct {
		err       error
		sentToken bool
		header    string
		want      string
	}{
		"401 challenge":     {acl.ErrUnauthenticated, false, "WWW-Authenticate", `Bearer realm="silt"`},
		"401 invalid token": {acl.ErrUnauthenticated, true, "WWW-Authenticate", `Bearer realm="silt", error="invalid_token"`},
		"503 retry":         {core.ErrUnavailable, false, "Retry-After", "1"},
		"json":              {core.ErrNotFound, false, "Content-Type", "application/json"},
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c0 := e.srv.begin(rec, httptest.NewRequest("GET", "/", nil), "test")
			c0.sentToken = c.sentToken
			e.srv.fail(c0, c.err)
			if got := rec.Header().Get(c.header); got != c.want {
				t.Fatalf("%s = %q, want %q", c.header, got, c.want)
			}
		})
	}
}
