package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

// FuzzRequest feeds request frames (everything after the length) to the
// decoding and dispatch path over a real store, with every action
// allowed so that appends and topic admin are reached. A request may be
// answered or close its connection; it must never panic (the handler's
// recover logs "panicked", which fails the test) and never hang.
func FuzzRequest(f *testing.F) {
	e := newEnv(f, envOptions{
		kafka: func(c *Config) { c.MaxWait = time.Millisecond },
		auth:  func(a *Auth) { a.Authz, a.Insecure = acl.InsecureDev(a.Authz), true },
	})
	if _, err := e.store.CreateStream(context.Background(), "acme", "fz", core.StreamConfig{Encoding: core.EncodingFramed, Segments: 2}); err != nil {
		f.Fatal(err)
	}
	obs, logs := observer.New(zap.DebugLevel)
	srv, err := New(e.srv.cfg, e.store, e.srv.auth, zap.New(obs))
	if err != nil {
		f.Fatal(err)
	}
	srv.UseGroups(e.groups)

	// Seeds: a request of every advertised kind at its lowest and
	// highest version, as a client library encodes it.
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz"))
	batch := appendBatches(nil, []core.Event{{Offset: 0, Time: time.Unix(1, 0), Data: []byte("x")}})
	for key, a := range apis {
		for _, v := range []int16{a.min, a.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks = -1
				r.Topics = []kmsg.ProduceRequestTopic{{Topic: "acme.fz", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 1, Records: batch}}}}
			case *kmsg.FetchRequest:
				r.Topics = []kmsg.FetchRequestTopic{{Topic: "acme.fz", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
			case *kmsg.MetadataRequest:
				r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("acme.fz")}}
			case *kmsg.CreateTopicsRequest:
				r.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "acme.made", NumPartitions: 1, ReplicationFactor: 1}}
			case *kmsg.ListOffsetsRequest:
				r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "acme.fz", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Timestamp: -1}}}}
			case *kmsg.JoinGroupRequest:
				meta := kmsg.NewConsumerMemberMetadata()
				meta.Topics = []string{"acme.fz"}
				r.Group, r.ProtocolType, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = "acme.fg", "consumer", 6000, 6000
				r.MemberID = "m-1"
				r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
			case *kmsg.OffsetCommitRequest:
				r.Group, r.Generation = "acme.fg", -1
				r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "acme.fz", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
			case *kmsg.SASLAuthenticateRequest:
				r.SASLAuthBytes = []byte("\x00root\x00secret")
			}
			f.Add(fm.AppendRequest(nil, req, 1)[4:])
		}
	}
	f.Fuzz(func(t *testing.T, buf []byte) {
		c := &conn{s: srv, log: srv.log, advertise: "127.0.0.1:9092"}
		// Group requests wait for other members (a join round, the
		// leader's assignment) that fuzzed input may never send: end
		// them, as a client going away would.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c.handle(ctx, buf)
		if n := logs.FilterMessageSnippet("panicked").Len(); n > 0 {
			t.Fatalf("a request panicked: %v", logs.FilterMessageSnippet("panicked").All()[0].ContextMap())
		}
	})
}
