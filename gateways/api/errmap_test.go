package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
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
		"limit":           {fmt.Errorf("%w: this node holds 2 streams, the most it allows (core.limits.max_streams)", core.ErrLimit), 409, "limit_reached", "limit reached: this node holds 2 streams, the most it allows (core.limits.max_streams)"},
		"out of range":    {core.ErrOutOfRange, 416, "out_of_range", ""},
		"seq conflict":    {core.ErrSeqConflict, 409, "sequence_conflict", ""},
		"writer taken":    {core.ErrWriterOwned, 409, "writer_conflict", "writer id in use by another principal"},
		"unavailable":     {core.ErrUnavailable, 503, "unavailable", ""},
		"closed":          {core.ErrClosed, 503, "shutting_down", ""},
		"etcd down":       {fmt.Errorf("catalog commit: %w", catalog.ErrUnavailable), 503, "unavailable", "catalog commit: metadata store unavailable"},
		"txn too large":   {catalog.ErrTooLarge, 413, "too_large", ""},
		"catalog closed":  {catalog.ErrClosed, 503, "shutting_down", ""},
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

// TestErrorsShowNoServerPaths checks what a client learns from errors
// that carry the server's file paths: the reason, never the path.
func TestErrorsShowNoServerPaths(t *testing.T) {
	const dataDir = "/srv/silt-data"
	seg := dataDir + "/logs/acme/logs@1/0/00000000000000000009.log"
	enospc := &fs.PathError{Op: "open", Path: seg, Err: syscall.ENOSPC}
	eio := &fs.PathError{Op: "write", Path: seg, Err: syscall.EIO}
	cases := map[string]struct {
		err    error
		status int
		says   string // part of the message
		gone   []string
	}{
		// As the engine reports a full disk at a new segment file.
		"full disk at a new segment file": {
			fmt.Errorf("%w: %w", core.ErrUnavailable, fmt.Errorf("segment: log unavailable: create segment file %s: %w", seg, enospc)),
			503, "no space left on device", []string{dataDir, "/logs/", ".log"}},
		"I/O error": {
			fmt.Errorf("%w: %w", core.ErrUnavailable, fmt.Errorf("write %s: %w", seg, eio)),
			503, "input/output error", []string{dataDir, ".log"}},
		// Tier-2 reads name the backend's directory.
		"tier-2 read": {
			fmt.Errorf("%w: read tier 2 %s: %w", core.ErrUnavailable, "acme/logs/x", &fs.PathError{Op: "open", Path: "/mnt/tier2/acme/logs/x", Err: errors.New("stale file handle")}),
			503, "storage failed", []string{"/mnt/tier2"}},
		// A path in an error that is not a storage failure still goes.
		"path in another error": {
			fmt.Errorf("%w: checkpoint %s is damaged", core.ErrInvalid, dataDir+"/logs/x/writers.json"),
			400, "<data dir>/logs/x/writers.json", []string{dataDir}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := mapError(c.err)
			msg := scrubPaths(m.message, c.err, dataDir)
			if m.status != c.status || !strings.Contains(msg, c.says) {
				t.Fatalf("%d %q, want %d mentioning %q", m.status, msg, c.status, c.says)
			}
			for _, g := range c.gone {
				if strings.Contains(msg, g) {
					t.Fatalf("message %q shows %q", msg, g)
				}
			}
		})
	}
}
