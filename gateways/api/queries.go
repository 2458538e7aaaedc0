package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/query"
	"github.com/silt-io/silt/query/jobs"
)

// Query jobs (docs/query.md). A query runs as its submitter: submitting
// needs read on every stream it reads (the route table checks them all),
// and the job, its progress and its results are guarded by read on its
// result stream, which the submitter is granted when the job starts.

var errNoQueries = &httpError{status: http.StatusNotImplemented, code: "not_configured",
	msg: "this server does not run queries"}

// UseQueries connects the query job manager. Call it before serving.
func (s *Server) UseQueries(m *jobs.Manager) { s.queries = m }

// QuerySource reads streams for queries as the read route does: tier 1,
// and tier 2 for what tier 1 no longer holds.
func (s *Server) QuerySource() query.Source {
	if s.querySrc != nil {
		return s.querySrc
	}
	return querySource{s}
}

type querySource struct{ s *Server }

func (q querySource) Segments(ctx context.Context, tenant, stream string) ([]query.Segment, error) {
	st, err := q.s.store.GetStream(ctx, tenant, stream)
	if err != nil {
		return nil, err
	}
	out := make([]query.Segment, 0, len(st.Segments))
	for _, sg := range st.Segments {
		first, err := q.s.oldestOffset(ctx, tenant, stream, sg)
		if err != nil {
			return nil, err
		}
		bytes := sg.Bytes
		// Tier 1 holds [FirstOffset, Next); scale its bytes to what is
		// read when tier 2 adds older events.
		if n := sg.NextOffset - sg.FirstOffset; n > 0 && first < sg.FirstOffset {
			bytes = bytes * int64(sg.NextOffset-first) / int64(n)
		}
		out = append(out, query.Segment{ID: sg.ID, First: first, Next: sg.NextOffset, Bytes: bytes})
	}
	return out, nil
}

func (q querySource) Read(ctx context.Context, tenant, stream, segment string, from uint64, maxEvents, maxBytes int) ([]query.Event, uint64, error) {
	res, err := q.s.readSegment(ctx, core.ReadRequest{Tenant: tenant, Stream: stream, Segment: segment, From: from, MaxEvents: maxEvents, MaxBytes: maxBytes})
	if err != nil {
		return nil, from, err
	}
	out := make([]query.Event, len(res.Events))
	for i, e := range res.Events {
		out[i] = query.Event{Offset: e.Offset, Time: e.Time, Data: e.Data}
	}
	return out, res.Next, nil
}

type submitQueryRequest struct {
	Query string `json:"query"`
	// Name, Version (0: the latest) and Params run a packaged query.
	Name    string            `json:"name"`
	Version int               `json:"version"`
	Params  map[string]string `json:"params"`
	// Continuous runs the query until cancelled (docs/query.md).
	Continuous bool `json:"continuous"`
	Webhook    *struct {
		URL    string `json:"url"`
		Secret string `json:"secret"`
	} `json:"webhook"`
}

func (s *Server) submitQuery(c *call) (op, error) {
	if s.queries == nil {
		return op{}, errNoQueries
	}
	var req submitQueryRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	opts := jobs.Options{}
	text := req.Query
	switch {
	case req.Name != "" && req.Query != "":
		return op{}, badRequest("give \"query\" (a query's text) or \"name\" (a packaged query's), not both")
	case req.Name != "":
		pq, err := s.queries.Packaged(req.Name, req.Version)
		if err != nil {
			return op{}, err
		}
		if text, err = query.Bind(pq.Query, req.Params); err != nil {
			return op{}, err
		}
		opts.Packaged, opts.Version, opts.Params = pq.Name, pq.Version, req.Params
	case len(req.Params) > 0 || req.Version != 0:
		return op{}, badRequest("\"params\" and \"version\" go with \"name\", a packaged query")
	case strings.TrimSpace(req.Query) == "":
		return op{}, badRequest("\"query\" is required: the query text, e.g. from tenant/stream | head 10")
	}
	q, err := query.Parse(text, s.queries.Limits())
	if err != nil {
		return op{}, err
	}
	if req.Continuous {
		if err := q.CheckContinuous(); err != nil {
			return op{}, err
		}
		opts.Continuous = true
	}
	res, lookupErr := s.queryResources(c, q)
	if req.Webhook != nil {
		opts.Webhook = &jobs.Webhook{URL: req.Webhook.URL, Secret: req.Webhook.Secret}
	}
	return op{res: res[0], also: res[1:], run: func() error {
		if lookupErr != nil {
			return lookupErr
		}
		job, err := s.queries.Submit(c.principal.Name, q, s.QuerySource(), opts)
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/queries/"+job.Handle)
		writeJSON(c.w, http.StatusAccepted, job)
		return nil
	}}, nil
}

// queryResources are the streams q reads, as the resources the route
// table checks the caller against. A missing stream is reported (by the
// returned error) only after that check, so that its absence is told only
// to callers who may read it.
func (s *Server) queryResources(c *call, q *query.Query) ([]acl.Resource, error) {
	var res []acl.Resource
	var lookupErr error
	for _, ref := range q.Streams() {
		st, err := s.store.GetStream(c.r.Context(), ref.Tenant, ref.Stream)
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		res = append(res, acl.Resource{Tenant: ref.Tenant, Stream: ref.Stream, Set: st.Config.Set})
	}
	return res, lookupErr
}

type definePackagedRequest struct {
	Name        string `json:"name"`
	Query       string `json:"query"`
	Description string `json:"description"`
}

// definePackaged stores a new version of a packaged query. It needs admin
// on every stream the query reads: whoever may run it still needs read on
// them, but only their admins decide what is offered on them.
func (s *Server) definePackaged(c *call) (op, error) {
	if s.queries == nil {
		return op{}, errNoQueries
	}
	var req definePackagedRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	q, _, err := jobs.CheckPackaged(req.Name, req.Query, s.queries.Limits())
	if err != nil {
		return op{}, err
	}
	res, lookupErr := s.queryResources(c, q)
	return op{res: res[0], also: res[1:], run: func() error {
		if lookupErr != nil {
			return lookupErr
		}
		p, err := s.queries.Define(c.principal.Name, req.Name, req.Query, req.Description)
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/packaged-queries/"+p.Name)
		writeJSON(c.w, http.StatusCreated, p)
		return nil
	}}, nil
}

type packagedList struct {
	Queries []jobs.Packaged `json:"queries"`
}

// readable reports whether the caller may read every stream of text, to
// show packaged queries only to those who could run them.
func (s *Server) readable(c *call, text string) bool {
	q, _, err := jobs.CheckPackaged("x", text, s.queries.Limits())
	if err != nil {
		return false
	}
	res, _ := s.queryResources(c, q)
	for _, r := range res {
		if !c.covers(acl.Read, r) {
			return false
		}
	}
	return true
}

func (s *Server) listPackaged(c *call) (op, error) {
	if s.queries == nil {
		return op{}, errNoQueries
	}
	return op{run: func() error {
		all, err := s.queries.ListPackaged()
		if err != nil {
			return err
		}
		out := []jobs.Packaged{}
		for _, p := range all {
			if s.readable(c, p.Query) {
				out = append(out, p)
			}
		}
		writeJSON(c.w, http.StatusOK, packagedList{Queries: out})
		return nil
	}}, nil
}

// getPackaged returns every version of a packaged query, oldest first;
// a caller who may not read its streams is told it does not exist.
func (s *Server) getPackaged(c *call) (op, error) {
	if s.queries == nil {
		return op{}, errNoQueries
	}
	name := c.r.PathValue("name")
	return op{run: func() error {
		vs, err := s.queries.Versions(name)
		if err != nil {
			return err
		}
		if !s.readable(c, vs[len(vs)-1].Query) {
			return fmt.Errorf("%w: no packaged query %q", jobs.ErrNotFound, name)
		}
		writeJSON(c.w, http.StatusOK, packagedList{Queries: vs})
		return nil
	}}, nil
}

// queryTarget resolves {handle} to the resource guarding it: its result
// stream.
func (s *Server) queryTarget(c *call) (string, acl.Resource, error) {
	if s.queries == nil {
		return "", acl.Resource{}, errNoQueries
	}
	h := c.r.PathValue("handle")
	if !jobs.ValidHandle(h) {
		return "", acl.Resource{}, fmt.Errorf("%w: %q is not a query handle", jobs.ErrNotFound, h)
	}
	return h, acl.Resource{Tenant: s.queries.ResultTenant(), Stream: jobs.ResultStream(h)}, nil
}

func (s *Server) getQuery(c *call) (op, error) {
	h, res, err := s.queryTarget(c)
	if err != nil {
		return op{}, err
	}
	return op{res: res, run: func() error {
		job, err := s.queries.Get(h)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, job)
		return nil
	}}, nil
}

func (s *Server) cancelQuery(c *call) (op, error) {
	h, res, err := s.queryTarget(c)
	if err != nil {
		return op{}, err
	}
	return op{res: res, run: func() error {
		job, err := s.queries.Cancel(h)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, job)
		return nil
	}}, nil
}

type queryList struct {
	Queries []jobs.Job `json:"queries"`
}

// listQueries shows the caller's own queries, or every query to a caller
// who is admin of the server.
func (s *Server) listQueries(c *call) (op, error) {
	if s.queries == nil {
		return op{}, errNoQueries
	}
	return op{run: func() error {
		all := c.covers(acl.Admin, acl.Resource{})
		list, err := s.queries.List(c.principal.Name, all)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, queryList{Queries: nonNil(list)})
		return nil
	}}, nil
}

// queryResults streams a succeeded query's rows from its result stream,
// as JSON lines or as CSV with the job's columns.
func (s *Server) queryResults(c *call) (op, error) {
	h, res, err := s.queryTarget(c)
	if err != nil {
		return op{}, err
	}
	csvOut := false
	switch f := c.r.URL.Query().Get("format"); f {
	case "":
		csvOut = strings.Contains(c.r.Header.Get("Accept"), "text/csv")
	case "csv":
		csvOut = true
	case "jsonl", "ndjson", "json":
	default:
		return op{}, badRequest("format %q: want jsonl or csv", f)
	}
	return op{res: res, run: func() error {
		job, err := s.queries.Get(h)
		if err != nil {
			return err
		}
		// A continuous job's rows are there as its windows close.
		if job.State != jobs.Succeeded && !job.Continuous {
			msg := fmt.Sprintf("query %s is %s; results are served once it has succeeded", h, job.State)
			if job.Error != "" {
				msg += ": " + job.Error
			}
			return fmt.Errorf("%w: %s", jobs.ErrNotDone, msg)
		}
		ctx := c.r.Context()
		st, err := s.store.GetStream(ctx, job.ResultTenant, job.ResultStream)
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(c.w, 64<<10)
		var cw *csv.Writer
		if csvOut {
			c.w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			cw = csv.NewWriter(bw)
			if err := cw.Write(job.Columns); err != nil {
				return err
			}
		} else {
			c.w.Header().Set("Content-Type", "application/x-ndjson")
		}
		c.w.Header().Set("Silt-Query-Rows", fmt.Sprint(job.Rows))
		src := querySource{s}
		for _, sg := range st.Segments {
			first, err := s.oldestOffset(ctx, st.Tenant, st.Name, sg)
			if err != nil {
				return err
			}
			for next := first; next < sg.NextOffset; {
				evs, n, err := src.Read(ctx, st.Tenant, st.Name, sg.ID, next, 1000, maxResponseBytes)
				if err != nil {
					return err
				}
				if n <= next {
					break
				}
				next = n
				for _, e := range evs {
					if cw == nil {
						bw.Write(e.Data)
						bw.WriteByte('\n')
						continue
					}
					if err := cw.Write(csvRecord(job.Columns, e.Data)); err != nil {
						return err
					}
				}
			}
		}
		if cw != nil {
			cw.Flush()
			if err := cw.Error(); err != nil {
				return err
			}
		}
		return bw.Flush()
	}}, nil
}

// csvRecord lays a result row out in columns: strings as they are,
// null and missing fields empty, anything else as its JSON.
func csvRecord(cols []string, line []byte) []string {
	var row map[string]json.RawMessage
	out := make([]string, len(cols))
	if err := json.Unmarshal(line, &row); err != nil {
		return out
	}
	for i, c := range cols {
		v, ok := row[c]
		if !ok || bytes.Equal(v, []byte("null")) {
			continue
		}
		var str string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &str) == nil {
			out[i] = str
			continue
		}
		out[i] = string(v)
	}
	return out
}

// queryErrorDetail is the position of a mistake in a query, for 400s.
type queryErrorDetail struct {
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Hint    string `json:"hint,omitempty"`
	Snippet string `json:"snippet"`
}

func queryPosition(err error) *queryErrorDetail {
	var qe *query.Error
	if !errors.As(err, &qe) {
		return nil
	}
	return &queryErrorDetail{Line: qe.Line, Column: qe.Column, Hint: qe.Hint, Snippet: qe.Snippet}
}
