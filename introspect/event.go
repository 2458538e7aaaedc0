package introspect

import (
	"time"

	"github.com/silt-io/silt/core/names"
)

// Kinds of event, and the stream suffix each is kept under.
const (
	KindRequest = "requests"
	KindDenial  = "denials"
	KindTiering = "tiering"
	KindMetrics = "metrics"
)

// Kinds lists every kind, in the order streams are described in docs.
var Kinds = []string{KindRequest, KindDenial, KindTiering, KindMetrics}

// ServerWide is the stream prefix of events that belong to no tenant.
const ServerWide = "server_wide"

// StreamName is the system stream of kind for tenant ("" or a tenant that
// does not exist: the server-wide one).
func StreamName(tenant, kind string) string {
	if tenant == "" {
		tenant = ServerWide
	}
	return tenant + "." + kind
}

// Event is one introspection event, encoded as one JSON line. Fields that
// do not apply to a kind are left out.
type Event struct {
	Time time.Time `json:"time"`
	// Kind is the stream suffix: request, denial, tiering, metrics.
	Kind string `json:"kind"`
	Head string `json:"head,omitempty"`
	Node string `json:"node,omitempty"`

	Principal string `json:"principal,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
	Stream    string `json:"stream,omitempty"`
	// Operation is the head's operation name, the same as the op label of
	// silt_head_requests_total (route pattern, S3 action, WebHDFS op, NFS
	// procedure).
	Operation string `json:"operation,omitempty"`
	// Status is the protocol's status: the HTTP code, or the NFS status
	// number (0 is NFS3_OK).
	Status int `json:"status,omitempty"`
	// Class is ok, client_error or server_error, the same for every head.
	Class     string  `json:"class,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	LatencyMS float64 `json:"latency_ms,omitempty"`
	Client    string  `json:"client,omitempty"`

	// Denials: the action refused and why.
	Action string `json:"action,omitempty"`
	Reason string `json:"reason,omitempty"`

	// Tiering: the outcome of a chunk upload.
	Segment     string  `json:"segment,omitempty"`
	Outcome     string  `json:"outcome,omitempty"` // uploaded or failed
	FirstOffset uint64  `json:"first_offset,omitempty"`
	Events      int     `json:"events,omitempty"`
	LagMS       float64 `json:"lag_ms,omitempty"`
	Error       string  `json:"error,omitempty"`

	// Metrics: a snapshot of key series, by series name with labels.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// tenantOf is the tenant whose streams an event goes to: the system tenant
// itself is server-wide, so reading one's own events makes no event a
// tenant admin can see.
func (e *Event) tenantOf() string {
	if e.Tenant == names.SystemTenant {
		return ""
	}
	return e.Tenant
}

// Millis is d in milliseconds, with microsecond resolution.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// timeOf is when a request that took took arrived.
func timeOf(took time.Duration) time.Time { return time.Now().Add(-took) }
