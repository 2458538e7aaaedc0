package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// APIError is an error answer from the server.
type APIError struct {
	// Status is the HTTP status; 0 when the error was reported inside a
	// streaming response that had already started.
	Status int
	// Code is the machine-readable error code ("not_found",
	// "already_exists", …; docs/api.md lists them).
	Code    string
	Message string
	// RequestID is the server's X-Request-Id, for finding the request in
	// the server's log.
	RequestID string
	// Position locates a mistake in a query's text (code bad_query).
	Position *ErrorPosition
}

// ErrorPosition is where a query's text is wrong.
type ErrorPosition struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Hint    string `json:"hint,omitempty"`
	Snippet string `json:"snippet"` // the line and a caret under the column
}

func (e *APIError) Error() string {
	s := "silt: "
	if e.Status != 0 {
		s += fmt.Sprintf("%d ", e.Status)
	}
	// The server's messages begin with what the code says, in words
	// ("not found: tenant …"); saying the code as well would say it
	// twice.
	switch {
	case e.Code == "":
		s += e.Message
	case saysCode(e.Code, e.Message):
		s += e.Message
	case e.Message == "":
		s += e.Code
	default:
		s += e.Code + ": " + e.Message
	}
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// codeWords are how the server's messages say a code in words where
// they are not the code's own words ("not_found": "not found").
var codeWords = map[string][]string{
	"unauthenticated":   {"not authenticated"},
	"forbidden":         {"access denied"},
	"invalid_argument":  {"invalid"},
	"unavailable":       {"temporarily unavailable"},
	"shutting_down":     {"store closed"},
	"out_of_range":      {"offset out of range"},
	"sequence_conflict": {"sequence already used"},
}

// saysCode reports whether msg begins by saying code.
func saysCode(code, msg string) bool {
	for _, w := range append([]string{strings.ReplaceAll(code, "_", " ")}, codeWords[code]...) {
		if msg == w || strings.HasPrefix(msg, w+":") {
			return true
		}
	}
	return false
}

// Sentinels for errors.Is on an *APIError.
var (
	ErrNotFound        = errors.New("silt: not found")
	ErrExists          = errors.New("silt: already exists")
	ErrNotEmpty        = errors.New("silt: not empty")
	ErrSeqConflict     = errors.New("silt: sequence conflict")
	ErrInvalid         = errors.New("silt: invalid argument")
	ErrUnauthenticated = errors.New("silt: not authenticated")
	ErrForbidden       = errors.New("silt: forbidden")
	ErrTooLarge        = errors.New("silt: too large")
	ErrOutOfRange      = errors.New("silt: offset out of range")
	ErrUnavailable     = errors.New("silt: unavailable")
)

// Is matches the sentinels by code, falling back to the status for
// answers without a code (from a proxy, say).
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == "not_found" || e.Code == "" && e.Status == http.StatusNotFound
	case ErrExists:
		return e.Code == "already_exists"
	case ErrNotEmpty:
		return e.Code == "not_empty"
	case ErrSeqConflict:
		return e.Code == "sequence_conflict"
	case ErrInvalid:
		return e.Code == "invalid_argument" || e.Code == "" && e.Status == http.StatusBadRequest
	case ErrUnauthenticated:
		return e.Code == "unauthenticated" || e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Code == "forbidden" || e.Status == http.StatusForbidden
	case ErrTooLarge:
		return e.Code == "too_large" || e.Status == http.StatusRequestEntityTooLarge
	case ErrOutOfRange:
		return e.Code == "out_of_range" || e.Status == http.StatusRequestedRangeNotSatisfiable
	case ErrUnavailable:
		return e.Status == http.StatusServiceUnavailable || e.Code == "unavailable" ||
			e.Code == "overloaded" || e.Code == "shutting_down"
	}
	return false
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsExists reports whether err says the thing to create already exists.
func IsExists(err error) bool { return errors.Is(err, ErrExists) }

// IsConflict reports whether err is any 409 answer (exists, not empty,
// sequence conflict).
func IsConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict
}

// IsInvalid reports whether err is a 400 answer.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }

// IsUnauthenticated reports whether err is a 401 answer.
func IsUnauthenticated(err error) bool { return errors.Is(err, ErrUnauthenticated) }

// IsForbidden reports whether err is a 403 answer.
func IsForbidden(err error) bool { return errors.Is(err, ErrForbidden) }

// IsTooLarge reports whether err is a 413 answer.
func IsTooLarge(err error) bool { return errors.Is(err, ErrTooLarge) }

// IsOutOfRange reports whether err is a 416 answer: the offset or cursor
// is before the oldest retained event or past the end.
func IsOutOfRange(err error) bool { return errors.Is(err, ErrOutOfRange) }

// IsUnavailable reports whether err is a 503 answer.
func IsUnavailable(err error) bool { return errors.Is(err, ErrUnavailable) }

// IsRetryable reports whether err may go away by itself (network errors,
// 502, 503, 504), as opposed to one that retrying cannot fix.
func IsRetryable(err error) bool { return retryable(err) }

type errorBody struct {
	Error *errorDetail `json:"error"`
}

type errorDetail struct {
	Code      string         `json:"code"`
	Message   string         `json:"message"`
	RequestID string         `json:"request_id"`
	Position  *ErrorPosition `json:"position"`
}

func (d *errorDetail) apiError(status int) *APIError {
	return &APIError{Status: status, Code: d.Code, Message: d.Message, RequestID: d.RequestID, Position: d.Position}
}

// readAPIError turns a non-2xx response into an *APIError and closes its
// body. Answers that are not silt's JSON (from a proxy) keep their status
// and a short excerpt of the body.
func readAPIError(resp *http.Response) *APIError {
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body errorBody
	if json.Unmarshal(raw, &body) == nil && body.Error != nil {
		ae := body.Error.apiError(resp.StatusCode)
		if ae.RequestID == "" {
			ae.RequestID = resp.Header.Get("X-Request-Id")
		}
		return ae
	}
	msg := http.StatusText(resp.StatusCode)
	if len(raw) > 0 {
		msg = string(raw[:min(len(raw), 200)])
	}
	return &APIError{Status: resp.StatusCode, Message: msg, RequestID: resp.Header.Get("X-Request-Id")}
}

// IsRejoin reports whether err fences a group reader: its generation is
// over or its session expired, and it must join the group again.
func IsRejoin(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == "rejoin"
}
