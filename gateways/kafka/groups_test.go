package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/silt-io/silt/groups"
)

// consumeGroup consumes with a franz-go group consumer until n records
// arrived, commits them and leaves the group.
func consumeGroup(t *testing.T, e *env, user, token, group, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plainAuth(user, token)),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close() // leaves the group
	var out []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a bound
	defer cancel()
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (after %d records)", err, len(out))
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}
	return out
}

// TestConsumerGroupIsReaderGroup consumes with a franz-go consumer group:
// the Kafka group is silt's reader group of the same name, created for a
// principal with admin, and its commits are the reader group's positions,
// so `silt group lag` shows the consumer caught up. A second consumer in
// the same group continues after the committed offsets.
func TestConsumerGroupIsReaderGroup(t *testing.T) {
	e := newEnv(t)
	e.stream("orders", 2)
	p := e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var first []string
	for i := range 10 {
		first = append(first, fmt.Sprintf("o%d", i))
	}
	produceAll(t, p, "acme.orders", 0, first[:6])
	produceAll(t, p, "acme.orders", 1, first[6:])

	got := consumeGroup(t, e, "root", e.root, "acme.billing", "acme.orders", 10)
	if len(got) != 10 {
		t.Fatalf("consumed %d records, want 10", len(got))
	}
	g, err := e.groups.Get("acme", "billing")
	if err != nil {
		t.Fatalf("the reader group was not created: %v", err)
	}
	if len(g.Streams) != 1 || g.Streams[0] != "orders" {
		t.Fatalf("reader group streams %v, want [orders]", g.Streams)
	}
	lag, err := e.groups.Lag(context.Background(), "acme", "billing")
	if err != nil {
		t.Fatal(err)
	}
	if lag.EventsBehind != 0 || len(lag.Segments) != 2 {
		t.Fatalf("lag after committing everything: %+v", lag)
	}
	for _, s := range lag.Segments {
		if s.Committed != s.Next || s.Next == 0 {
			t.Fatalf("segment %s committed %d, end %d", s.Segment, s.Committed, s.Next)
		}
	}

	produceAll(t, p, "acme.orders", 1, []string{"late"})
	lag, _ = e.groups.Lag(context.Background(), "acme", "billing")
	if lag.EventsBehind != 1 {
		t.Fatalf("lag after one more record: %d events, want 1", lag.EventsBehind)
	}
	again := consumeGroup(t, e, "root", e.root, "acme.billing", "acme.orders", 1)
	if len(again) != 1 || string(again[0].Value) != "late" || again[0].Offset != 4 {
		t.Fatalf("the second consumer got %d records (first %q at %d), want only \"late\" at offset 4", len(again), again[0].Value, again[0].Offset)
	}
	lag, _ = e.groups.Lag(context.Background(), "acme", "billing")
	if lag.EventsBehind != 0 {
		t.Fatalf("lag after the second consumer: %d", lag.EventsBehind)
	}
}

// TestConsumerGroupGrants: a reader may consume with a reader group that
// an admin created, but not create one; OffsetFetch of a group over a
// stream it may not read is refused.
func TestConsumerGroupGrants(t *testing.T) {
	e := newEnv(t)
	e.stream("a", 1)
	e.stream("b", 1)
	p := e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, p, "acme.a", 0, []string{"x", "y"})
	tok := e.user("carol", "read:acme/a")
	ctx := context.Background()
	if _, err := e.groups.Create(ctx, "acme", groups.CreateRequest{Name: "made", Streams: []string{"a"}, Start: groups.Start{Kind: groups.StartHead}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.groups.Create(ctx, "acme", groups.CreateRequest{Name: "onb", Streams: []string{"b"}, Start: groups.Start{Kind: groups.StartHead}}); err != nil {
		t.Fatal(err)
	}
	got := consumeGroup(t, e, "carol", tok, "acme.made", "acme.a", 2)
	if len(got) != 2 {
		t.Fatalf("carol consumed %d", len(got))
	}
	if lag, _ := e.groups.Lag(ctx, "acme", "made"); lag.EventsBehind != 0 {
		t.Fatalf("lag %d after carol's commit", lag.EventsBehind)
	}
	cl := e.client("carol", tok)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "acme.fresh", "consumer", 6000, 6000
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"acme.a"}
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	jr, err := join.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if jr.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("carol joins a group that does not exist: error %d, want GROUP_ID_NOT_FOUND (only admins create)", jr.ErrorCode)
	}
	if _, err := e.groups.Get("acme", "fresh"); err == nil {
		t.Error("a reader group was created for carol")
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "acme.onb"
	ofr, err := of.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if ofr.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("carol fetches offsets of a group over acme/b: error %d, want GROUP_AUTHORIZATION_FAILED", ofr.ErrorCode)
	}
}

// cuttable is a fault-injecting dialer: once cut, every connection it
// made is closed and new dials fail, as if the consumer's process died
// without leaving its group.
type cuttable struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (d *cuttable) dial(ctx context.Context, network, host string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("cut")
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *cuttable) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		c.Close()
	}
}

// TestConsumerGroupRebalance runs two franz-go consumers in one group
// over four partitions, then one dies without leaving: once its session
// expires the other takes its partitions, and every record is consumed
// by one of them after being produced (none lost; what the dead one had
// not committed is read again).
func TestConsumerGroupRebalance(t *testing.T) {
	e := newEnv(t)
	e.stream("jobs", 4)
	p := e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(round int) {
		for part := range int32(4) {
			var vs []string
			for i := range 10 {
				vs = append(vs, fmt.Sprintf("r%d-p%d-%d", round, part, i))
			}
			produceAll(t, p, "acme.jobs", part, vs)
		}
	}
	produce(0)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a safety net, not a bound
	defer cancel()
	var (
		mu   sync.Mutex
		seen = map[string]int{} // value → times consumed
	)
	type consumer struct {
		cl       *kgo.Client
		d        *cuttable
		assigned chan struct{}
	}
	start := func() *consumer {
		c := &consumer{d: &cuttable{}, assigned: make(chan struct{}, 16)}
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(plainAuth("root", e.root)), kgo.Dialer(c.d.dial),
			kgo.ConsumerGroup("acme.workers"), kgo.ConsumeTopics("acme.jobs"), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(200*time.Millisecond), kgo.RebalanceTimeout(5*time.Second),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				select {
				case c.assigned <- struct{}{}:
				default:
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		c.cl = cl
		go func() {
			for {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
				recs := fs.Records()
				if len(recs) == 0 {
					continue
				}
				if err := cl.CommitRecords(ctx, recs...); err != nil {
					continue // not committed: another member reads them again
				}
				mu.Lock()
				for _, r := range recs {
					seen[string(r.Value)]++
				}
				mu.Unlock()
			}
		}()
		return c
	}
	a := start()
	defer a.cl.Close()
	<-a.assigned
	b := start()
	defer b.cl.Close()
	<-b.assigned // the group now spreads the partitions over both

	b.d.kill()
	produce(1)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 80 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("only %d of 80 records consumed and committed", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	lag, err := e.groups.Lag(context.Background(), "acme", "workers")
	if err != nil || lag.EventsBehind != 0 {
		t.Fatalf("lag %+v, %v", lag, err)
	}
}

// TestJoinRoundDropsSilentMember: a member that stops sending anything
// while a join round waits for it is dropped once its session expires,
// not after the (much longer) rebalance timeout, so that the members
// that did rejoin go on.
func TestJoinRoundDropsSilentMember(t *testing.T) {
	var s Server
	g := s.members.get("acme.g", true)
	c := &conn{s: &s, clientID: "t", remote: "127.0.0.1:1"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a safety net, not a bound
	defer cancel()
	join := func(id string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.SetVersion(5)
		req.Group, req.MemberID, req.ProtocolType = "acme.g", id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 1000, 20*60*1000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		resp := kmsg.NewPtrJoinGroupResponse()
		if err := g.join(ctx, c, req, resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := join("a"); r.ErrorCode != 0 || r.LeaderID != "a" {
		t.Fatalf("a joins: error %d, leader %q", r.ErrorCode, r.LeaderID)
	}
	// a goes silent; b's join starts a round that a never rejoins.
	r := join("b")
	if r.ErrorCode != 0 || r.LeaderID != "b" || len(r.Members) != 1 || r.Generation != 2 {
		t.Fatalf("b joins: error %d, leader %q, %d members, generation %d; want b alone in generation 2", r.ErrorCode, r.LeaderID, len(r.Members), r.Generation)
	}
}

// TestGroupAdmin lists, describes and deletes a consumer group through
// Kafka's admin requests; they act on the reader group.
func TestGroupAdmin(t *testing.T) {
	e := newEnv(t)
	e.stream("ev", 1)
	p := e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, p, "acme.ev", 0, []string{"a"})
	consumeGroup(t, e, "root", e.root, "acme.adm", "acme.ev", 1)
	ctx := context.Background()

	lr, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, g := range lr.Groups {
		ids = append(ids, g.Group+"/"+g.GroupState)
	}
	if !slices.Contains(ids, "acme.adm/Empty") {
		t.Errorf("ListGroups: %v, want acme.adm/Empty (its consumer left)", ids)
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"acme.adm", "acme.nosuch"}
	dresp, err := dr.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if g := dresp.Groups[0]; g.ErrorCode != 0 || g.State != "Empty" || len(g.Members) != 0 {
		t.Errorf("describe acme.adm: error %d state %q %d members", g.ErrorCode, g.State, len(g.Members))
	}
	if g := dresp.Groups[1]; g.State != "Dead" {
		t.Errorf("describe acme.nosuch: state %q, want Dead", g.State)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"acme.adm", "acme.nosuch"}
	delr, err := del.RequestWith(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if c := delr.Groups[0].ErrorCode; c != 0 {
		t.Errorf("delete acme.adm: error %d (%s)", c, deref(delr.Groups[0].ErrorMessage))
	}
	if c := delr.Groups[1].ErrorCode; c != kerr.GroupIDNotFound.Code {
		t.Errorf("delete acme.nosuch: error %d, want GROUP_ID_NOT_FOUND", c)
	}
	if _, err := e.groups.Get("acme", "adm"); err == nil {
		t.Error("the reader group is still there after DeleteGroups")
	}
}
