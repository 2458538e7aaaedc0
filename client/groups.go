package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Reader groups (docs/groups.md): the calls to manage them, and the
// low-level membership calls GroupReader is built on.

// Group start kinds.
const (
	StartHead      = "head"      // the oldest event still held
	StartTail      = "tail"      // only events appended from now on
	StartTime      = "time"      // the first event appended at or after Time
	StartPositions = "positions" // the given positions; other segments at head
)

// GroupStart is where a group, or a reset, begins.
type GroupStart struct {
	Kind      string     `json:"kind"`
	Time      string     `json:"time,omitempty"` // RFC 3339, for StartTime
	Positions []Position `json:"positions,omitempty"`
}

// StartAt is a GroupStart at the first event appended at or after t.
func StartAt(t time.Time) GroupStart {
	return GroupStart{Kind: StartTime, Time: t.UTC().Format(time.RFC3339Nano)}
}

// Position is where a group reads a segment next.
type Position struct {
	Stream    string    `json:"stream"`
	Segment   string    `json:"segment"`
	Offset    uint64    `json:"offset"`
	Done      bool      `json:"done,omitempty"`
	Committed time.Time `json:"committed,omitzero"`
}

// GroupSpec creates a group.
type GroupSpec struct {
	Name    string   `json:"name"`
	Streams []string `json:"streams"`
	// SessionTimeout is how long a reader may go without a heartbeat
	// (0: the server's default, 10 s).
	SessionTimeout time.Duration `json:"-"`
	Start          GroupStart    `json:"start"`
}

// GroupSegment names one segment of a group's stream.
type GroupSegment struct {
	Stream  string `json:"stream"`
	Segment string `json:"segment"`
}

// GroupMember is a live reader of a group.
type GroupMember struct {
	ID            string         `json:"id"`
	Segments      []GroupSegment `json:"segments"`
	LastHeartbeat time.Time      `json:"last_heartbeat,omitzero"`
}

// Group is a reader group; Positions are set by GetGroup and ResetGroup.
type Group struct {
	Tenant         string        `json:"tenant"`
	Name           string        `json:"name"`
	Streams        []string      `json:"streams"`
	Created        time.Time     `json:"created"`
	SessionTimeout string        `json:"session_timeout"`
	Generation     uint64        `json:"generation"`
	Members        []GroupMember `json:"members"`
	Positions      []Position    `json:"positions,omitempty"`
}

// SegmentLag is how far a group is behind in one segment.
type SegmentLag struct {
	Stream        string  `json:"stream"`
	Segment       string  `json:"segment"`
	Reader        string  `json:"reader,omitempty"`
	Committed     uint64  `json:"committed"`
	Next          uint64  `json:"next"`
	EventsBehind  uint64  `json:"events_behind"`
	BytesBehind   int64   `json:"bytes_behind"`
	SecondsBehind float64 `json:"seconds_behind"`
}

// GroupLag is how far a group is behind. Events are exact; bytes are
// estimated by the server from mean record sizes; seconds are the age of
// the oldest uncommitted event.
type GroupLag struct {
	Tenant        string       `json:"tenant"`
	Group         string       `json:"group"`
	Generation    uint64       `json:"generation"`
	EventsBehind  uint64       `json:"events_behind"`
	BytesBehind   int64        `json:"bytes_behind"`
	SecondsBehind float64      `json:"seconds_behind"`
	Segments      []SegmentLag `json:"segments"`
}

// Assignment is a reader's share of a group in one generation.
type Assignment struct {
	Group          string     `json:"group"`
	Member         string     `json:"member"`
	Generation     uint64     `json:"generation"`
	Resets         uint64     `json:"resets"`
	SessionTimeout string     `json:"session_timeout"`
	Segments       []Position `json:"segments"`
}

func groupsPath(tenant string, rest ...string) string {
	return pathOf(append([]string{"v1", "tenants", tenant, "groups"}, rest...)...)
}

// CreateGroup creates a reader group.
func (c *Client) CreateGroup(ctx context.Context, tenant string, spec GroupSpec) (Group, error) {
	body := struct {
		GroupSpec
		SessionTimeout string `json:"session_timeout,omitempty"`
	}{GroupSpec: spec}
	if spec.SessionTimeout > 0 {
		body.SessionTimeout = spec.SessionTimeout.String()
	}
	if body.Start.Kind == "" {
		body.Start.Kind = StartHead
	}
	var g Group
	err := c.doJSON(ctx, create(groupsPath(tenant)), body, &g)
	return g, err
}

// ListGroups lists the tenant's groups the caller administers.
func (c *Client) ListGroups(ctx context.Context, tenant string) ([]Group, error) {
	var out struct {
		Groups []Group `json:"groups"`
	}
	err := c.doJSON(ctx, get(groupsPath(tenant)), nil, &out)
	return out.Groups, err
}

// GetGroup describes a group: live readers, their segments, positions.
func (c *Client) GetGroup(ctx context.Context, tenant, name string) (Group, error) {
	var g Group
	err := c.doJSON(ctx, get(groupsPath(tenant, name)), nil, &g)
	return g, err
}

// DeleteGroup deletes a group; while readers are live the server refuses
// (409) unless force is set.
func (c *Client) DeleteGroup(ctx context.Context, tenant, name string, force bool) error {
	rq := del(groupsPath(tenant, name))
	if force {
		rq.query = url.Values{"force": {"true"}}
	}
	return c.doJSON(ctx, rq, nil, nil)
}

// ResetGroup moves every position of a group to start; while readers are
// live the server refuses (409) unless force is set, which drops them.
func (c *Client) ResetGroup(ctx context.Context, tenant, name string, start GroupStart, force bool) (Group, error) {
	var g Group
	rq := request{method: http.MethodPost, path: groupsPath(tenant, name, "reset"), idempotent: true}
	err := c.doJSON(ctx, rq, map[string]any{"start": start, "force": force}, &g)
	return g, err
}

// GroupLag returns how far a group is behind.
func (c *Client) GroupLag(ctx context.Context, tenant, name string) (GroupLag, error) {
	var l GroupLag
	err := c.doJSON(ctx, get(groupsPath(tenant, name, "lag")), nil, &l)
	return l, err
}

// GroupLagTotal returns how far a group is behind in total, without the
// per-segment rows (Segments is empty): it costs the server a lookup per
// stream of the group, not a row per segment.
func (c *Client) GroupLagTotal(ctx context.Context, tenant, name string) (GroupLag, error) {
	var l GroupLag
	rq := get(groupsPath(tenant, name, "lag"))
	rq.query = url.Values{"segments": {"false"}}
	err := c.doJSON(ctx, rq, nil, &l)
	return l, err
}

// JoinGroup joins a group as reader member ("" lets the server name it).
// Joining again as a live member returns the current assignment.
func (c *Client) JoinGroup(ctx context.Context, tenant, name, member string) (Assignment, error) {
	var a Assignment
	// Without a member id each retry would join another member.
	rq := request{method: http.MethodPost, path: groupsPath(tenant, name, "members"), idempotent: member != ""}
	err := c.doJSON(ctx, rq, map[string]string{"member": member}, &a)
	return a, err
}

// GroupHeartbeat keeps a member's session alive; an error for which
// IsRejoin is true means the generation is over: join again.
func (c *Client) GroupHeartbeat(ctx context.Context, tenant, name, member string, generation uint64) (Assignment, error) {
	var a Assignment
	rq := request{method: http.MethodPost, path: groupsPath(tenant, name, "members", member, "heartbeat"), idempotent: true}
	err := c.doJSON(ctx, rq, map[string]uint64{"generation": generation}, &a)
	return a, err
}

// CommitGroup stores positions (the next offsets to read) of the member's
// segments, all or none.
func (c *Client) CommitGroup(ctx context.Context, tenant, name, member string, generation uint64, positions []Position) error {
	rq := request{method: http.MethodPost, path: groupsPath(tenant, name, "members", member, "commit"), idempotent: true}
	return c.doJSON(ctx, rq, map[string]any{"generation": generation, "positions": positions}, nil)
}

// LeaveGroup removes a member at once, handing its segments to the others.
func (c *Client) LeaveGroup(ctx context.Context, tenant, name, member string) error {
	return c.doJSON(ctx, del(groupsPath(tenant, name, "members", member)), nil, nil)
}
