package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
)

// TestACL runs franz-go clients as principals with narrow grants: each
// request kind is checked against the same grants as on the other heads
// (produce needs append, fetch read, topic admin admin), and a client
// sees only the topics it may use.
func TestACL(t *testing.T) {
	e := newEnv(t)
	e.stream("r", 1)
	e.stream("w", 1)
	ctx := context.Background()
	reader := e.user("alice", "read:acme/r")
	writer := e.user("bob", "append:acme/w")

	root := e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, root, "acme.r", 0, []string{"seed"})

	a := e.client("alice", reader, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	err := a.ProduceSync(ctx, &kgo.Record{Topic: "acme.r", Value: []byte("x")}).FirstErr()
	if errCode(err) != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice produces to acme.r: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if got := e.events("r", 0); len(got) != 1 {
		t.Errorf("acme/r holds %d events after a refused produce, want 1", len(got))
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range md.Topics {
		names = append(names, deref(tp.Topic))
	}
	if !slices.Equal(names, []string{"acme.r"}) {
		t.Errorf("alice's metadata lists %v, want [acme.r]", names)
	}
	fetch := fetchOne(t, a, "acme.w", 0)
	if fetch != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice fetches acme.w: error %d, want TOPIC_AUTHORIZATION_FAILED", fetch)
	}
	if code := fetchOne(t, a, "acme.r", 0); code != 0 {
		t.Errorf("alice fetches acme.r: error %d, want none", code)
	}
	// A topic that does not exist answers the same as one not granted:
	// names are not probed.
	if code := fetchOne(t, a, "acme.nosuch", 0); code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice fetches acme.nosuch: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "acme.new", 1, 1
	create.Topics = append(create.Topics, ct)
	cresp, err := create.RequestWith(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if c := cresp.Topics[0].ErrorCode; c != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice creates a topic: error %d, want TOPIC_AUTHORIZATION_FAILED", c)
	}

	b := e.client("bob", writer, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(t, b, "acme.w", 0, []string{"by bob"})
	if code := fetchOne(t, b, "acme.w", 0); code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("bob fetches acme.w: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
}

// fetchOne fetches partition p of topic from offset 0 without waiting and
// returns the partition's error code.
func fetchOne(t *testing.T, cl *kgo.Client, topic string, p int32) int16 {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = p, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestSASL checks PLAIN against silt tokens: a wrong secret, a token of
// another principal and a client without SASL are all refused, the last
// by closing its connection unless anonymous access is configured.
func TestSASL(t *testing.T) {
	e := newEnv(t)
	e.stream("s", 1)
	tok := e.user("alice", "read:acme/s")
	ctx := context.Background()
	short := func(cl *kgo.Client) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		return err
	}
	if err := short(e.client("alice", tok)); err != nil {
		t.Fatalf("alice with her token: %v", err)
	}
	if err := short(e.client("alice", "wrong", kgo.RequestRetries(0))); errCode(err) != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("wrong token: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	if err := short(e.client("alice", e.root, kgo.RequestRetries(0))); errCode(err) != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("root's token as alice: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	noSASL, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer noSASL.Close()
	if err := short(noSASL); err == nil {
		t.Error("a client without SASL got an answer with allow_anonymous off")
	}
}

// TestAnonymous serves clients without SASL as the anonymous principal
// when kafka.allow_anonymous is on: they get exactly anonymous's grants.
func TestAnonymous(t *testing.T) {
	e := newEnv(t, envOptions{kafka: func(c *Config) { c.AllowAnonymous = true }})
	e.stream("pub", 1)
	e.stream("priv", 1)
	if _, err := e.acl.AddGrant("anonymous", "read", "acme/pub"); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if code := fetchOne(t, cl, "acme.pub", 0); code != 0 {
		t.Errorf("anonymous fetches acme.pub: error %d, want none", code)
	}
	if code := fetchOne(t, cl, "acme.priv", 0); code != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("anonymous fetches acme.priv: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
}

// TestOAuthBearer authenticates with a silt token as the OAUTHBEARER
// bearer token; the token names its principal, whose grants apply.
func TestOAuthBearer(t *testing.T) {
	e := newEnv(t)
	e.stream("o", 1)
	tok := e.user("dave", "read:acme/o")
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(oauth.Auth{Token: tok}.AsMechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if code := fetchOne(t, cl, "acme.o", 0); code != 0 {
		t.Errorf("dave fetches acme.o: error %d", code)
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("dave's metadata: %v, %v", md, err)
	}
	bad, err := kgo.NewClient(kgo.SeedBrokers(e.addr), kgo.SASL(oauth.Auth{Token: "silt_nope"}.AsMechanism()), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), bad); errCode(err) != kerr.SaslAuthenticationFailed.Code {
		t.Errorf("a wrong bearer token: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}
