package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/groups"
	"github.com/silt-io/silt/query"
	"github.com/silt-io/silt/query/jobs"
)

// httpError is an error the API detects itself (a malformed query, an
// unknown route, an exhausted budget), as opposed to one from the store or
// acl.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, code: "invalid_argument", msg: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &httpError{status: http.StatusRequestEntityTooLarge, code: "too_large", msg: fmt.Sprintf(format, args...)}
}

// statusClientClosed is nginx's convention for "the client went away";
// it only ever reaches logs and metrics.
const statusClientClosed = 499

// errTable maps sentinels to statuses. Order matters where one error wraps
// two sentinels: acl wraps ErrUnauthenticated into anonymous denials, and
// those must become 401.
var errTable = []struct {
	target error
	status int
	code   string
}{
	{acl.ErrUnauthenticated, http.StatusUnauthorized, "unauthenticated"},
	{acl.ErrDenied, http.StatusForbidden, "forbidden"},
	{core.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{core.ErrOutOfRange, http.StatusRequestedRangeNotSatisfiable, "out_of_range"},
	{core.ErrSeqConflict, http.StatusConflict, "sequence_conflict"},
	{core.ErrWriterOwned, http.StatusConflict, "writer_conflict"},
	{core.ErrNotEmpty, http.StatusConflict, "not_empty"},
	// A configured limit (core.limits.max_streams…): the message names
	// it; retrying does not help until streams go or the limit is raised.
	{core.ErrLimit, http.StatusConflict, "limit_reached"},
	{core.ErrNotFound, http.StatusNotFound, "not_found"},
	{acl.ErrNotFound, http.StatusNotFound, "not_found"},
	{core.ErrExists, http.StatusConflict, "already_exists"},
	{acl.ErrExists, http.StatusConflict, "already_exists"},
	{core.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{acl.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{names.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{names.ErrReserved, http.StatusForbidden, "reserved"},
	{groups.ErrNotFound, http.StatusNotFound, "not_found"},
	{groups.ErrExists, http.StatusConflict, "already_exists"},
	{groups.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{groups.ErrConflict, http.StatusConflict, "conflict"},
	{groups.ErrRejoin, http.StatusConflict, "rejoin"},
	{core.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{core.ErrClosed, http.StatusServiceUnavailable, "shutting_down"},
	// The metadata store (etcd in a cluster) out of reach, or a change
	// larger than it applies at once.
	{catalog.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{catalog.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{catalog.ErrClosed, http.StatusServiceUnavailable, "shutting_down"},
	{os.ErrDeadlineExceeded, http.StatusRequestTimeout, "timeout"},
	{jobs.ErrNotFound, http.StatusNotFound, "not_found"},
	{jobs.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{query.ErrInvalidParams, http.StatusBadRequest, "invalid_argument"},
	{jobs.ErrNotDone, http.StatusConflict, "not_done"},
	// As many queries as allowed already run: retry after some finish.
	{jobs.ErrBusy, http.StatusTooManyRequests, "too_many_queries"},
	{jobs.ErrClosed, http.StatusServiceUnavailable, "shutting_down"},
	{context.Canceled, statusClientClosed, "canceled"},
}

// mapped is an error as the client sees it.
type mapped struct {
	status        int
	code, message string
	// internal errors are logged in full and shown as a generic message,
	// since their text may describe the server's insides.
	internal bool
	// storage errors (ENOSPC, EIO under a sentinel) are shown as what
	// failed, without the file names and paths their text carries, and
	// logged in full.
	storage bool
}

func mapError(err error) mapped {
	var he *httpError
	if errors.As(err, &he) {
		return mapped{status: he.status, code: he.code, message: he.msg}
	}
	var qe *query.Error
	if errors.As(err, &qe) {
		return mapped{status: http.StatusBadRequest, code: "bad_query", message: qe.Summary()}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return mapped{status: http.StatusRequestEntityTooLarge, code: "too_large",
			message: fmt.Sprintf("request body is larger than %d bytes", mbe.Limit)}
	}
	for _, e := range errTable {
		if errors.Is(err, e.target) {
			m := mapped{status: e.status, code: e.code, message: cleanMessage(err.Error())}
			if msg, ok := storageMessage(err); ok {
				m.message, m.storage = msg, true
			}
			return m
		}
	}
	return mapped{status: http.StatusInternalServerError, code: "internal",
		message: "internal error; the server log has details under this request id", internal: true}
}

// storageMessage describes a filesystem error under err for the client:
// the system's reason ("no space left on device") and what to do, but not
// the error's own text, which names the server's files.
func storageMessage(err error) (string, bool) {
	var (
		pe    *fs.PathError
		le    *os.LinkError
		se    *os.SyscallError
		errno syscall.Errno
	)
	hasErrno := errors.As(err, &errno)
	if !hasErrno && !errors.As(err, &pe) && !errors.As(err, &le) && !errors.As(err, &se) {
		return "", false
	}
	why := "an I/O error"
	if hasErrno {
		why = errno.Error()
	}
	return "the server's storage failed: " + why + "; retry after a moment (an append was not acknowledged: " +
		"sent again with the same writer id and sequence number it is stored once); " +
		"the server log has details under this request id", true
}

// scrubPaths takes the paths of the filesystem errors under err, and the
// data directory, out of msg: a client must not learn where the server
// keeps its files. A path becomes its last element, which is all a
// message needs to tell two files apart.
func scrubPaths(msg string, err error, dataDir string) string {
	var paths []string
	var walk func(error)
	walk = func(e error) {
		switch x := e.(type) {
		case nil:
			return
		case *fs.PathError:
			paths = append(paths, x.Path)
		case *os.LinkError:
			paths = append(paths, x.Old, x.New)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	for _, p := range paths {
		if filepath.IsAbs(p) || strings.ContainsRune(p, filepath.Separator) {
			msg = strings.ReplaceAll(msg, p, filepath.Base(p))
		}
	}
	if dataDir != "" {
		if abs, err := filepath.Abs(dataDir); err == nil {
			msg = strings.ReplaceAll(msg, abs, "<data dir>")
		}
		if filepath.IsAbs(dataDir) {
			msg = strings.ReplaceAll(msg, dataDir, "<data dir>")
		}
	}
	return msg
}

// cleanMessage drops the package prefixes of sentinel texts ("core: not
// found: stream \"x\" in tenant \"t\"" becomes "not found: stream …"): the
// client did not call a package, it called the API.
func cleanMessage(msg string) string {
	for _, e := range errTable {
		full := e.target.Error()
		for _, p := range []string{"core: ", "acl: ", "catalog: ", "groups: ", "jobs: ", "query: "} {
			if short, ok := strings.CutPrefix(full, p); ok {
				msg = strings.ReplaceAll(msg, full, short)
			}
		}
	}
	return msg
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
	// Position locates a mistake in a query's text (code bad_query).
	Position *queryErrorDetail `json:"position,omitempty"`
}

// fail answers c with err. After a streaming response has started the
// status can no longer change: ndjson streams then end with an error line,
// raw streams are cut short (the missing next-cursor trailer tells the
// client).
func (s *Server) fail(c *call, err error) {
	m := mapError(err)
	m.message = scrubPaths(m.message, err, s.store.Dir())
	log := s.log.With(zap.String("request_id", c.id), zap.String("route", c.route), zap.Error(err))
	switch {
	case m.internal:
		log.Error("request failed")
	case m.storage:
		log.Warn("request failed on a storage error")
	case m.status == statusClientClosed:
		log.Debug("client went away")
	default:
		log.Debug("request refused", zap.Int("status", m.status))
	}
	body := errorBody{Error: errorDetail{Code: m.code, Message: m.message, RequestID: c.id, Position: queryPosition(err)}}
	if c.w.status != 0 {
		if c.ndjson {
			b, _ := json.Marshal(body)
			c.w.Write(append(b, '\n'))
		}
		return
	}
	if m.status == statusClientClosed {
		c.w.status = m.status // nobody reads the answer; record it for metrics
		return
	}
	h := c.w.Header()
	switch m.status {
	case http.StatusUnauthorized:
		v := `Bearer realm="silt"`
		if c.sentToken {
			v += `, error="invalid_token"`
		}
		h.Set("WWW-Authenticate", v)
	case http.StatusServiceUnavailable:
		h.Set("Retry-After", "1")
	case http.StatusTooManyRequests:
		h.Set("Retry-After", "5")
	}
	writeJSON(c.w, m.status, body)
}
