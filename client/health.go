package client

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// HealthSummary is the answer of GET /v1/health: per-head and per-node figures
// over the last minutes, summed from the introspection events.
type HealthSummary struct {
	Tenant        string        `json:"tenant,omitempty"`
	Since         time.Time     `json:"since"`
	Until         time.Time     `json:"until"`
	Scanned       int           `json:"scanned"`
	Partial       bool          `json:"partial,omitempty"`
	DroppedEvents float64       `json:"dropped_events"`
	Heads         []HeadHealth  `json:"heads"`
	Slowest       []OpLatency   `json:"slowest"`
	Tiering       TieringHealth `json:"tiering"`
	Denials       []DenialCount `json:"denials"`
}

// HeadHealth is one head on one node.
type HeadHealth struct {
	Head            string  `json:"head"`
	Node            string  `json:"node"`
	Requests        int     `json:"requests"`
	ClientErrors    int     `json:"client_errors"`
	ServerErrors    int     `json:"server_errors"`
	ClientErrorRate float64 `json:"client_error_rate"`
	ServerErrorRate float64 `json:"server_error_rate"`
	Bytes           int64   `json:"bytes"`
	Denials         int     `json:"denials"`
}

// OpLatency is the latency of one operation of a head.
type OpLatency struct {
	Head      string  `json:"head"`
	Operation string  `json:"operation"`
	Count     int     `json:"count"`
	P99MS     float64 `json:"p99_ms"`
	MaxMS     float64 `json:"max_ms"`
}

// TieringHealth sums the tiering events.
type TieringHealth struct {
	ChunksUploaded int     `json:"chunks_uploaded"`
	Failures       int     `json:"failures"`
	Bytes          int64   `json:"bytes"`
	P99LagMS       float64 `json:"p99_lag_ms"`
	MaxLagMS       float64 `json:"max_lag_ms"`
	LastError      string  `json:"last_error,omitempty"`
}

// DenialCount counts the denials of one principal on one resource.
type DenialCount struct {
	Head      string `json:"head"`
	Principal string `json:"principal"`
	Tenant    string `json:"tenant,omitempty"`
	Stream    string `json:"stream,omitempty"`
	Action    string `json:"action"`
	Count     int    `json:"count"`
}

// HealthSummary summarises the last minutes (0: the server's default, 5) of the
// whole server (admin on everything), or of tenant (admin on it).
func (c *Client) HealthSummary(ctx context.Context, tenant string, minutes int) (HealthSummary, error) {
	rq := get("/v1/health")
	rq.query = url.Values{}
	if tenant != "" {
		rq.query.Set("tenant", tenant)
	}
	if minutes > 0 {
		rq.query.Set("minutes", strconv.Itoa(minutes))
	}
	var out HealthSummary
	err := c.doJSON(ctx, rq, nil, &out)
	return out, err
}
