package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

// maxJSONBody bounds every JSON request body; none needs more than a few
// kilobytes, so anything larger is a mistake or an attack.
const maxJSONBody = 1 << 20

// The JSON shapes of the API. They are defined here, not taken from core's
// types, so that the wire format is owned by the API (and openapi.yaml)
// and changes only on purpose.

type tenantJSON struct {
	Name     string            `json:"name"`
	Created  time.Time         `json:"created"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

type streamConfigJSON struct {
	Encoding string            `json:"encoding"`
	Segments int               `json:"segments"`
	Metadata map[string]string `json:"metadata,omitempty"`
	Set      string            `json:"set,omitempty"`
	// Group repeats Set under its deprecated name, for clients written
	// before the rename.
	Group      string         `json:"group,omitempty"`
	Retention  *retentionJSON `json:"retention,omitempty"`
	TierPrefix string         `json:"tier_prefix,omitempty"`
}

// retentionJSON is a stream's tier-2 retention. MaxAge is a Go duration
// string ("720h", "90m"), as issueTokenRequest's TTL; empty or "0" keeps
// forever, as does a zero MaxBytes.
type retentionJSON struct {
	MaxAge   string `json:"max_age,omitempty"`
	MaxBytes int64  `json:"max_bytes,omitempty"`
}

func (r *retentionJSON) toCore() (core.Retention, error) {
	if r == nil {
		return core.Retention{}, nil
	}
	var out core.Retention
	if r.MaxAge != "" {
		d, err := time.ParseDuration(r.MaxAge)
		if err != nil {
			return core.Retention{}, badRequest("retention.max_age %q: want a duration such as \"720h\" (0 keeps forever)", r.MaxAge)
		}
		if d < 0 {
			return core.Retention{}, badRequest("retention.max_age must not be negative (0 keeps forever)")
		}
		out.MaxAge = d
	}
	if r.MaxBytes < 0 {
		return core.Retention{}, badRequest("retention.max_bytes must not be negative (0 keeps forever)")
	}
	out.MaxBytes = r.MaxBytes
	return out, nil
}

func toRetentionJSON(r core.Retention) *retentionJSON {
	if r == (core.Retention{}) {
		return nil
	}
	out := &retentionJSON{MaxBytes: r.MaxBytes}
	if r.MaxAge > 0 {
		out.MaxAge = r.MaxAge.String()
	}
	return out
}

type segmentJSON struct {
	ID          string `json:"id"`
	KeyLow      uint32 `json:"key_low"`
	KeyHigh     uint32 `json:"key_high"`
	FirstOffset uint64 `json:"first_offset"`
	NextOffset  uint64 `json:"next_offset"`
	Bytes       int64  `json:"bytes"`
}

type streamJSON struct {
	Tenant   string           `json:"tenant"`
	Name     string           `json:"name"`
	Config   streamConfigJSON `json:"config"`
	Created  time.Time        `json:"created"`
	Segments []segmentJSON    `json:"segments,omitempty"`
	// Tiering is the tier policy's state of the stream (describe only).
	Tiering any `json:"tiering,omitempty"`
}

type appendJSON struct {
	Segment     string `json:"segment"`
	FirstOffset uint64 `json:"first_offset"`
	Count       int    `json:"count"`
	Duplicate   bool   `json:"duplicate"`
}

type tokenJSON struct {
	acl.TokenInfo
	// Token is the secret; it is returned once, when issued.
	Token string `json:"token"`
}

type createTenantRequest struct {
	Name     string            `json:"name"`
	Metadata map[string]string `json:"metadata"`
}

type createStreamRequest struct {
	Name     string            `json:"name"`
	Encoding string            `json:"encoding"`
	Segments int               `json:"segments"`
	Metadata map[string]string `json:"metadata"`
	Set      string            `json:"set"`
	// Group is the deprecated name of Set, still accepted.
	Group      string         `json:"group"`
	Retention  *retentionJSON `json:"retention"`
	TierPrefix string         `json:"tier_prefix"`
}

type createPrincipalRequest struct {
	Name string `json:"name"`
}

type issueTokenRequest struct {
	Label string `json:"label"`
	// TTL is a Go duration ("24h", "90m"); empty or "0" never expires.
	TTL string `json:"ttl"`
}

type addGrantRequest struct {
	Principal string `json:"principal"`
	Action    string `json:"action"`
	Resource  string `json:"resource"`
}

func toTenantJSON(t core.Tenant) tenantJSON {
	return tenantJSON{Name: t.Name, Created: t.Created, Metadata: t.Metadata}
}

func toStreamJSON(st core.Stream) streamJSON {
	out := streamJSON{
		Tenant: st.Tenant,
		Name:   st.Name,
		Config: streamConfigJSON{
			Encoding:   string(st.Config.Encoding),
			Segments:   st.Config.Segments,
			Metadata:   st.Config.Metadata,
			Set:        st.Config.Set,
			Group:      st.Config.Set,
			Retention:  toRetentionJSON(st.Config.Retention),
			TierPrefix: st.Config.TierPrefix,
		},
		Created: st.Created,
	}
	for _, sg := range st.Segments {
		out.Segments = append(out.Segments, segmentJSON{
			ID: sg.ID, KeyLow: sg.KeyLow, KeyHigh: sg.KeyHigh,
			FirstOffset: sg.FirstOffset, NextOffset: sg.NextOffset, Bytes: sg.Bytes,
		})
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only our own types are encoded; failing here is a bug.
		panic(fmt.Sprintf("api: encode response: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// writeAppendJSON answers an append. It is on every append's path, so the
// answer is built by hand instead of by reflection; a segment id that
// would need escaping (none does: ids are names) goes through writeJSON.
func writeAppendJSON(w http.ResponseWriter, a appendJSON) {
	if !plainJSONString(a.Segment) {
		writeJSON(w, http.StatusOK, a)
		return
	}
	b := make([]byte, 0, 96)
	b = append(b, `{"segment":"`...)
	b = append(b, a.Segment...)
	b = append(b, `","first_offset":`...)
	b = strconv.AppendUint(b, a.FirstOffset, 10)
	b = append(b, `,"count":`...)
	b = strconv.AppendInt(b, int64(a.Count), 10)
	b = append(b, `,"duplicate":`...)
	b = strconv.AppendBool(b, a.Duplicate)
	b = append(b, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// plainJSONString reports whether s is printable ASCII that JSON carries
// without escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func noContent(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }

// decodeJSON reads c's body into v: at most maxJSONBody bytes within the
// read timeout, one JSON object, no unknown fields (a typo in a field name
// must not silently create a stream with defaults).
func (c *call) decodeJSON(v any) error {
	release := c.bodyDeadline()
	defer release()
	dec := json.NewDecoder(c.body(maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if err != nil {
			return jsonError(err)
		}
		return badRequest("request body holds more than one JSON value")
	}
	return nil
}

// body returns the request body, limited to limit bytes, with its read
// errors classified.
func (c *call) body(limit int64) io.Reader {
	return bodyReader{http.MaxBytesReader(c.w, c.r.Body, limit)}
}

// bodyReader turns the transport's read errors into the answers they
// deserve: a malformed chunked encoding or a body cut short is the
// client's mistake (400), and a broken connection means the client went
// away; neither is an internal error.
type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = classifyBodyError(err)
	}
	return n, err
}

var errClientGone = &httpError{status: statusClientClosed, code: "canceled", msg: "the client went away while sending the request body"}

func classifyBodyError(err error) error {
	var (
		mbe *http.MaxBytesError
		ne  net.Error
	)
	switch {
	case errors.As(err, &mbe), errors.As(err, &ne) && ne.Timeout(), errors.Is(err, http.ErrBodyReadAfterClose):
		return err // mapped as they are
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body ends before its declared length")
	case errors.As(err, &ne), errors.Is(err, net.ErrClosed):
		return errClientGone
	}
	return badRequest("malformed request body: %v", err)
}

// errEmptyJSON is returned for an empty JSON body, so that routes whose
// body is optional can tell it apart.
var errEmptyJSON = badRequest("request body is empty; want a JSON object")

func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
		mbe *http.MaxBytesError
	)
	switch {
	case errors.Is(err, io.EOF):
		return errEmptyJSON
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("request body is truncated JSON")
	case errors.As(err, &mbe):
		return tooLarge("JSON request body is larger than %d bytes", mbe.Limit)
	case errors.As(err, &syn):
		return badRequest("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return badRequest("request body must be a JSON object, not %s", typ.Value)
		}
		return badRequest("field %q: want %s, got JSON %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return badRequest("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	// Read errors (timeouts, a client that went away) keep their identity
	// for the error map.
	return fmt.Errorf("read request body: %w", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "bool":
		return "a boolean"
	}
	return "a number"
}

// bodyDeadline bounds reading the request body by the read timeout and
// returns a function that lifts the bound again. The bound must be lifted:
// after the body, net/http keeps reading the connection in the background
// to notice a client that goes away, and an expired deadline there would
// cancel the request.
func (c *call) bodyDeadline() func() {
	if _, ok := c.w.ResponseWriter.(*h1Response); ok {
		// The lean server bounds the whole request by the read timeout
		// itself, and watches connections without a read deadline.
		return func() {}
	}
	rc := http.NewResponseController(c.w)
	if rc.SetReadDeadline(time.Now().Add(c.s.cfg.ReadTimeout)) != nil {
		return func() {}
	}
	return func() { rc.SetReadDeadline(time.Time{}) }
}
