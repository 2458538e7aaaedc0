package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceAll produces values to one partition and fails on any error.
func produceAll(t *testing.T, cl *kgo.Client, topic string, partition int32, values []string) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeN consumes n records of topic from the start.
func consumeN(t *testing.T, cl *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(context.Background())
		if err := fs.Err0(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestRoundTripCompressions produces with each codec franz-go offers and
// consumes back: values arrive unchanged, in order, at the offsets silt
// gave them, and the native read shows the same bytes.
func TestRoundTripCompressions(t *testing.T) {
	e := newEnv(t)
	codecs := map[string]kgo.CompressionCodec{
		"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			e.stream("c-"+name, 2)
			topic := "acme.c-" + name
			var values []string
			for i := range 200 {
				// Compressible and binary: a newline and a NUL survive.
				values = append(values, fmt.Sprintf("event %d of %s\n\x00 %s", i, name, "aaaaaaaaaaaaaaaaaaaa"))
			}
			p := e.client("root", e.root, kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			produceAll(t, p, topic, 1, values)

			if got := e.events("c-"+name, 1); len(got) != len(values) {
				t.Fatalf("native read: %d events, want %d", len(got), len(values))
			} else {
				for i := range got {
					if string(got[i]) != values[i] {
						t.Fatalf("native event %d = %q, want %q", i, got[i], values[i])
					}
				}
			}
			if got := e.events("c-"+name, 0); len(got) != 0 {
				t.Fatalf("partition 0 got %d events, want none", len(got))
			}

			c := e.client("root", e.root, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {1: kgo.NewOffset().AtStart()}}))
			recs := consumeN(t, c, len(values))
			if len(recs) != len(values) {
				t.Fatalf("consumed %d records, want %d", len(recs), len(values))
			}
			for i, r := range recs {
				if string(r.Value) != values[i] || r.Offset != int64(i) || r.Partition != 1 {
					t.Fatalf("record %d: partition %d offset %d value %q; want partition 1 offset %d value %q", i, r.Partition, r.Offset, r.Value, i, values[i])
				}
				if r.Timestamp.IsZero() || r.Timestamp.Year() < 2020 {
					t.Fatalf("record %d: timestamp %v, want the append time", i, r.Timestamp)
				}
			}
		})
	}
}

// TestListOffsets checks earliest, latest and by-timestamp offsets.
func TestListOffsets(t *testing.T) {
	e := newEnv(t)
	e.stream("lo", 1)
	cl := e.client("root", e.root)
	produceAll(t, cl, "acme.lo", 0, []string{"a", "b", "c"})
	ask := func(ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "acme.lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	if p := ask(-2); p.ErrorCode != 0 || p.Offset != 0 {
		t.Errorf("earliest: error %d offset %d, want 0", p.ErrorCode, p.Offset)
	}
	if p := ask(-1); p.ErrorCode != 0 || p.Offset != 3 {
		t.Errorf("latest: error %d offset %d, want 3", p.ErrorCode, p.Offset)
	}
	if p := ask(0); p.ErrorCode != 0 || p.Offset != 0 {
		t.Errorf("timestamp 0: error %d offset %d, want 0", p.ErrorCode, p.Offset)
	}
	if p := ask(1 << 50); p.ErrorCode != 0 || p.Offset != -1 {
		t.Errorf("future timestamp: error %d offset %d, want -1", p.ErrorCode, p.Offset)
	}
}

// TestTopicAdmin creates, describes and deletes a topic through Kafka's
// admin requests, and checks the names silt refuses.
func TestTopicAdmin(t *testing.T) {
	e := newEnv(t)
	cl := e.client("root", e.root)
	ctx := context.Background()
	create := func(name string, partitions int32, configs ...string) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, -1
		for i := 0; i+1 < len(configs); i += 2 {
			rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: configs[i], Value: kmsg.StringPtr(configs[i+1])})
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	if r := create("acme.orders", 3, "retention.ms", "3600000"); r.ErrorCode != 0 || r.NumPartitions != 3 {
		t.Fatalf("create: error %d (%v) partitions %d", r.ErrorCode, deref(r.ErrorMessage), r.NumPartitions)
	}
	st, err := e.store.GetStream(ctx, "acme", "orders")
	if err != nil || len(st.Segments) != 3 || st.Config.Retention.MaxAge.Hours() != 1 || st.Config.Encoding != "framed" {
		t.Fatalf("stream after create: %+v, %v", st, err)
	}
	for name, want := range map[string]int16{
		"acme.orders":        kerr.TopicAlreadyExists.Code,
		"orders":             kerr.InvalidTopicException.Code, // no default tenant
		"nosuch.orders":      kerr.InvalidTopicException.Code, // tenant does not exist
		"acme._hidden":       kerr.InvalidTopicException.Code,
		"__consumer_offsets": kerr.InvalidTopicException.Code,
	} {
		if r := create(name, 1); r.ErrorCode != want {
			t.Errorf("create %q: error %d (%v), want %d", name, r.ErrorCode, deref(r.ErrorMessage), want)
		}
	}
	if r := create("acme.compacted", 1, "cleanup.policy", "compact"); r.ErrorCode != kerr.InvalidConfig.Code {
		t.Errorf("compacted topic: error %d, want INVALID_CONFIG", r.ErrorCode)
	}

	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "acme.orders"
	dreq.Resources = append(dreq.Resources, dr)
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range dresp.Resources[0].Configs {
		got[c.Name] = deref(c.Value)
	}
	if got["retention.ms"] != "3600000" || got["silt.encoding"] != "framed" || got["retention.bytes"] != "-1" {
		t.Errorf("describe configs: %v", got)
	}

	preq := kmsg.NewPtrCreatePartitionsRequest()
	preq.Topics = append(preq.Topics, kmsg.CreatePartitionsRequestTopic{Topic: "acme.orders", Count: 6})
	presp, err := preq.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if c := presp.Topics[0].ErrorCode; c != kerr.InvalidPartitions.Code {
		t.Errorf("create partitions: error %d, want INVALID_PARTITIONS", c)
	}

	md := kmsg.NewPtrMetadataRequest()
	mresp, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tp := range mresp.Topics {
		names = append(names, deref(tp.Topic))
	}
	if !slices.Contains(names, "acme.orders") {
		t.Errorf("metadata lists %v, want acme.orders among them", names)
	}

	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TopicNames = []string{"acme.orders", "acme.nosuch"}
	del.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: kmsg.StringPtr("acme.orders")}, {Topic: kmsg.StringPtr("acme.nosuch")}}
	delResp, err := del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range delResp.Topics {
		codes[deref(r.Topic)] = r.ErrorCode
	}
	if codes["acme.orders"] != 0 || codes["acme.nosuch"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("delete: %v", codes)
	}
	if _, err := e.store.GetStream(ctx, "acme", "orders"); err == nil {
		t.Error("stream still there after DeleteTopics")
	}
}

// TestDefaultTenant maps dot-less topics to kafka.default_tenant.
func TestDefaultTenant(t *testing.T) {
	e := newEnv(t, envOptions{kafka: func(c *Config) { c.DefaultTenant = "acme" }})
	e.stream("plain", 1)
	cl := e.client("root", e.root)
	produceAll(t, cl, "plain", 0, []string{"x"})
	if got := e.events("plain", 0); len(got) != 1 || string(got[0]) != "x" {
		t.Fatalf("events %q", got)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// errCode extracts a Kafka error code from a client error.
func errCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return -1
}

// TestFetchLargeRecord fetches a record larger than the fetch's byte
// bounds: it is answered anyway (KIP-74), or the consumer would stall.
func TestFetchLargeRecord(t *testing.T) {
	e := newEnv(t)
	e.stream("big", 1)
	big := string(make([]byte, 100<<10))
	cl := e.client("root", e.root, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20))
	produceAll(t, cl, "acme.big", 0, []string{big, "small"})
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1024
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "acme.big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1024
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || len(p.RecordBatches) < 100<<10 {
		t.Fatalf("error %d, %d bytes of batches; want the 100 KiB record", p.ErrorCode, len(p.RecordBatches))
	}
}
