package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/names"
)

// A topic is "<tenant>.<stream>". Tenant names cannot hold a dot (S3
// bucket rules as silt keeps them), so the first dot splits a topic
// unambiguously, and every stream has exactly one topic name. With
// kafka.default_tenant set, a topic without a dot names a stream of that
// tenant.

// parseTopic splits a topic into tenant and stream, refusing names silt
// cannot hold with errInvalidTopic.
func (s *Server) parseTopic(topic string) (tenant, stream string, err error) {
	if i := strings.IndexByte(topic, '.'); i >= 0 {
		tenant, stream = topic[:i], topic[i+1:]
	} else if s.cfg.DefaultTenant != "" {
		tenant, stream = s.cfg.DefaultTenant, topic
	} else {
		return "", "", fmt.Errorf("%w: topic %q: silt topics are <tenant>.<stream> (kafka.default_tenant is not set)", errInvalidTopic, topic)
	}
	if err := names.Tenant(tenant); err != nil {
		return "", "", fmt.Errorf("%w: topic %q: %v", errInvalidTopic, topic, err)
	}
	if err := names.Stream(stream); err != nil {
		return "", "", fmt.Errorf("%w: topic %q: %v", errInvalidTopic, topic, err)
	}
	return tenant, stream, nil
}

// topicName is the topic of a stream.
func topicName(tenant, stream string) string { return tenant + "." + stream }

// resolve finds a topic's stream and checks that c may do one of acts
// on it. A topic c may not see at all answers TOPIC_AUTHORIZATION_FAILED
// whether or not it exists, as Kafka does.
func (c *conn) resolve(ctx context.Context, topic string, acts ...acl.Action) (core.Stream, error) {
	tenant, stream, err := c.s.parseTopic(topic)
	if err != nil {
		// A name silt cannot hold names no stream.
		return core.Stream{}, fmt.Errorf("%w: %v", errUnknownTopic, err)
	}
	st, err := c.s.store.GetStream(ctx, tenant, stream)
	res := acl.Resource{Tenant: tenant, Stream: stream}
	if err == nil {
		res.Set = st.Config.Set
	}
	if aerr := c.authorize(res, acts...); aerr != nil {
		return core.Stream{}, aerr
	}
	if err != nil {
		return core.Stream{}, err
	}
	return st, nil
}

// authorize allows the request when any of acts is allowed on res.
func (c *conn) authorize(res acl.Resource, acts ...acl.Action) error {
	var err error
	for _, a := range acts {
		if err = c.s.auth.Authz.Authorize(c.principal, a, res); err == nil {
			return nil
		}
	}
	return err
}

// The one broker: silt serves every partition from this node.
const brokerID int32 = 0

func (c *conn) broker() kmsg.MetadataResponseBroker {
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID = brokerID
	host, port, err := net.SplitHostPort(c.advertise)
	if err == nil {
		b.Host = host
		p, _ := strconv.Atoi(port)
		b.Port = int32(p)
	}
	return b
}

func handleMetadata(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.MetadataRequest)
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Brokers = []kmsg.MetadataResponseBroker{c.broker()}
	cluster := "silt"
	resp.ClusterID = &cluster
	resp.ControllerID = brokerID
	if req.Topics == nil {
		// All topics: every stream the principal may read or append to.
		streams, err := c.visibleStreams(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: list streams: %v", errClose, err)
		}
		for _, st := range streams {
			resp.Topics = append(resp.Topics, topicMetadata(topicName(st.Tenant, st.Name), st, nil))
		}
		return resp, nil
	}
	for _, t := range req.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		st, err := c.resolve(ctx, name, acl.Read, acl.Append)
		resp.Topics = append(resp.Topics, topicMetadata(name, st, err))
	}
	return resp, nil
}

func topicMetadata(name string, st core.Stream, err error) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic = &name
	if err != nil {
		t.ErrorCode = errorCode(err)
		return t
	}
	// Listings describe streams without their live segment state; the
	// count is in the config.
	n := max(len(st.Segments), st.Config.Segments)
	for i := range n {
		p := kmsg.NewMetadataResponseTopicPartition()
		p.Partition = int32(i)
		p.Leader = brokerID
		p.Replicas = []int32{brokerID}
		p.ISR = []int32{brokerID}
		t.Partitions = append(t.Partitions, p)
	}
	return t
}

// visibleStreams lists the streams the connection may read or append to.
func (c *conn) visibleStreams(ctx context.Context) ([]core.Stream, error) {
	tenants, err := c.s.store.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	var out []core.Stream
	for _, t := range tenants {
		streams, err := c.s.store.ListStreams(ctx, t.Name)
		if errors.Is(err, core.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		for _, st := range streams {
			if c.authorize(acl.Resource{Tenant: st.Tenant, Stream: st.Name, Set: st.Config.Set}, acl.Read, acl.Append) == nil {
				out = append(out, st)
			}
		}
	}
	return out, nil
}

// handleCreateTopics creates streams. Partitions become segments; the
// replication factor must be 1 or -1 (silt keeps one copy in tier 1 and
// its durability in tier 2); the configs silt maps are those of
// topicConfigs.
func handleCreateTopics(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		code, err := c.createTopic(ctx, t, req.ValidateOnly, &rt)
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = code, message(err)
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (c *conn) createTopic(ctx context.Context, t kmsg.CreateTopicsRequestTopic, validateOnly bool, rt *kmsg.CreateTopicsResponseTopic) (int16, error) {
	tenant, stream, err := c.s.parseTopic(t.Topic)
	if err != nil {
		return errorCode(err), err
	}
	if err := c.authorize(acl.Resource{Tenant: tenant, Stream: stream}, acl.Admin); err != nil {
		return errorCode(err), err
	}
	if t.ReplicationFactor != -1 && t.ReplicationFactor != 1 {
		return kerrInvalidReplicationFactor, fmt.Errorf("replication factor %d: silt has one broker; use 1 or -1", t.ReplicationFactor)
	}
	if len(t.ReplicaAssignment) > 0 {
		return kerrInvalidReplicaAssignment, errors.New("silt places partitions itself: give a partition count, not an assignment")
	}
	maxSeg := c.s.store.Limits().MaxSegments
	if t.NumPartitions != -1 && (t.NumPartitions < 1 || int(t.NumPartitions) > maxSeg) {
		return kerrInvalidPartitions, fmt.Errorf("%d partitions: want 1..%d (core.limits.max_segments) or -1 for core.default_segments", t.NumPartitions, maxSeg)
	}
	cfg := core.StreamConfig{Encoding: core.EncodingFramed}
	if t.NumPartitions > 0 {
		cfg.Segments = int(t.NumPartitions)
	}
	for _, kv := range t.Configs {
		if err := applyTopicConfig(&cfg, kv.Name, kv.Value); err != nil {
			return kerrInvalidConfig, err
		}
	}
	if _, err := c.s.store.GetTenant(ctx, tenant); err != nil {
		if errors.Is(err, core.ErrNotFound) {
			return errorCode(errInvalidTopic), fmt.Errorf("tenant %q does not exist: create it first (silt tenant create %s)", tenant, tenant)
		}
		return errorCode(err), err
	}
	if validateOnly {
		if _, err := c.s.store.GetStream(ctx, tenant, stream); err == nil {
			return errorCode(core.ErrExists), fmt.Errorf("%w: topic %q", core.ErrExists, t.Topic)
		}
		rt.NumPartitions, rt.ReplicationFactor = t.NumPartitions, 1
		return 0, nil
	}
	st, err := c.s.store.CreateStream(ctx, tenant, stream, cfg)
	if err != nil {
		if errors.Is(err, core.ErrInvalid) {
			return kerrInvalidConfig, err
		}
		return errorCode(err), err
	}
	c.log.Info("kafka: topic created", zap.String("topic", t.Topic), zap.String("principal", c.principal.Name), zap.Int("segments", len(st.Segments)))
	rt.NumPartitions, rt.ReplicationFactor = int32(len(st.Segments)), 1
	for _, e := range streamConfigs(st, c.s.store.Limits()) {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsResponseTopicConfig{Name: e.name, Value: &e.value, ReadOnly: e.readOnly, Source: int8(kmsg.ConfigSourceDynamicTopicConfig)})
	}
	return 0, nil
}

func handleDeleteTopics(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.DeleteTopicsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	topics := req.TopicNames
	for _, t := range req.Topics {
		if t.Topic == nil {
			// silt has no topic IDs to delete by.
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.TopicID = t.TopicID
			rt.ErrorCode = kerrUnknownTopicID
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		topics = append(topics, *t.Topic)
	}
	for _, name := range topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic = &name
		err := c.deleteTopic(ctx, name)
		rt.ErrorCode, rt.ErrorMessage = errorCode(err), message(err)
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (c *conn) deleteTopic(ctx context.Context, topic string) error {
	st, err := c.resolve(ctx, topic, acl.Admin)
	if err != nil {
		return err
	}
	if err := c.s.store.DeleteStream(ctx, st.Tenant, st.Name); err != nil {
		return err
	}
	if c.s.producers != nil {
		c.s.producers.ForgetStream(st.Tenant, st.Name)
	}
	c.log.Info("kafka: topic deleted", zap.String("topic", topic), zap.String("principal", c.principal.Name))
	return nil
}

// handleCreatePartitions refuses: a silt stream's segments are fixed when
// it is created (they split the routing-key hash range).
func handleCreatePartitions(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		st, err := c.resolve(ctx, t.Topic, acl.Admin)
		if err != nil {
			rt.ErrorCode, rt.ErrorMessage = errorCode(err), message(err)
		} else {
			// Kafka answers a count equal to the current one with
			// INVALID_PARTITIONS too.
			rt.ErrorCode = kerrInvalidPartitions
			rt.ErrorMessage = message(fmt.Errorf("topic %q has %d partitions: a silt stream's segments are fixed at creation", t.Topic, len(st.Segments)))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
