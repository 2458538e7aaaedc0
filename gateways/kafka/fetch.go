package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core"
)

// maxFetchBytes bounds one Fetch answer whatever the client asks for
// (Kafka's fetch.max.bytes, 55 MiB by default, plays the same part).
const maxFetchBytes = 32 << 20

// fetchPart is one partition of a Fetch, kept across the long-poll.
type fetchPart struct {
	topic  int // index in the answer's topics
	st     core.Stream
	seg    string
	offset int64
	max    int
	err    error
}

// handleFetch reads each partition from its fetch offset. It answers at
// once when there is data (at least one whole batch even past max_bytes,
// KIP-74), otherwise it waits up to max_wait_ms (capped by kafka.max_wait)
// for min_bytes. It keeps no incremental fetch sessions: it answers
// session id 0, which clients take as "full fetches only".
func handleFetch(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp, nil
	}
	var parts []*fetchPart
	for ti, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		resp.Topics = append(resp.Topics, rt)
		st, err := c.resolve(ctx, t.Topic, acl.Read)
		for _, p := range t.Partitions {
			fp := &fetchPart{topic: ti, st: st, offset: p.FetchOffset, max: int(p.PartitionMaxBytes), err: err}
			if err == nil {
				if p.Partition < 0 || int(p.Partition) >= len(st.Segments) {
					fp.err = fmt.Errorf("%w: partition %d of a topic with %d", errUnknownTopic, p.Partition, len(st.Segments))
				} else {
					fp.seg = st.Segments[p.Partition].ID
				}
			}
			parts = append(parts, fp)
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		}
	}
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, c.s.cfg.MaxWait)
	deadline := time.Now().Add(wait)
	limit := maxFetchBytes
	if req.MaxBytes > 0 {
		limit = min(limit, int(req.MaxBytes))
	}
	for {
		n, err := c.fetchOnce(ctx, resp, parts, limit)
		if err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if n >= int(max(req.MinBytes, 1)) || left <= 0 || ctx.Err() != nil {
			return resp, nil
		}
		if !c.waitAny(ctx, parts, left) {
			// Nothing arrived in time: answer what there is.
			if _, err := c.fetchOnce(ctx, resp, parts, limit); err != nil {
				return nil, err
			}
			return resp, nil
		}
	}
}

// fetchOnce fills the answer's partitions from the parts' offsets and
// returns the record bytes it holds.
func (c *conn) fetchOnce(ctx context.Context, resp *kmsg.FetchResponse, parts []*fetchPart, limit int) (int, error) {
	total := 0
	k := 0
	fresh := map[string]core.Stream{}
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			fp := parts[k]
			k++
			rp := &resp.Topics[ti].Partitions[pi]
			// Empty, not null: clients read a null record set as a
			// protocol error.
			rp.RecordBatches = []byte{}
			rp.PreferredReadReplica = -1
			if fp.err != nil {
				rp.ErrorCode, rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = errorCode(fp.err), -1, -1, -1
				continue
			}
			// The segments' offsets are live: look the stream up again
			// on each pass of a long-poll.
			key := fp.st.Tenant + "/" + fp.st.Name
			st, ok := fresh[key]
			if !ok {
				var err error
				if st, err = c.s.store.GetStream(ctx, fp.st.Tenant, fp.st.Name); err != nil {
					rp.ErrorCode = errorCode(err)
					continue
				}
				fresh[key] = st
			}
			sg, ok := segmentOf(st, fp.seg)
			if !ok {
				rp.ErrorCode = errorCode(errUnknownTopic)
				continue
			}
			first, err := c.s.oldest(ctx, st, sg)
			if err != nil {
				rp.ErrorCode = errorCode(err)
				continue
			}
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = int64(sg.NextOffset), int64(sg.NextOffset), int64(first)
			if fp.offset < int64(first) || fp.offset > int64(sg.NextOffset) {
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
				continue
			}
			rp.ErrorCode = 0
			if fp.offset == int64(sg.NextOffset) || total >= limit {
				continue
			}
			// At least one batch goes out even past the bounds (KIP-74),
			// so that a large event never stalls a consumer.
			want := max(min(fp.max, limit-total), 1)
			res, err := c.s.readSegment(ctx, core.ReadRequest{Tenant: st.Tenant, Stream: st.Name, Segment: fp.seg, From: uint64(fp.offset), MaxEvents: 10_000, MaxBytes: want})
			if err != nil {
				rp.ErrorCode = errorCode(err)
				continue
			}
			rp.RecordBatches = appendBatches(nil, res.Events)
			total += len(rp.RecordBatches)
		}
	}
	return total, nil
}

func segmentOf(st core.Stream, id string) (core.SegmentInfo, bool) {
	for _, sg := range st.Segments {
		if sg.ID == id {
			return sg, true
		}
	}
	return core.SegmentInfo{}, false
}

// waitAny waits until one of the parts has an event at its fetch offset,
// the timeout passes or ctx ends; it reports whether events arrived.
func (c *conn) waitAny(ctx context.Context, parts []*fetchPart, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		woke bool
	)
	for _, fp := range parts {
		if fp.err != nil || fp.offset < 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := c.s.store.Wait(ctx, fp.st.Tenant, fp.st.Name, fp.seg, uint64(fp.offset), timeout)
			if ok && err == nil {
				mu.Lock()
				woke = true
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return woke
}

// oldest is the first offset either tier still holds.
func (s *Server) oldest(ctx context.Context, st core.Stream, sg core.SegmentInfo) (uint64, error) {
	if s.tiering == nil {
		return sg.FirstOffset, nil
	}
	first, ok, err := s.tiering.FirstTiered(ctx, st.Tenant, st.Name, sg.ID)
	if err != nil {
		return 0, err
	}
	if ok && first < sg.FirstOffset {
		return first, nil
	}
	return sg.FirstOffset, nil
}

// readSegment reads from tier 1 and, below tier 1's first offset, from
// tier 2, as the API head does: a consumer walks from tier 2 into tier 1
// without noticing the boundary.
func (s *Server) readSegment(ctx context.Context, req core.ReadRequest) (core.ReadResult, error) {
	res, err := s.store.Read(ctx, req)
	if err == nil || s.tiering == nil || !errors.Is(err, core.ErrOutOfRange) {
		return res, err
	}
	st, serr := s.store.GetStream(ctx, req.Tenant, req.Stream)
	if serr != nil {
		return res, err
	}
	if sg, ok := segmentOf(st, req.Segment); !ok || req.From >= sg.FirstOffset {
		return res, err
	}
	evs, next, terr := s.tiering.ReadTiered(ctx, req.Tenant, req.Stream, req.Segment, req.From, req.MaxEvents, req.MaxBytes)
	if terr != nil {
		return core.ReadResult{}, terr
	}
	if len(evs) == 0 && next == req.From {
		return res, err
	}
	return core.ReadResult{Events: evs, Next: next}, nil
}

// Special timestamps of ListOffsets.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
)

// handleListOffsets answers the earliest offset (either tier), the latest
// (the next to be written: Kafka's high watermark) and the first offset
// appended at or after a timestamp (by bisection over append times,
// which only grow within a segment).
func handleListOffsets(ctx context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		st, terr := c.resolve(ctx, t.Topic, acl.Read)
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset = -1, -1
			err := terr
			if err == nil {
				err = c.listOffset(ctx, st, p, &rp)
			}
			rp.ErrorCode = errorCode(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (c *conn) listOffset(ctx context.Context, st core.Stream, p kmsg.ListOffsetsRequestTopicPartition, rp *kmsg.ListOffsetsResponseTopicPartition) error {
	if p.Partition < 0 || int(p.Partition) >= len(st.Segments) {
		return fmt.Errorf("%w: partition %d of a topic with %d", errUnknownTopic, p.Partition, len(st.Segments))
	}
	sg := st.Segments[p.Partition]
	first, err := c.s.oldest(ctx, st, sg)
	if err != nil {
		return err
	}
	switch {
	case p.Timestamp == latestTimestamp:
		rp.Offset = int64(sg.NextOffset)
	case p.Timestamp == earliestTimestamp:
		rp.Offset = int64(first)
	case p.Timestamp >= 0:
		lo, hi := first, sg.NextOffset
		for lo < hi {
			mid := lo + (hi-lo)/2
			res, err := c.s.readSegment(ctx, core.ReadRequest{Tenant: st.Tenant, Stream: st.Name, Segment: sg.ID, From: mid, MaxEvents: 1})
			if err != nil {
				return err
			}
			if len(res.Events) == 0 || res.Events[0].Time.UnixMilli() < p.Timestamp {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo < sg.NextOffset {
			res, err := c.s.readSegment(ctx, core.ReadRequest{Tenant: st.Tenant, Stream: st.Name, Segment: sg.ID, From: lo, MaxEvents: 1})
			if err != nil {
				return err
			}
			if len(res.Events) > 0 {
				rp.Offset, rp.Timestamp = int64(lo), res.Events[0].Time.UnixMilli()
			}
		}
	default:
		return fmt.Errorf("%w: timestamp %d", errInvalidRecord, p.Timestamp)
	}
	return nil
}
