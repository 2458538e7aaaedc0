package kafka

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

// handleProduce appends each partition's batch to its segment. Every
// answer with error NONE is given only after core.Store.Append returned,
// that is after the events were fsynced (silt's one durability contract,
// whatever acks says); acks=0 gets no answer at all, as in Kafka, so such
// a producer never learns of a refusal.
func handleProduce(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.TransactionID != nil {
		// No InitProducerId with a transactional id succeeds, so a
		// transactional producer never gets here with a valid epoch.
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.TransactionalIDAuthorizationFailed.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return ackOrNothing(req, resp), nil
	}
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		st, terr := c.resolve(ctx, t.Topic, acl.Append)
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			err := terr
			if err == nil {
				err = c.producePartition(ctx, st, p, &rp)
				if err != nil && c.s.producers != nil {
					// The stream exists: its name may label series.
					c.s.producers.Failed(st.Tenant, st.Name, reason(errorCode(err)))
				}
			}
			if err != nil {
				rp.ErrorCode, rp.ErrorMessage = errorCode(err), message(err)
				rp.BaseOffset = -1
				c.log.Debug("kafka produce refused", zap.String("topic", t.Topic), zap.Int32("partition", p.Partition), zap.Error(err))
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return ackOrNothing(req, resp), nil
}

// reason names a Kafka error code in the producer error series: the
// error's name in lower case, a bounded set.
func reason(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		if ke, ok := err.(*kerr.Error); ok {
			return "kafka_" + strings.ToLower(ke.Message)
		}
	}
	return fmt.Sprintf("kafka_%d", code)
}

func ackOrNothing(req *kmsg.ProduceRequest, resp *kmsg.ProduceResponse) kmsg.Response {
	if req.Acks == 0 {
		return nil
	}
	return resp
}

func (c *conn) producePartition(ctx context.Context, st core.Stream, p kmsg.ProduceRequestTopicPartition, rp *kmsg.ProduceResponseTopicPartition) error {
	if p.Partition < 0 || int(p.Partition) >= len(st.Segments) {
		return fmt.Errorf("%w: partition %d of a topic with %d", errUnknownTopic, p.Partition, len(st.Segments))
	}
	if c.s.tiering != nil {
		// Refused before decoding: a backlogged tier 2 must not cost
		// the work of batches that will not be stored.
		if err := c.s.tiering.Backpressure(st.Tenant, st.Name); err != nil {
			return err
		}
	}
	lim := c.s.store.Limits()
	b, err := decodeBatch(p.Records, lim.MaxBatchEvents, lim.MaxBatchBytes)
	if err != nil {
		return err
	}
	seg := st.Segments[p.Partition].ID
	req := core.AppendRequest{Tenant: st.Tenant, Stream: st.Name, Segment: seg, Events: b.values, Owner: c.principal.Name}
	var key seqKey
	if b.ProducerID >= 0 {
		// An idempotent producer: its id and epoch are a silt writer,
		// and the batch's last sequence number plus one its silt
		// sequence, which only grows within a producer epoch. A retried
		// batch then carries the sequence silt last stored and is not
		// stored again.
		req.WriterID = fmt.Sprintf("kafka-%d-%d", b.ProducerID, b.ProducerEpoch)
		req.Seq = uint64(b.FirstSequence) + uint64(b.NumRecords)
		key = seqKey{writer: req.WriterID, tenant: st.Tenant, stream: st.Name, segment: seg}
		if err := c.s.seqs.check(key, b.FirstSequence); err != nil {
			return err
		}
	}
	start := time.Now()
	res, err := c.s.store.Append(ctx, req)
	if err != nil {
		return err
	}
	if c.s.producers != nil {
		if res.Duplicate {
			c.s.producers.Duplicate(st.Tenant, st.Name, time.Since(start))
		} else {
			var n int64
			for _, v := range b.values {
				n += int64(len(v))
			}
			c.s.producers.Appended(st.Tenant, st.Name, len(b.values), n, time.Since(start))
		}
	}
	if req.WriterID != "" && !res.Duplicate {
		c.s.seqs.stored(key, b.FirstSequence+b.NumRecords)
	}
	rp.BaseOffset = int64(res.FirstOffset)
	rp.LogAppendTime = time.Now().UnixMilli()
	rp.LogStartOffset = -1
	return nil
}

// sequences remembers, per idempotent writer and segment, the sequence
// number its next batch must start with. A batch that starts past it
// follows one that was not stored (refused, or lost in flight while the
// client pipelined the next): storing it would leave a gap that the
// retry of the missing batch could never fill, since silt takes a
// sequence number not above the last stored as a duplicate. Kafka
// answers OUT_OF_ORDER_SEQUENCE_NUMBER there, and so does the head.
//
// The table is memory only and bounded; after a restart, or for a writer
// evicted from it, the first batch is taken as it comes (core still
// stores each retry once).
type sequences struct {
	mu   sync.Mutex
	next map[seqKey]int32
	max  int
}

type seqKey struct{ writer, tenant, stream, segment string }

const maxTrackedSequences = 100_000

func newSequences(max int) *sequences { return &sequences{next: map[seqKey]int32{}, max: max} }

func (s *sequences) check(k seqKey, first int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if want, ok := s.next[k]; ok && first > want {
		return fmt.Errorf("%w: batch starts at sequence %d, the next expected is %d", errOutOfOrder, first, want)
	}
	return nil
}

func (s *sequences) stored(k seqKey, next int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.next[k]; !ok && len(s.next) >= s.max {
		for old := range s.next { // any one: the map's order is random
			delete(s.next, old)
			break
		}
	}
	s.next[k] = next
}

// handleInitProducerID hands out producer ids for idempotent producers.
// Ids are random: unique without a counter to keep durable, and a
// restarted server never hands out an id whose old sequence numbers
// silt still remembers. Transactions are not supported.
func handleInitProducerID(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp, nil
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16 {
		// A producer bumping its own epoch (KIP-360) keeps its id.
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp, nil
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("%w: producer id: %v", errClose, err)
	}
	resp.ProducerID = int64(binary.BigEndian.Uint64(b[:]) >> 2) // positive, below 2^62
	resp.ProducerEpoch = 0
	c.log.Debug("kafka producer id issued", zap.Int64("producer_id", resp.ProducerID), zap.String("principal", c.principal.Name))
	return resp, nil
}
