package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
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
	{core.ErrNotEmpty, http.StatusConflict, "not_empty"},
	{core.ErrNotFound, http.StatusNotFound, "not_found"},
	{acl.ErrNotFound, http.StatusNotFound, "not_found"},
	{core.ErrExists, http.StatusConflict, "already_exists"},
	{acl.ErrExists, http.StatusConflict, "already_exists"},
	{core.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{acl.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{names.ErrInvalid, http.StatusBadRequest, "invalid_argument"},
	{core.ErrUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{core.ErrClosed, http.StatusServiceUnavailable, "shutting_down"},
	{os.ErrDeadlineExceeded, http.StatusRequestTimeout, "timeout"},
	{context.Canceled, statusClientClosed, "canceled"},
}

// mapped is an error as the client sees it.
type mapped struct {
	status        int
	code, message string
	// internal errors are logged in full and shown as a generic message,
	// since their text may describe the server's insides.
	internal bool
}

func mapError(err error) mapped {
	var he *httpError
	if errors.As(err, &he) {
		return mapped{status: he.status, code: he.code, message: he.msg}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return mapped{status: http.StatusRequestEntityTooLarge, code: "too_large",
			message: fmt.Sprintf("request body is larger than %d bytes", mbe.Limit)}
	}
	for _, e := range errTable {
		if errors.Is(err, e.target) {
			return mapped{status: e.status, code: e.code, message: cleanMessage(err.Error())}
		}
	}
	return mapped{status: http.StatusInternalServerError, code: "internal",
		message: "internal error; the server log has details under this request id", internal: true}
}

// cleanMessage drops the package prefixes of sentinel texts ("core: not
// found: stream \"x\" in tenant \"t\"" becomes "not found: stream …"): the
// client did not call a package, it called the API.
func cleanMessage(msg string) string {
	for _, e := range errTable {
		full := e.target.Error()
		for _, p := range []string{"core: ", "acl: "} {
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
}

// fail answers c with err. After a streaming response has started the
// status can no longer change: ndjson streams then end with an error line,
// raw streams are cut short (the missing next-cursor trailer tells the
// client).
func (s *Server) fail(c *call, err error) {
	m := mapError(err)
	log := s.log.With(zap.String("request_id", c.id), zap.String("route", c.route), zap.Error(err))
	switch {
	case m.internal:
		log.Error("request failed")
	case m.status == statusClientClosed:
		log.Debug("client went away")
	default:
		log.Debug("request refused", zap.Int("status", m.status))
	}
	body := errorBody{Error: errorDetail{Code: m.code, Message: m.message, RequestID: c.id}}
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
	}
	writeJSON(c.w, m.status, body)
}
