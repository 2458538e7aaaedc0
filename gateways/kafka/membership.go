package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's group membership protocol (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup) runs here, in memory: members join in rounds, the round's
// leader assigns partitions on the client side, and every change of
// membership starts a new generation. What a group has read — its
// committed offsets — is kept by silt's reader group of the same name
// (groups.go), so that `silt group lag` shows Kafka consumers too. A
// restart loses the membership, as a Kafka coordinator failover does:
// consumers rejoin and continue from the committed offsets.

// The session and rebalance timeouts a member may ask for.
const (
	minSession = time.Second
	maxSession = 30 * time.Minute
)

type groupState int

const (
	groupEmpty groupState = iota
	groupPreparing
	groupCompleting
	groupStable
)

// String is the state as DescribeGroups and ListGroups name it.
func (s groupState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"}[s]
}

type member struct {
	id, clientID, host string
	protocols          []kmsg.JoinGroupRequestProtocol
	session, rebalance time.Duration
	seen               time.Time
	// joined: the member joined the round in progress.
	joined     bool
	assignment []byte
}

// kgroup is one Kafka group's membership.
type kgroup struct {
	mu           sync.Mutex
	state        groupState
	generation   int32
	protocolType string
	protocol     string
	leader       string
	members      map[string]*member
	// joinDone closes when the join round in progress completes,
	// syncDone when the leader's assignment for the generation is in.
	joinDone, syncDone chan struct{}
	timer              *time.Timer

	// bridge serializes the head's commits into the silt group and
	// keeps the generation it joined that group with (groups.go).
	bridge struct {
		sync.Mutex
		joined bool
		gen    uint64
	}
}

// memberships holds every Kafka group the head has seen since it started.
type memberships struct {
	mu     sync.Mutex
	groups map[string]*kgroup
}

func (ms *memberships) get(id string, create bool) *kgroup {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.groups == nil {
		ms.groups = map[string]*kgroup{}
	}
	g := ms.groups[id]
	if g == nil && create {
		g = &kgroup{members: map[string]*member{}}
		ms.groups[id] = g
	}
	return g
}

func (ms *memberships) forget(id string) {
	ms.mu.Lock()
	delete(ms.groups, id)
	ms.mu.Unlock()
}

func newMemberID(clientID string) string {
	var b [8]byte
	rand.Read(b[:])
	if len(clientID) > 64 {
		clientID = clientID[:64]
	}
	return clientID + "-" + hex.EncodeToString(b[:])
}

// expireLocked drops members not heard from within their session. In a
// join round the members that joined wait for the others and are not
// dropped; one that has not rejoined within its session is, as Kafka's
// coordinator does, so that a dead member does not hold the round for its
// whole rebalance timeout.
func (g *kgroup) expireLocked(now time.Time) {
	if g.state == groupPreparing {
		for id, m := range g.members {
			if !m.joined && now.Sub(m.seen) > m.session {
				delete(g.members, id)
			}
		}
		if g.allJoinedLocked() { // also when none is left
			g.completeLocked()
		}
		return
	}
	gone := false
	for id, m := range g.members {
		if now.Sub(m.seen) > m.session {
			delete(g.members, id)
			gone = true
		}
	}
	if gone {
		g.rebalanceLocked()
	}
}

// rebalanceLocked starts a join round for the members left, or empties
// the group.
func (g *kgroup) rebalanceLocked() {
	if len(g.members) == 0 {
		if g.timer != nil {
			g.timer.Stop()
		}
		if g.state == groupPreparing {
			close(g.joinDone)
		}
		g.state, g.leader, g.protocol = groupEmpty, "", ""
		return
	}
	if g.state == groupPreparing {
		return
	}
	g.state = groupPreparing
	g.joinDone = make(chan struct{})
	for _, m := range g.members {
		m.joined = false
	}
	var wait time.Duration
	for _, m := range g.members {
		wait = max(wait, m.rebalance)
	}
	done := g.joinDone
	deadline := time.Now().Add(wait)
	// Members waiting in JoinGroup send no heartbeats: the round checks
	// for members gone silent itself, until it completes or times out.
	var check func()
	check = func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.state != groupPreparing || g.joinDone != done {
			return
		}
		if now := time.Now(); now.After(deadline) {
			g.completeLocked()
			return
		} else {
			g.expireLocked(now)
		}
		if g.state == groupPreparing && g.joinDone == done {
			g.timer = time.AfterFunc(roundCheck, check)
		}
	}
	g.timer = time.AfterFunc(roundCheck, check)
}

// roundCheck is how often a join round looks for silent members.
const roundCheck = 200 * time.Millisecond

// completeLocked ends a join round: members that did not rejoin are
// dropped, and a new generation starts with a protocol every member
// speaks and a leader to assign.
func (g *kgroup) completeLocked() {
	if g.timer != nil {
		g.timer.Stop()
	}
	for id, m := range g.members {
		if !m.joined {
			delete(g.members, id)
		}
	}
	done := g.joinDone
	g.generation++
	if len(g.members) == 0 {
		g.state, g.leader, g.protocol = groupEmpty, "", ""
		close(done)
		return
	}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if _, ok := g.members[g.leader]; !ok {
		g.leader = ids[0]
	}
	g.protocol = ""
	for _, p := range g.members[g.leader].protocols {
		all := true
		for _, m := range g.members {
			all = all && slices.ContainsFunc(m.protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name })
		}
		if all {
			g.protocol = p.Name
			break
		}
	}
	for _, m := range g.members {
		m.joined, m.assignment = false, nil
	}
	g.state = groupCompleting
	g.syncDone = make(chan struct{})
	close(done)
}

func (g *kgroup) allJoinedLocked() bool {
	for _, m := range g.members {
		if !m.joined {
			return false
		}
	}
	return true
}

// join runs one JoinGroup: it waits until the round completes, as Kafka
// does, and answers with the new generation.
func (g *kgroup) join(ctx context.Context, c *conn, req *kmsg.JoinGroupRequest, resp *kmsg.JoinGroupResponse) error {
	g.mu.Lock()
	now := time.Now()
	g.expireLocked(now)
	id := req.MemberID
	if id == "" {
		id = newMemberID(c.clientID)
		if req.Version >= 4 {
			// KIP-394: the client joins again with this id.
			g.mu.Unlock()
			resp.ErrorCode, resp.MemberID = kerr.MemberIDRequired.Code, id
			return nil
		}
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := session
	if req.Version >= 1 {
		rebalance = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if session < minSession || session > maxSession || rebalance < minSession || rebalance > maxSession {
		// Kafka's group.min/max.session.timeout.ms: a join round or a
		// SyncGroup holds its connection for up to these.
		g.mu.Unlock()
		resp.ErrorCode = kerr.InvalidSessionTimeout.Code
		return nil
	}
	if len(g.members) > 0 && req.ProtocolType != g.protocolType {
		g.mu.Unlock()
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return nil
	}
	m := g.members[id]
	if m == nil {
		m = &member{id: id}
		g.members[id] = m
	}
	g.protocolType = req.ProtocolType
	m.clientID, m.host, m.protocols = c.clientID, c.remote, req.Protocols
	m.session, m.rebalance = session, rebalance
	m.seen = now
	g.rebalanceLocked() // a (re)join always makes a new generation
	m.joined = true
	done := g.joinDone
	if g.allJoinedLocked() {
		g.completeLocked()
	}
	g.mu.Unlock()

	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.members[id]; !ok {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return nil
	}
	if g.protocol == "" {
		resp.ErrorCode = kerr.InconsistentGroupProtocol.Code
		return nil
	}
	resp.Generation, resp.LeaderID, resp.MemberID = g.generation, g.leader, id
	resp.Protocol, resp.ProtocolType = &g.protocol, &g.protocolType
	if id == g.leader {
		for _, om := range g.members {
			for _, p := range om.protocols {
				if p.Name == g.protocol {
					resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{MemberID: om.id, ProtocolMetadata: p.Metadata})
				}
			}
		}
	}
	return nil
}

// sync runs one SyncGroup: the leader hands in every member's assignment
// and each member gets its own, once the leader's is in.
func (g *kgroup) sync(ctx context.Context, req *kmsg.SyncGroupRequest, resp *kmsg.SyncGroupResponse) error {
	g.mu.Lock()
	g.expireLocked(time.Now())
	m, code := g.checkLocked(req.MemberID, req.Generation)
	if code != 0 {
		g.mu.Unlock()
		resp.ErrorCode = code
		return nil
	}
	if g.state == groupCompleting && req.MemberID == g.leader {
		for _, a := range req.GroupAssignment {
			if om := g.members[a.MemberID]; om != nil {
				om.assignment = a.MemberAssignment
			}
		}
		g.state = groupStable
		close(g.syncDone)
	}
	done, gen, wait := g.syncDone, g.generation, m.rebalance
	g.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.generation != gen || g.state != groupStable {
		resp.ErrorCode = kerr.RebalanceInProgress.Code
		return nil
	}
	resp.Protocol, resp.ProtocolType = &g.protocol, &g.protocolType
	resp.MemberAssignment = append([]byte{}, m.assignment...)
	return nil
}

// checkLocked fences a request by member id and generation, and counts
// it as a sign of life.
func (g *kgroup) checkLocked(id string, gen int32) (*member, int16) {
	m, ok := g.members[id]
	switch {
	case !ok:
		return nil, kerr.UnknownMemberID.Code
	case gen != g.generation:
		return nil, kerr.IllegalGeneration.Code
	case g.state == groupPreparing:
		m.seen = time.Now()
		return nil, kerr.RebalanceInProgress.Code
	}
	m.seen = time.Now()
	return m, 0
}

func (g *kgroup) heartbeat(id string, gen int32) int16 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(time.Now())
	_, code := g.checkLocked(id, gen)
	return code
}

// leave removes members; the others rejoin.
func (g *kgroup) leave(ids []string) []int16 {
	g.mu.Lock()
	defer g.mu.Unlock()
	codes := make([]int16, len(ids))
	left := false
	for i, id := range ids {
		if _, ok := g.members[id]; !ok {
			codes[i] = kerr.UnknownMemberID.Code
			continue
		}
		delete(g.members, id)
		left = true
	}
	if left {
		if g.state == groupPreparing {
			if g.allJoinedLocked() {
				g.completeLocked()
			}
		} else {
			g.rebalanceLocked()
		}
	}
	return codes
}

// commitCheck fences an OffsetCommit of a group-managed consumer.
func (g *kgroup) commitCheck(id string, gen int32) int16 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(time.Now())
	if m, ok := g.members[id]; ok && gen == g.generation {
		// Kafka takes commits during a rebalance from the previous
		// generation's members; silt takes them in the generation only.
		m.seen = time.Now()
		return 0
	}
	if _, ok := g.members[id]; !ok {
		return kerr.UnknownMemberID.Code
	}
	return kerr.IllegalGeneration.Code
}

// describe is the group's membership as DescribeGroups shows it.
func (g *kgroup) describe(out *kmsg.DescribeGroupsResponseGroup) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(time.Now())
	out.State, out.ProtocolType, out.Protocol = g.state.String(), g.protocolType, g.protocol
	for _, m := range g.members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.id, m.clientID, m.host
		for _, p := range m.protocols {
			if p.Name == g.protocol {
				dm.ProtocolMetadata = p.Metadata
			}
		}
		dm.MemberAssignment = m.assignment
		out.Members = append(out.Members, dm)
	}
}

func (g *kgroup) live() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.expireLocked(time.Now())
	return len(g.members)
}
