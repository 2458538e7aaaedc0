package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"time"
)

// QueryJob is a query submitted to run as a job (docs/query.md).
type QueryJob struct {
	Handle    string `json:"handle"`
	Principal string `json:"principal"`
	Query     string `json:"query"`
	// Packaged, Version and Params name the packaged query run, if any.
	Packaged   string            `json:"packaged,omitempty"`
	Version    int               `json:"version,omitempty"`
	Params     map[string]string `json:"params,omitempty"`
	Continuous bool              `json:"continuous,omitempty"`
	State      string            `json:"state"` // running, succeeded, failed, cancelled
	Submitted  time.Time         `json:"submitted"`
	Finished   time.Time         `json:"finished,omitzero"`
	Progress   struct {
		EventsScanned int64    `json:"events_scanned"`
		EventsTotal   int64    `json:"events_total"`
		BytesScanned  int64    `json:"bytes_scanned"`
		BytesTotal    int64    `json:"bytes_total"`
		Percent       float64  `json:"percent"`
		ETASeconds    *float64 `json:"eta_seconds,omitempty"`
	} `json:"progress"`
	Rows          int64    `json:"rows"`
	Columns       []string `json:"columns,omitempty"`
	Warnings      []string `json:"warnings,omitempty"`
	Error         string   `json:"error,omitempty"`
	ResultTenant  string   `json:"result_tenant"`
	ResultStream  string   `json:"result_stream"`
	Webhook       string   `json:"webhook,omitempty"`
	WebhookStatus string   `json:"webhook_status,omitempty"`
}

// Done reports whether the job has ended.
func (j QueryJob) Done() bool { return j.State != "" && j.State != "running" }

// QueryOptions are optional settings of a submission.
type QueryOptions struct {
	// WebhookURL is POSTed the finished job's JSON, signed with
	// HMAC-SHA256 under WebhookSecret in the Silt-Signature header.
	WebhookURL, WebhookSecret string
	// Name runs a packaged query instead of a text: its Version (0: the
	// latest) with Params as the values of its $parameters.
	Name    string
	Version int
	Params  map[string]string
	// Continuous runs the query until it is cancelled, appending each
	// closed window's rows (its results are readable while it runs).
	Continuous bool
}

// SubmitQuery starts text (or, with opt.Name, a packaged query) as a
// job. A query that does not parse is an *APIError with code bad_query
// and a Position.
func (c *Client) SubmitQuery(ctx context.Context, text string, opt QueryOptions) (QueryJob, error) {
	in := map[string]any{}
	if opt.Name != "" {
		in["name"] = opt.Name
		if opt.Version != 0 {
			in["version"] = opt.Version
		}
		if len(opt.Params) > 0 {
			in["params"] = opt.Params
		}
	} else {
		in["query"] = text
	}
	if opt.Continuous {
		in["continuous"] = true
	}
	if opt.WebhookURL != "" {
		in["webhook"] = map[string]string{"url": opt.WebhookURL, "secret": opt.WebhookSecret}
	}
	var j QueryJob
	err := c.doJSON(ctx, create("/v1/queries"), in, &j)
	return j, err
}

// GetQuery returns a job's state and progress.
func (c *Client) GetQuery(ctx context.Context, handle string) (QueryJob, error) {
	var j QueryJob
	err := c.doJSON(ctx, get(pathOf("v1", "queries", handle)), nil, &j)
	return j, err
}

// CancelQuery stops a running job and returns it as it ended.
func (c *Client) CancelQuery(ctx context.Context, handle string) (QueryJob, error) {
	var j QueryJob
	err := c.doJSON(ctx, del(pathOf("v1", "queries", handle)), nil, &j)
	return j, err
}

// ListQueries returns the caller's jobs (every job for a server admin),
// newest first.
func (c *Client) ListQueries(ctx context.Context) ([]QueryJob, error) {
	var out struct {
		Queries []QueryJob `json:"queries"`
	}
	err := c.doJSON(ctx, get("/v1/queries"), nil, &out)
	return out.Queries, err
}

// WaitQuery polls the job every interval until it ends, calling progress
// (if not nil) with each state seen.
func (c *Client) WaitQuery(ctx context.Context, handle string, interval time.Duration, progress func(QueryJob)) (QueryJob, error) {
	for {
		j, err := c.GetQuery(ctx, handle)
		if err != nil {
			return j, err
		}
		if progress != nil {
			progress(j)
		}
		if j.Done() {
			return j, nil
		}
		if err := sleep(ctx, interval); err != nil {
			return j, err
		}
	}
}

// QueryResults streams a succeeded job's rows: format "jsonl" (JSON
// lines) or "csv". The caller closes the reader.
func (c *Client) QueryResults(ctx context.Context, handle, format string) (io.ReadCloser, error) {
	rq := request{method: http.MethodGet, path: pathOf("v1", "queries", handle, "results"), idempotent: true,
		query: url.Values{"format": {format}}}
	resp, err := c.do(ctx, rq)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// PackagedQuery is one version of a packaged query.
type PackagedQuery struct {
	Name        string    `json:"name"`
	Version     int       `json:"version"`
	Query       string    `json:"query"`
	Params      []string  `json:"params"`
	Description string    `json:"description,omitempty"`
	Owner       string    `json:"owner"`
	Created     time.Time `json:"created"`
}

// DefineQuery stores text as the next version of the packaged query name
// (admin on every stream it reads is needed).
func (c *Client) DefineQuery(ctx context.Context, name, text, description string) (PackagedQuery, error) {
	var p PackagedQuery
	err := c.doJSON(ctx, create("/v1/packaged-queries"), map[string]string{"name": name, "query": text, "description": description}, &p)
	return p, err
}

// ListPackagedQueries returns the latest version of each packaged query
// the caller could run.
func (c *Client) ListPackagedQueries(ctx context.Context) ([]PackagedQuery, error) {
	var out struct {
		Queries []PackagedQuery `json:"queries"`
	}
	err := c.doJSON(ctx, get("/v1/packaged-queries"), nil, &out)
	return out.Queries, err
}

// PackagedQueryVersions returns every version of name, oldest first.
func (c *Client) PackagedQueryVersions(ctx context.Context, name string) ([]PackagedQuery, error) {
	var out struct {
		Queries []PackagedQuery `json:"queries"`
	}
	err := c.doJSON(ctx, get(pathOf("v1", "packaged-queries", name)), nil, &out)
	return out.Queries, err
}
