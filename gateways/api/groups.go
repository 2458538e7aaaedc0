package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/groups"
)

// Reader groups (docs/groups.md). Managing a group (create, list,
// describe, reset, delete) needs admin on every stream it reads; reading
// with it (join, heartbeat, commit, leave) and its lag need read on every
// stream it reads. A group that does not exist is checked against its
// tenant, so that its absence is told only to those who could see it.

// UseGroups connects the reader groups. Call it before serving; without
// it the group routes answer 501.
func (s *Server) UseGroups(g *groups.Coordinator) { s.groups = g }

// GroupSource is what the coordinator reads streams through: the store,
// and reads that go to tier 2 for what tier 1 no longer holds.
func (s *Server) GroupSource() groups.Source { return groupSource{s} }

type groupSource struct{ s *Server }

func (g groupSource) GetStream(ctx context.Context, tenant, name string) (core.Stream, error) {
	return g.s.store.GetStream(ctx, tenant, name)
}

func (g groupSource) StreamVersion(tenant, name string) (int64, uint64, error) {
	return g.s.store.StreamVersion(tenant, name)
}

func (g groupSource) Oldest(ctx context.Context, st core.Stream, sg core.SegmentInfo) (uint64, error) {
	return g.s.oldestOffset(ctx, st.Tenant, st.Name, sg)
}

func (g groupSource) EventAt(ctx context.Context, tenant, stream, segment string, off uint64) (core.Event, bool, error) {
	res, err := g.s.readSegment(ctx, core.ReadRequest{Tenant: tenant, Stream: stream, Segment: segment,
		From: off, MaxEvents: 1, MaxBytes: g.s.limits.MaxEventBytes})
	if errors.Is(err, core.ErrOutOfRange) || err == nil && len(res.Events) == 0 {
		return core.Event{}, false, nil
	}
	if err != nil {
		return core.Event{}, false, err
	}
	return res.Events[0], true, nil
}

var errNoGroups = &httpError{status: http.StatusNotImplemented, code: "not_configured",
	msg: "this server has no reader groups configured"}

func checkGroupName(s string) error {
	if err := names.Stream(s); err != nil {
		return badRequest("group %q: want %s", s, names.StreamRule)
	}
	return nil
}

// groupResources are what a route on group g checks: every stream of the
// group, or the tenant when the group does not exist.
func (s *Server) groupResources(ctx context.Context, tenant string, streams []string) []acl.Resource {
	if len(streams) == 0 {
		return []acl.Resource{{Tenant: tenant}}
	}
	out := make([]acl.Resource, 0, len(streams))
	for _, name := range streams {
		// A stream that is gone has no ACL group to match on; its name
		// still does.
		// The set alone, from the stream's record: describing the stream
		// would cost a row per segment on every group request.
		cfg, _ := s.store.StreamConfig(tenant, name)
		out = append(out, acl.Resource{Tenant: tenant, Stream: name, Set: cfg.Set})
	}
	return out
}

// groupOp prepares a route on the group named in the path.
func (s *Server) groupOp(c *call, run func(tenant, name string) error) (op, error) {
	if s.groups == nil {
		return op{}, errNoGroups
	}
	tenant, name := c.r.PathValue("tenant"), c.r.PathValue("group")
	if err := checkGroupName(name); err != nil {
		return op{}, err
	}
	g, err := s.groups.Get(tenant, name)
	res := s.groupResources(c.r.Context(), tenant, g.Streams)
	return op{res: res[0], also: res[1:], run: func() error {
		if err != nil {
			return err
		}
		return run(tenant, name)
	}}, nil
}

// groupJSON is a group on the wire: durations as Go duration strings.
type groupJSON struct {
	Tenant         string       `json:"tenant"`
	Name           string       `json:"name"`
	Streams        []string     `json:"streams"`
	Created        time.Time    `json:"created"`
	SessionTimeout string       `json:"session_timeout"`
	Generation     uint64       `json:"generation"`
	Members        []memberJSON `json:"members"`
	// Positions are in describe and reset answers only.
	Positions []groups.Position `json:"positions,omitempty"`
}

type memberJSON struct {
	ID            string              `json:"id"`
	Segments      []groups.SegmentRef `json:"segments"`
	LastHeartbeat *time.Time          `json:"last_heartbeat,omitempty"`
}

func toGroupJSON(g groups.Group) groupJSON {
	out := groupJSON{Tenant: g.Tenant, Name: g.Name, Streams: g.Streams, Created: g.Created,
		SessionTimeout: g.SessionTimeout.String(), Generation: g.Generation, Members: []memberJSON{}}
	for _, m := range g.Members {
		out.Members = append(out.Members, memberJSON{ID: m.ID, Segments: nonNil(m.Segments)})
	}
	return out
}

func toDescriptionJSON(d groups.Description) groupJSON {
	out := toGroupJSON(d.Group)
	out.Members = []memberJSON{}
	for _, m := range d.Members {
		at := m.LastHeartbeat
		out.Members = append(out.Members, memberJSON{ID: m.ID, Segments: nonNil(m.Segments), LastHeartbeat: &at})
	}
	out.Positions = nonNil(d.Positions)
	return out
}

type groupList struct {
	Groups []groupJSON `json:"groups"`
}

type startJSON struct {
	Kind      string            `json:"kind"`
	Time      string            `json:"time,omitempty"`
	Positions []groups.Position `json:"positions,omitempty"`
}

func (j startJSON) parse() (groups.Start, error) {
	st := groups.Start{Kind: j.Kind, Positions: j.Positions}
	if j.Kind == "" {
		st.Kind = groups.StartHead
	}
	if j.Time != "" {
		t, err := time.Parse(time.RFC3339Nano, j.Time)
		if err != nil {
			return st, badRequest("start time %q: want RFC 3339, such as 2026-01-02T15:04:05Z", j.Time)
		}
		st.Time = t
	}
	return st, nil
}

type createGroupRequest struct {
	Name           string    `json:"name"`
	Streams        []string  `json:"streams"`
	SessionTimeout string    `json:"session_timeout,omitempty"`
	Start          startJSON `json:"start"`
}

func (s *Server) createGroup(c *call) (op, error) {
	if s.groups == nil {
		return op{}, errNoGroups
	}
	tenant := c.r.PathValue("tenant")
	var req createGroupRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	var timeout time.Duration
	if req.SessionTimeout != "" {
		d, err := time.ParseDuration(req.SessionTimeout)
		if err != nil || d <= 0 {
			return op{}, badRequest("session_timeout %q: want a positive Go duration such as \"10s\"", req.SessionTimeout)
		}
		timeout = d
	}
	start, err := req.Start.parse()
	if err != nil {
		return op{}, err
	}
	for _, name := range req.Streams {
		if err := names.Stream(name); err != nil {
			return op{}, err
		}
	}
	res := s.groupResources(c.r.Context(), tenant, req.Streams)
	return op{res: res[0], also: res[1:], run: func() error {
		if _, err := s.store.GetTenant(c.r.Context(), tenant); err != nil {
			return err
		}
		g, err := s.groups.Create(c.r.Context(), tenant, groups.CreateRequest{
			Name: req.Name, Streams: req.Streams, SessionTimeout: timeout, Start: start})
		if err != nil {
			return err
		}
		c.w.Header().Set("Location", "/v1/tenants/"+url.PathEscape(tenant)+"/groups/"+url.PathEscape(g.Name))
		writeJSON(c.w, http.StatusCreated, toGroupJSON(g))
		return nil
	}}, nil
}

// listGroups shows the groups the caller could describe: those over
// streams it holds admin on.
func (s *Server) listGroups(c *call) (op, error) {
	if s.groups == nil {
		return op{}, errNoGroups
	}
	tenant := c.r.PathValue("tenant")
	return op{res: acl.Resource{Tenant: tenant}, run: func() error {
		if _, err := s.store.GetTenant(c.r.Context(), tenant); err != nil {
			return err
		}
		out := groupList{Groups: []groupJSON{}}
	next:
		for _, g := range s.groups.List(tenant) {
			for _, res := range s.groupResources(c.r.Context(), tenant, g.Streams) {
				if !c.covers(acl.Admin, res) {
					continue next
				}
			}
			out.Groups = append(out.Groups, toGroupJSON(g))
		}
		writeJSON(c.w, http.StatusOK, out)
		return nil
	}}, nil
}

func (s *Server) describeGroup(c *call) (op, error) {
	return s.groupOp(c, func(tenant, name string) error {
		d, err := s.groups.Describe(c.r.Context(), tenant, name)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, toDescriptionJSON(d))
		return nil
	})
}

func parseForce(q url.Values) (bool, error) {
	v := q.Get("force")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("force %q: want true or false", v)
	}
	return b, nil
}

func (s *Server) deleteGroup(c *call) (op, error) {
	force, err := parseForce(c.r.URL.Query())
	if err != nil {
		return op{}, err
	}
	return s.groupOp(c, func(tenant, name string) error {
		if err := s.groups.Delete(c.r.Context(), tenant, name, force); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}

type resetGroupRequest struct {
	Start startJSON `json:"start"`
	Force bool      `json:"force,omitempty"`
}

func (s *Server) resetGroup(c *call) (op, error) {
	var req resetGroupRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	if req.Start.Kind == "" {
		return op{}, badRequest("start.kind is required: head, tail, time or positions")
	}
	start, err := req.Start.parse()
	if err != nil {
		return op{}, err
	}
	return s.groupOp(c, func(tenant, name string) error {
		d, err := s.groups.Reset(c.r.Context(), tenant, name, start, req.Force)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, toDescriptionJSON(d))
		return nil
	})
}

func (s *Server) groupLag(c *call) (op, error) {
	rows := true
	if v := c.r.URL.Query().Get("segments"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return op{}, badRequest("segments %q: want true or false", v)
		}
		rows = b
	}
	return s.groupOp(c, func(tenant, name string) error {
		lag := s.groups.Lag
		if !rows {
			// The totals alone cost a lookup per stream, not a row per
			// segment (groups.Coordinator.LagTotal).
			lag = s.groups.LagTotal
		}
		l, err := lag(c.r.Context(), tenant, name)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, l)
		return nil
	})
}

// assignmentJSON is a reader's assignment on the wire.
type assignmentJSON struct {
	Group          string            `json:"group"`
	Member         string            `json:"member"`
	Generation     uint64            `json:"generation"`
	Resets         uint64            `json:"resets"`
	SessionTimeout string            `json:"session_timeout"`
	Segments       []groups.Position `json:"segments"`
}

func toAssignmentJSON(a groups.Assignment) assignmentJSON {
	return assignmentJSON{Group: a.Group, Member: a.Member, Generation: a.Generation, Resets: a.Resets,
		SessionTimeout: a.SessionTimeout.String(), Segments: nonNil(a.Segments)}
}

type joinRequest struct {
	Member string `json:"member,omitempty"`
}

func (s *Server) joinGroup(c *call) (op, error) {
	var req joinRequest
	if err := c.decodeJSON(&req); err != nil && err != errEmptyJSON {
		return op{}, err
	}
	return s.groupOp(c, func(tenant, name string) error {
		a, err := s.groups.Join(c.r.Context(), tenant, name, req.Member)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, toAssignmentJSON(a))
		return nil
	})
}

type heartbeatRequest struct {
	Generation uint64 `json:"generation"`
}

func (s *Server) heartbeatGroup(c *call) (op, error) {
	var req heartbeatRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	member := c.r.PathValue("member")
	return s.groupOp(c, func(tenant, name string) error {
		a, err := s.groups.Heartbeat(c.r.Context(), tenant, name, member, req.Generation)
		if err != nil {
			return err
		}
		writeJSON(c.w, http.StatusOK, toAssignmentJSON(a))
		return nil
	})
}

func (s *Server) leaveGroup(c *call) (op, error) {
	member := c.r.PathValue("member")
	return s.groupOp(c, func(tenant, name string) error {
		if err := s.groups.Leave(c.r.Context(), tenant, name, member); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}

type commitRequest struct {
	Generation uint64            `json:"generation"`
	Positions  []groups.Position `json:"positions"`
}

// maxCommitPositions bounds one commit: a group reads at most
// groups.max_streams streams of at most core.limits.max_segments segments,
// and the body is bounded anyway; this names the limit in the error.
const maxCommitPositions = 1 << 14

func (s *Server) commitGroup(c *call) (op, error) {
	var req commitRequest
	if err := c.decodeJSON(&req); err != nil {
		return op{}, err
	}
	if len(req.Positions) > maxCommitPositions {
		return op{}, badRequest("a commit holds at most %d positions, got %d", maxCommitPositions, len(req.Positions))
	}
	member := c.r.PathValue("member")
	return s.groupOp(c, func(tenant, name string) error {
		if err := s.groups.Commit(c.r.Context(), tenant, name, member, req.Generation, req.Positions); err != nil {
			return err
		}
		noContent(c.w)
		return nil
	})
}
