package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/groups"
)

// A Kafka consumer group IS a silt reader group: group "acme.billing"
// is reader group "billing" of tenant "acme" (named as topics are), and
// its committed offsets are the reader group's positions, so that
// `silt group lag acme/billing` shows how far Kafka consumers are behind.
// The head commits into the reader group as one reader of its own
// (bridgeMember), which holds every segment: a reader group should be
// read either by Kafka consumers or by native readers, not both at once.

// Groups is what the head needs of silt's reader groups
// (*groups.Coordinator).
type Groups interface {
	Create(ctx context.Context, tenant string, req groups.CreateRequest) (groups.Group, error)
	Get(tenant, name string) (groups.Group, error)
	List(tenant string) []groups.Group
	Describe(ctx context.Context, tenant, name string) (groups.Description, error)
	Join(ctx context.Context, tenant, name, member string) (groups.Assignment, error)
	Commit(ctx context.Context, tenant, name, member string, gen uint64, positions []groups.Position) error
	Leave(ctx context.Context, tenant, name, member string) error
	Delete(ctx context.Context, tenant, name string, force bool) error
}

// bridgeMember is the reader the head commits Kafka offsets as.
const bridgeMember = "kafka-head"

// UseGroups connects silt's reader groups; without it the group APIs are
// not advertised. Call it before serving.
func (s *Server) UseGroups(g Groups) { s.groups = g }

// parseGroup maps a Kafka group id onto tenant and reader group, as
// parseTopic maps topics.
func (s *Server) parseGroup(id string) (tenant, name string, err error) {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		tenant, name = id[:i], id[i+1:]
	} else if s.cfg.DefaultTenant != "" {
		tenant, name = s.cfg.DefaultTenant, id
	} else {
		return "", "", fmt.Errorf("group %q: silt groups are <tenant>.<group> (kafka.default_tenant is not set)", id)
	}
	if err := names.Tenant(tenant); err != nil {
		return "", "", fmt.Errorf("group %q: %v", id, err)
	}
	if err := names.Stream(name); err != nil {
		return "", "", fmt.Errorf("group %q: %v", id, err)
	}
	return tenant, name, nil
}

// siltGroup finds the reader group of a Kafka group and checks that c
// may read every stream it reads. With create, a group that does not
// exist is created over topics when c holds admin on each of them (as
// `silt group create` needs), starting at the oldest events; a Kafka
// consumer applies its own offset reset to partitions nothing was
// committed for.
func (c *conn) siltGroup(ctx context.Context, id string, create bool, topics []string) (tenant, name string, code int16, err error) {
	tenant, name, err = c.s.parseGroup(id)
	if err != nil {
		return "", "", kerr.InvalidGroupID.Code, err
	}
	g, err := c.s.groups.Get(tenant, name)
	if errors.Is(err, groups.ErrNotFound) && create && len(topics) > 0 {
		var streams []string
		for _, t := range topics {
			st, err := c.resolve(ctx, t, acl.Admin)
			if err != nil || st.Tenant != tenant {
				return "", "", kerr.GroupIDNotFound.Code, fmt.Errorf("group %s does not exist, and %s cannot create it over topic %s (needs admin on it, in tenant %s): create it with silt group create", id, c.principal.Name, t, tenant)
			}
			if !slices.Contains(streams, st.Name) {
				streams = append(streams, st.Name)
			}
		}
		g, err = c.s.groups.Create(ctx, tenant, groups.CreateRequest{Name: name, Streams: streams, Start: groups.Start{Kind: groups.StartHead}})
		if errors.Is(err, groups.ErrExists) {
			g, err = c.s.groups.Get(tenant, name)
		}
		if err == nil {
			c.log.Info("kafka: reader group created for a consumer group", zap.String("group", id), zap.Strings("streams", streams), zap.String("principal", c.principal.Name))
		}
	}
	if errors.Is(err, groups.ErrNotFound) {
		// Told only to those who may read in the tenant at all.
		if aerr := c.authorize(acl.Resource{Tenant: tenant}, acl.Read); aerr != nil {
			return "", "", kerr.GroupAuthorizationFailed.Code, aerr
		}
		return tenant, name, kerr.GroupIDNotFound.Code, err
	}
	if err != nil {
		return "", "", errorCode(err), err
	}
	for _, s := range g.Streams {
		if _, err := c.resolve(ctx, topicName(tenant, s), acl.Read); err != nil {
			return "", "", kerr.GroupAuthorizationFailed.Code, err
		}
	}
	return tenant, name, 0, nil
}

// consumerTopics lists the topics of a consumer-protocol JoinGroup.
func consumerTopics(req *kmsg.JoinGroupRequest) []string {
	if req.ProtocolType != "consumer" {
		return nil
	}
	var out []string
	for _, p := range req.Protocols {
		var m kmsg.ConsumerMemberMetadata
		if m.ReadFrom(p.Metadata) != nil {
			continue
		}
		for _, t := range m.Topics {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

func handleFindCoordinator(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FindCoordinatorRequest)
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	b := c.broker()
	code := int16(0)
	if req.CoordinatorType != 0 {
		code = kerr.CoordinatorNotAvailable.Code // transactions: none here
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, b.NodeID, b.Host, b.Port
		if code != 0 {
			resp.NodeID, resp.Host, resp.Port = -1, "", -1
		}
		return resp, nil
	}
	for _, k := range req.CoordinatorKeys {
		rc := kmsg.FindCoordinatorResponseCoordinator{Key: k, NodeID: b.NodeID, Host: b.Host, Port: b.Port, ErrorCode: code}
		if code != 0 {
			rc.NodeID, rc.Host, rc.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp, nil
}

func handleJoinGroup(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	resp.Generation = -1
	if req.InstanceID != nil {
		// Static membership (KIP-345) is not implemented.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	if _, _, code, err := c.siltGroup(ctx, req.Group, true, consumerTopics(req)); code != 0 {
		resp.ErrorCode = code
		c.log.Info("kafka JoinGroup refused", zap.String("group", req.Group), zap.Error(err))
		return resp, nil
	}
	if err := c.s.members.get(req.Group, true).join(ctx, c, req, resp); err != nil {
		return nil, fmt.Errorf("%w: JoinGroup: %v", errClose, err)
	}
	return resp, nil
}

func handleSyncGroup(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	g := c.s.members.get(req.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	if err := g.sync(ctx, req, resp); err != nil {
		return nil, fmt.Errorf("%w: SyncGroup: %v", errClose, err)
	}
	return resp, nil
}

func handleHeartbeat(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if g := c.s.members.get(req.Group, false); g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
	} else {
		resp.ErrorCode = g.heartbeat(req.MemberID, req.Generation)
	}
	return resp, nil
}

func handleLeaveGroup(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	ids := []string{req.MemberID}
	if req.Version >= 3 {
		ids = ids[:0]
		for _, m := range req.Members {
			ids = append(ids, m.MemberID)
		}
	}
	g := c.s.members.get(req.Group, false)
	if g == nil {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	codes := g.leave(ids)
	if req.Version < 3 {
		resp.ErrorCode = codes[0]
	} else {
		for i, id := range ids {
			resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: id, ErrorCode: codes[i]})
		}
	}
	if g.live() == 0 {
		// The last consumer left: so does the head's reader, so that the
		// reader group shows no live readers.
		if tenant, name, err := c.s.parseGroup(req.Group); err == nil {
			c.s.leaveSilt(ctx, g, tenant, name)
		}
	}
	return resp, nil
}

// commitSilt stores positions as the head's reader of the group, joining
// it first (again, after a restart or once its session expired).
func (s *Server) commitSilt(ctx context.Context, g *kgroup, tenant, name string, pos []groups.Position) error {
	g.bridge.Lock()
	defer g.bridge.Unlock()
	for attempt := 0; ; attempt++ {
		if !g.bridge.joined {
			a, err := s.groups.Join(ctx, tenant, name, bridgeMember)
			if err != nil {
				return err
			}
			g.bridge.joined, g.bridge.gen = true, a.Generation
		}
		err := s.groups.Commit(ctx, tenant, name, bridgeMember, g.bridge.gen, pos)
		if errors.Is(err, groups.ErrRejoin) && attempt == 0 {
			g.bridge.joined = false
			continue
		}
		return err
	}
}

func (s *Server) leaveSilt(ctx context.Context, g *kgroup, tenant, name string) {
	g.bridge.Lock()
	defer g.bridge.Unlock()
	if g.bridge.joined {
		s.groups.Leave(ctx, tenant, name, bridgeMember)
		g.bridge.joined = false
	}
}

func handleOffsetCommit(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	setAll := func(code int16) {
		for i, t := range req.Topics {
			codes[i] = make([]int16, len(t.Partitions))
			for j := range codes[i] {
				codes[i][j] = code
			}
		}
	}
	setAll(0)
	var topics []string
	for _, t := range req.Topics {
		topics = append(topics, t.Topic)
	}
	tenant, name, code, err := c.siltGroup(ctx, req.Group, true, topics)
	g := c.s.members.get(req.Group, code == 0)
	switch {
	case code != 0:
		c.log.Info("kafka OffsetCommit refused", zap.String("group", req.Group), zap.Error(err))
		setAll(code)
	case req.Generation >= 0 || req.MemberID != "":
		// A group-managed consumer: fenced by its generation.
		setAll(g.commitCheck(req.MemberID, req.Generation))
	}
	var pos []groups.Position
	type at struct{ i, j int }
	var idx []at
	for i, t := range req.Topics {
		if len(codes[i]) > 0 && codes[i][0] != 0 {
			continue
		}
		st, err := c.resolve(ctx, t.Topic, acl.Read)
		for j, p := range t.Partitions {
			switch {
			case err != nil:
				codes[i][j] = errorCode(err)
			case st.Tenant != tenant:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case p.Partition < 0 || int(p.Partition) >= len(st.Segments) || p.Offset < 0:
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			default:
				pos = append(pos, groups.Position{Stream: st.Name, Segment: st.Segments[p.Partition].ID, Offset: uint64(p.Offset)})
				idx = append(idx, at{i, j})
			}
		}
	}
	if len(pos) > 0 {
		if err := c.s.commitSilt(ctx, g, tenant, name, pos); err != nil {
			c.log.Info("kafka OffsetCommit not stored", zap.String("group", req.Group), zap.Error(err))
			code := errorCode(err)
			for _, k := range idx {
				codes[k.i][k.j] = code
			}
		}
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: codes[i][j]})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// handleOffsetFetch answers the reader group's committed positions; a
// partition nothing was committed for answers -1, and the consumer
// applies its own offset reset.
func handleOffsetFetch(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.OffsetFetchRequest)
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	tenant, name, code, err := c.siltGroup(ctx, req.Group, false, nil)
	committed := map[groups.SegmentRef]int64{}
	switch {
	case code == kerr.GroupIDNotFound.Code:
		// Nothing committed yet.
	case code != 0:
		c.log.Info("kafka OffsetFetch refused", zap.String("group", req.Group), zap.Error(err))
		resp.ErrorCode = code
		return resp, nil
	default:
		d, err := c.s.groups.Describe(ctx, tenant, name)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			return resp, nil
		}
		for _, p := range d.Positions {
			if !p.Committed.IsZero() {
				committed[groups.SegmentRef{Stream: p.Stream, Segment: p.Segment}] = int64(p.Offset)
			}
		}
	}
	topics := req.Topics
	if topics == nil {
		// Every committed position of the group.
		byStream := map[string][]int32{}
		for ref := range committed {
			st, err := c.s.store.GetStream(ctx, tenant, ref.Stream)
			if err != nil {
				continue
			}
			for i, sg := range st.Segments {
				if sg.ID == ref.Segment {
					byStream[ref.Stream] = append(byStream[ref.Stream], int32(i))
				}
			}
		}
		for s, ps := range byStream {
			topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: topicName(tenant, s), Partitions: ps})
		}
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		st, err := c.resolve(ctx, t.Topic, acl.Read)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			empty := ""
			rp.Metadata = &empty
			switch {
			case err != nil:
				rp.ErrorCode = errorCode(err)
			case st.Tenant == tenant && p >= 0 && int(p) < len(st.Segments):
				if off, ok := committed[groups.SegmentRef{Stream: st.Name, Segment: st.Segments[p].ID}]; ok {
					rp.Offset = off
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func handleDescribeGroups(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		_, _, code, err := c.siltGroup(ctx, id, false, nil)
		switch {
		case code == kerr.GroupIDNotFound.Code:
			rg.State = "Dead"
		case code != 0:
			rg.ErrorCode, rg.ErrorMessage = code, message(err)
		default:
			if g := c.s.members.get(id, false); g != nil {
				g.describe(&rg)
			} else {
				rg.State, rg.ProtocolType = groupEmpty.String(), "consumer"
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// handleListGroups lists the reader groups whose every stream the
// principal may read, as Kafka groups.
func handleListGroups(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	tenants, err := c.s.store.ListTenants(ctx)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	for _, t := range tenants {
		for _, g := range c.s.groups.List(t.Name) {
			ok := true
			for _, s := range g.Streams {
				if _, err := c.resolve(ctx, topicName(t.Name, s), acl.Read); err != nil {
					ok = false
					break
				}
			}
			if !ok {
				continue
			}
			id := topicName(t.Name, g.Name)
			state := groupEmpty.String()
			if kg := c.s.members.get(id, false); kg != nil {
				kg.mu.Lock()
				state = kg.state.String()
				kg.mu.Unlock()
			}
			if len(req.StatesFilter) > 0 && !slices.Contains(req.StatesFilter, state) {
				continue
			}
			resp.Groups = append(resp.Groups, kmsg.ListGroupsResponseGroup{Group: id, ProtocolType: "consumer", GroupState: state})
		}
	}
	return resp, nil
}

// handleDeleteGroups deletes reader groups, which needs admin on every
// stream they read, as `silt group delete` does.
func handleDeleteGroups(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		err := c.deleteGroup(ctx, id, &rg)
		if err != nil && rg.ErrorCode == 0 {
			rg.ErrorCode = errorCode(err)
		}
		rg.ErrorMessage = message(err)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func (c *conn) deleteGroup(ctx context.Context, id string, rg *kmsg.DeleteGroupsResponseGroup) error {
	tenant, name, code, err := c.siltGroup(ctx, id, false, nil)
	if code != 0 {
		rg.ErrorCode = code
		return err
	}
	g, err := c.s.groups.Get(tenant, name)
	if err != nil {
		return err
	}
	for _, s := range g.Streams {
		if _, err := c.resolve(ctx, topicName(tenant, s), acl.Admin); err != nil {
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return err
		}
	}
	if kg := c.s.members.get(id, false); kg != nil {
		if kg.live() > 0 {
			rg.ErrorCode = kerr.NonEmptyGroup.Code
			return fmt.Errorf("group %s has live Kafka consumers", id)
		}
		c.s.leaveSilt(ctx, kg, tenant, name)
	}
	if err := c.s.groups.Delete(ctx, tenant, name, false); err != nil {
		if errors.Is(err, groups.ErrConflict) {
			rg.ErrorCode = kerr.NonEmptyGroup.Code
		}
		return err
	}
	c.s.members.forget(id)
	c.log.Info("kafka: reader group deleted", zap.String("group", id), zap.String("principal", c.principal.Name))
	return nil
}
