package tiering

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
)

// Sealing turns scanned tier-1 ranges into tier-2 chunks.
//
// The scan (scanSegment) cuts the untiered range into chunks as it counts
// it, so chunk boundaries are known before any chunk is built. A backlog of
// several full chunks is then sealed through a window: that many chunks
// are built and uploaded at once (each streamed from tier 1 to the backend
// in pieces, hashed as it goes), and the finished ones are committed to
// the catalog in offset order while the next are built. That keeps a
// backlog from paying one chunk's upload latency, fsync and catalog syncs
// after another, and lets the MD5s of the chunks in flight run side by
// side in one SIMD hasher.

// chunkCut is a range of scanned, untiered events that is one chunk.
type chunkCut struct {
	first, next         uint64 // offsets [first, next)
	bytes               int64  // encoded size
	firstTime, lastTime time.Time
}

func (c chunkCut) empty() bool { return c.next == c.first }

// count adds one scanned event of encoded size sz, appended at at, to the
// segment's cuts: it goes into the open cut unless that would pass
// max_chunk_bytes, in which case the open cut is complete and a new one
// starts with it. A single event larger than the limit is a chunk alone.
func (t *Tierer) count(seg *segState, off uint64, at time.Time, sz int64) {
	if !seg.open.empty() && seg.open.bytes+sz > t.cfg.MaxChunkBytes {
		seg.cuts = append(seg.cuts, seg.open)
		seg.open = chunkCut{first: off, next: off}
	}
	if seg.open.empty() {
		seg.open.first, seg.open.firstTime = off, at
	}
	seg.open.next = off + 1
	seg.open.bytes += sz
	seg.open.lastTime = at
}

// sealable returns the cuts to seal now, at most max: the complete ones,
// and the open one if it is full or its oldest event reached the lag
// ceiling (withOpen). The slice is the caller's: counting may go on
// while it is sealed.
func (t *Tierer) sealable(seg *segState, now time.Time, max int) (cuts []chunkCut, withOpen bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Clone(seg.cuts[:min(len(seg.cuts), max)])
	if len(out) < max && len(out) == len(seg.cuts) && !seg.open.empty() &&
		(seg.open.bytes >= t.cfg.MaxChunkBytes || now.Sub(seg.open.firstTime) >= t.cfg.sealAge()) {
		return append(out, seg.open), true
	}
	return out, false
}

// sealRun builds, uploads and commits cuts (consecutive, starting at the
// segment's tiered offset) through a window of chunks_in_flight builds:
// as soon as the builds from the tiered offset on have finished, they are
// committed (with the intent for the builds started next) in one synced
// batch, while the builds behind them go on, so that the disk syncs one
// chunk while the CPU encodes and hashes the next. When a build fails, no
// more are started, the finished ones before it are still committed, and
// its error is returned.
func (t *Tierer) sealRun(ctx context.Context, ss *streamState, seg *segState, cuts []chunkCut) error {
	recs := make([]ChunkRecord, len(cuts))
	keys := make([]string, len(cuts))
	for i, c := range cuts {
		recs[i] = ChunkRecord{Segment: seg.id, FirstOffset: c.first, LastOffset: c.next - 1, FirstTime: c.firstTime, LastTime: c.lastTime}
		recs[i].Name = ChunkName(ss.enc, c.first, c.next-1)
		recs[i].Key = PrefixedObjectKey(ss.prefix, ss.tenant, ss.name, seg.id, recs[i].Name)
		keys[i] = recs[i].Key
	}
	window := t.cfg.ChunksInFlight
	launch := min(len(cuts), window)
	if err := t.recordIntents(ctx, ss, seg, keys[:launch]); err != nil {
		return err
	}
	type result struct {
		i   int
		err error
	}
	results := make(chan result, len(cuts))
	finished := make([]bool, len(cuts))
	errs := make([]error, len(cuts))
	started, running, committed := 0, 0, 0
	var failed error
	for {
		for ; started < launch; started++ {
			running++
			go func(i int) {
				results <- result{i, t.buildChunk(ctx, ss, seg, cuts[i], &recs[i])}
			}(started)
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		finished[r.i], errs[r.i] = true, r.err
		if r.err != nil && failed == nil {
			failed = r.err
		}
		done := committed
		for done < started && finished[done] && errs[done] == nil {
			done++
		}
		if done == committed {
			continue
		}
		if failed == nil {
			launch = min(len(cuts), done+window)
		}
		// The batch that commits the finished prefix also names the
		// builds about to start, so that none runs without an intent.
		if err := t.commitChunks(ctx, ss, seg, recs[committed:done], keys[done:launch]); err != nil {
			for running > 0 { // builds already running finish uncommitted
				<-results
				running--
			}
			return err
		}
		committed = done
	}
	if committed < len(cuts) {
		// The first failure in offset order is what held the rest back.
		for i := committed; i < started; i++ {
			if errs[i] != nil {
				return errs[i]
			}
		}
		return cmp.Or(failed, ctx.Err(), fmt.Errorf("tiering: chunks from offset %d not committed", cuts[committed].first))
	}
	return nil
}

// recordIntents deletes objects that earlier, interrupted uploads left
// under keys not being uploaded again, then commits keys as the segment's
// upload intent before any of them is written.
func (t *Tierer) recordIntents(ctx context.Context, ss *streamState, seg *segState, keys []string) error {
	if slices.Equal(seg.intents, keys) {
		return nil
	}
	for _, k := range seg.intents {
		if slices.Contains(keys, k) {
			continue
		}
		// An upload of a different range may have left an object
		// behind; it must go before its intent is forgotten.
		if err := t.be.Delete(ctx, k); err != nil {
			return fmt.Errorf("delete interrupted upload %s: %w", k, err)
		}
	}
	v, _ := json.Marshal(uploadIntent{Keys: keys})
	if err := t.cat.Set(intentKey(ss.tenant, ss.name, seg.id), v); err != nil {
		return err
	}
	t.mu.Lock()
	seg.intents = slices.Clone(keys)
	t.mu.Unlock()
	return nil
}

// commitChunks records sealed chunks and the segment's new tiered offset in
// one synced batch; left are the keys of uploads not committed (running,
// about to start, or failed), which become the segment's intent.
func (t *Tierer) commitChunks(ctx context.Context, ss *streamState, seg *segState, recs []ChunkRecord, left []string) error {
	if t.hooks.beforeCommit != nil {
		if err := t.hooks.beforeCommit(); err != nil {
			return err
		}
	}
	now := t.now()
	rec := seg.rec
	set := make(map[string][]byte, len(recs)+2)
	var bytes int64
	for i := range recs {
		recs[i].Sealed = now.UTC()
		cv, _ := json.Marshal(recs[i])
		set[chunkKey(ss.tenant, ss.name, seg.id, recs[i].FirstOffset)] = cv
		bytes += recs[i].Size
	}
	last := recs[len(recs)-1]
	rec.Tiered, rec.Chunks, rec.Bytes, rec.LastSeal = last.LastOffset+1, rec.Chunks+len(recs), rec.Bytes+bytes, now.UTC()
	sv, _ := json.Marshal(rec)
	set[segmentKey(ss.tenant, ss.name, seg.id)] = sv
	var del []string
	if len(left) == 0 {
		del = []string{intentKey(ss.tenant, ss.name, seg.id)}
	} else {
		iv, _ := json.Marshal(uploadIntent{Keys: left})
		set[intentKey(ss.tenant, ss.name, seg.id)] = iv
	}
	if err := t.cat.Commit(set, del); err != nil {
		return fmt.Errorf("commit chunk %s: %w", recs[0].Key, err)
	}
	ss.manifestDirty = true
	ss.chunkChanges += len(recs)

	t.mu.Lock()
	seg.rec = rec
	seg.pending -= bytes
	t.backlog.Add(-bytes)
	seg.sinceTruncate += bytes
	seg.intents = slices.Clone(left)
	for len(seg.cuts) > 0 && seg.cuts[0].next <= rec.Tiered {
		seg.cuts = seg.cuts[1:]
	}
	if !seg.open.empty() && seg.open.next <= rec.Tiered {
		seg.open = chunkCut{first: rec.Tiered, next: rec.Tiered}
	}
	switch {
	case len(seg.cuts) > 0:
		seg.oldest = seg.cuts[0].firstTime
	case !seg.open.empty():
		seg.oldest = seg.open.firstTime
	default:
		seg.oldest = time.Time{}
	}
	seg.failures, seg.lastErr, seg.retryAt = 0, nil, time.Time{}
	t.tierBack(seg)
	t.mu.Unlock()
	t.m.chunks.Add(float64(len(recs)))
	t.m.bytes.Add(float64(bytes))
	for _, c := range recs {
		t.m.visibility.Observe(now.Sub(c.FirstTime).Seconds())
		if t.onChunk != nil {
			t.onChunk(ChunkEvent{Tenant: ss.tenant, Stream: ss.name, Segment: seg.id, Time: now,
				FirstOffset: c.FirstOffset, Events: c.Events, Bytes: c.Size, Lag: now.Sub(c.FirstTime)})
		}
	}

	t.truncateTier1(ss, seg, false)
	return nil
}

// truncateEveryBytes is how much a segment tiers, while it catches up on a
// backlog, between removals of its tier-1 files.
const truncateEveryBytes = 512 << 20

// truncateTier1 removes the segment's tier-1 files wholly below its tiered
// offset — at once when caughtUp or tier 1 is short of space, otherwise
// only after truncateEveryBytes more were tiered. Removing files frees their blocks, and on a
// filesystem that discards freed blocks (ext4 -o discard) those discards
// are issued with the next journal commits, which are the fsyncs of the
// chunks being uploaded: removals after every commit slowed a 256 MiB
// catch-up threefold by its end. Batched, tier 1 holds at most that much
// already-tiered data longer. A failed truncation is retried at the next
// call (or the next start); it can only drop what tier 2 now holds.
//
// The active file is never removed by truncation; while tier 1 is short
// of space, one that holds only tiered events is rolled first so that it
// can go too (see freeActive).
func (t *Tierer) truncateTier1(ss *streamState, seg *segState, caughtUp bool) {
	if seg.rec.Tiered == 0 {
		return
	}
	tight := t.tight()
	ref := core.SegmentRef{Tenant: ss.tenant, Stream: ss.name, Segment: seg.id, Incarnation: ss.incarnation}
	if tight && t.freeActive(ref, seg.rec.Tiered) {
		seg.truncated, seg.sinceTruncate = seg.rec.Tiered, 0
		return
	}
	if !tight {
		t.mu.Lock()
		t.mu.unrolled[ref] = seg.rec.Tiered
		t.mu.Unlock()
	}
	if seg.rec.Tiered <= seg.truncated || (!caughtUp && seg.sinceTruncate < truncateEveryBytes && !tight) {
		return
	}
	if err := t.store.TruncateBefore(ss.tenant, ss.name, seg.id, seg.rec.Tiered); err != nil && !errors.Is(err, core.ErrNotFound) {
		t.log.Warn("truncate tier 1 after tiering", zap.String("stream", ss.tenant+"/"+ss.name), zap.String("segment", seg.id), zap.Error(err))
		return
	}
	seg.truncated, seg.sinceTruncate = seg.rec.Tiered, 0
}

// pieceBytes is how much encoded data a chunk build hands to the backend
// and the hashes at a time.
const pieceBytes = 1 << 20

// buildChunk streams cut's events from tier 1 into a new tier-2 object
// under c.Key, encoding them in pieces that go to the backend, MD5 and
// CRC32C in turn, and fills in c's size, event count and checksums once
// the backend confirmed the object durable.
func (t *Tierer) buildChunk(ctx context.Context, ss *streamState, seg *segState, cut chunkCut, c *ChunkRecord) error {
	select {
	case t.slots <- struct{}{}:
		defer func() { <-t.slots }()
	case <-ctx.Done():
		return ctx.Err()
	}
	start := time.Now()
	w, err := t.be.Create(ctx, c.Key)
	if err != nil {
		return fmt.Errorf("upload %s: %w", c.Key, err)
	}
	h := t.md5.NewHash()
	defer h.Close()
	bp, _ := t.bufs.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, pieceBytes)
		bp = &b
	}
	defer t.bufs.Put(bp)
	s := &chunkSink{w: w, md5: h, buf: (*bp)[:0]}
	next := cut.first
	err = t.store.Scan(ctx, ss.tenant, ss.name, seg.id, cut.first, cut.next, func(first uint64, _ time.Time, events [][]byte) error {
		if first != next {
			return fmt.Errorf("tier 1 passed offset %d, expected %d", first, next)
		}
		for _, e := range events {
			if err := s.add(ss.enc, e); err != nil {
				return err
			}
		}
		next += uint64(len(events))
		return nil
	})
	if err == nil && next != cut.next {
		err = fmt.Errorf("tier 1 ended at offset %d, before the scanned offset %d", next, cut.next)
	}
	if err == nil {
		err = s.flush()
	}
	*bp = s.buf[:0]
	if err == nil && s.size != cut.bytes {
		err = fmt.Errorf("encoded %d bytes of [%d, %d), the scan counted %d", s.size, cut.first, cut.next, cut.bytes)
	}
	if err != nil {
		w.Abort()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("upload %s from tier 1: %w", c.Key, err)
	}
	if err := w.Finish(); err != nil {
		w.Abort()
		return fmt.Errorf("upload %s: %w", c.Key, err)
	}
	t.m.uploadSeconds.Observe(time.Since(start).Seconds())
	c.Size = s.size
	c.Events = int(cut.next - cut.first)
	c.MD5 = hex.EncodeToString(h.Sum(nil))
	c.CRC32C = s.crc
	return nil
}

// chunkSink encodes events into pieces and writes each piece to the
// upload and both checksums.
type chunkSink struct {
	w    Writer
	md5  hash.Hash
	crc  uint32
	size int64
	buf  []byte
}

// add appends one encoded event. One larger than a piece is written
// straight from tier 1's buffer instead of being copied into one.
func (s *chunkSink) add(enc core.Encoding, e []byte) error {
	n := int(encodedSize(enc, len(e)))
	if len(s.buf)+n <= cap(s.buf) {
		s.buf = core.Encode(enc, s.buf, e)
		return nil
	}
	if err := s.flush(); err != nil {
		return err
	}
	if n <= cap(s.buf) {
		s.buf = core.Encode(enc, s.buf, e)
		return nil
	}
	if enc == core.EncodingFramed {
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(e)))
		if err := s.write(hdr[:]); err != nil {
			return err
		}
		return s.write(e)
	}
	if err := s.write(e); err != nil {
		return err
	}
	return s.write([]byte{'\n'})
}

func (s *chunkSink) flush() error {
	if len(s.buf) == 0 {
		return nil
	}
	err := s.write(s.buf)
	s.buf = s.buf[:0]
	return err
}

func (s *chunkSink) write(p []byte) error {
	if _, err := s.w.Write(p); err != nil {
		return err
	}
	s.md5.Write(p)
	s.crc = crc32.Update(s.crc, castagnoli, p)
	s.size += int64(len(p))
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ChunkEvent is a chunk committed to tier 2, or a failed attempt at one
// (Err set, the chunk fields zero), for Options.OnChunk.
type ChunkEvent struct {
	Tenant, Stream, Segment string
	Time                    time.Time
	FirstOffset             uint64
	Events                  int
	Bytes                   int64
	// Lag is how long the chunk's first event waited between its append
	// and its commit to tier 2 (what silt_tier_visibility_seconds
	// observes).
	Lag time.Duration
	Err error
}
