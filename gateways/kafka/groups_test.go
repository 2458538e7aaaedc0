package kafka

import (
	"context"
	"fmt"
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
