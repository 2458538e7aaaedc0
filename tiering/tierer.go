// Package tiering moves acknowledged events from tier 1 (core's segment
// logs) to tier 2 as sealed, immutable chunks, and records them in the
// catalog that the read-only view serves.
//
// One goroutine runs a pass each interval over the segments with pending
// work (pass.go), never over every stream. A segment's untiered
// range [tiered, next) is cut into chunks of max_chunk_bytes of encoded
// events as it is scanned; full chunks are sealed at once, the last one
// when its oldest event nears the lag ceiling (seal.go). A chunk's bytes
// are exactly core.Encode of its events, so tier-2 files are directly
// usable by line- or frame-oriented tools.
//
// The upload protocol keeps tier 1 and tier 2 consistent across crashes:
//
//  1. commit an upload intent (the keys of the chunks about to be built)
//     to the catalog;
//  2. for each chunk in the window at once: Backend.Create, write, Finish
//     (durable, visible under the key);
//  3. commit the finished chunks' records and the segment's new tiered
//     offset, and the intent of what is still in flight, in one synced
//     batch;
//  4. only then truncate tier-1 files wholly below the tiered offset.
//
// A crash before 3 leaves an intent: its objects are deleted at the next
// start (or before the segment's next upload), and the range is tiered
// again from the catalog's offset. Object names are derived from offsets,
// so a re-upload of the same range overwrites rather than duplicates.
//
// Retention (retention.go) runs the same way in reverse: the chunk record
// goes, together with a delete intent naming its object, in one synced
// batch; then the object is deleted and the intent dropped. A crash in
// between leaves an intent whose object the next start deletes.
package tiering

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/tiering/internal/md5simd"
)

// Options are the Tierer's collaborators.
type Options struct {
	Logger     *zap.Logger
	Registerer prometheus.Registerer // nil: metrics are not registered
	Now        func() time.Time      // nil: time.Now

	// OnChunk, if set, is told of every chunk committed to tier 2 and of
	// every failed attempt (introspection's tiering events). It is called
	// on the tiering goroutine, after the commit, and must not block.
	OnChunk func(ChunkEvent)

	manual bool // tests drive scan themselves
	// wrap, if set, wraps the store (tests count what a pass touches).
	wrap func(tier1) tier1
	// statDisk, if set, measures tier 1's filesystem (tests).
	statDisk func(dir string) (avail, total uint64, err error)
}

// Tierer runs the tier policy. It is safe for concurrent use.
type Tierer struct {
	cfg   Config
	store tier1
	cat   *catalog.Catalog
	be    Backend
	log   *zap.Logger
	now   func() time.Time
	// onChunk is Options.OnChunk.
	onChunk func(ChunkEvent)
	m       *metrics

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once

	// bufs holds the pieces (*[]byte) that chunk builds encode into.
	bufs sync.Pool
	// slots bounds the chunk builds in flight across all streams, which
	// bounds the memory and backend connections of a backlog.
	slots chan struct{}
	// md5 hashes every chunk in flight in one SIMD server: a group's MD5s
	// run side by side instead of one core's worth at a time.
	md5 md5simd.Server
	// work and due are the pass's sets (pass.go), owned by the goroutine
	// that runs passes.
	work map[core.SegmentRef]struct{}
	due  map[streamID]time.Time

	statDisk func(dir string) (avail, total uint64, err error)
	// backlog is the sum of the tracked segments' pending bytes, which
	// Backpressure reads on every append.
	backlog atomic.Int64

	// passBytes bounds the tier-1 bytes one count reads
	// (maxScanBytesPerPass; tests lower it).
	passBytes int
	hooks     struct {
		beforeCommit func() error // tests: fail between upload and commit
		// tests: fail between a retention commit and the object's deletion
		beforeRetentionDelete func() error
	}

	// mu guards the state below and the segments' counts and cuts. The
	// scanning goroutine writes them, and while it counts a backlog ahead
	// (scanSegment), the seal it started commits beside it; Status and
	// Backpressure read them. No I/O happens under mu.
	mu struct {
		sync.Mutex
		streams map[string]*streamState // tenant/stream
		// failing are the segments whose last attempt failed: when any
		// upload succeeds again, tier 2 is back and they retry at once.
		failing map[*segState]struct{}
		// unrolled are segments whose active file may hold tiered
		// events, with their tiered offset: what freeActive can give
		// back once tier 1 runs short of space.
		unrolled map[core.SegmentRef]uint64
	}
}

type streamState struct {
	tenant, name string
	prefix       string // tier prefix ("" for none)
	enc          core.Encoding
	incarnation  int64
	segs         []*segState

	// The manifest in tier 2 is rewritten when chunks changed (see
	// maybeWriteManifest); it starts dirty for a stream that has had a
	// chunk, so that each start rewrites it once, repairing one whose
	// catalog record a crash cut off.
	manifestDirty   bool
	chunkChanges    int // seals and retention deletions so far
	manifestWritten time.Time
	manifestRetry   time.Time
}

type segState struct {
	id  string
	rec SegmentRecord
	// [rec.Tiered, scanned) has been read and counted: pending encoded
	// bytes, oldest the append time of the event at rec.Tiered.
	scanned uint64
	pending int64
	oldest  time.Time
	// The scanned range cut into chunks: cuts are complete, open is the
	// rest (possibly empty). Counting appends to them and committing drops
	// the sealed ones, both under Tierer.mu (they may run at once).
	cuts []chunkCut
	open chunkCut
	// intents are the keys of uploads not yet committed.
	intents []string
	// truncated is the offset below which tier 1 was last truncated;
	// sinceTruncate, the bytes tiered since (see truncateTier1).
	truncated     uint64
	sinceTruncate int64

	lastErr   error
	lastErrAt time.Time
	failures  int
	retryAt   time.Time
}

// New starts tiering the store's streams into be.
func New(cfg Config, store *core.Store, be Backend, o Options) (*Tierer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &Tierer{cfg: cfg, store: store, cat: store.Catalog(), be: be, log: o.Logger, now: o.Now, onChunk: o.OnChunk, done: make(chan struct{})}
	if o.wrap != nil {
		t.store = o.wrap(t.store)
	}
	t.statDisk = sampledStat(statDisk, diskSampleEvery)
	if o.statDisk != nil {
		t.statDisk = o.statDisk
	}
	t.work = map[core.SegmentRef]struct{}{}
	t.due = map[streamID]time.Time{}
	t.mu.failing = map[*segState]struct{}{}
	t.mu.unrolled = map[core.SegmentRef]uint64{}
	t.slots = make(chan struct{}, cfg.ChunksInFlight)
	t.passBytes = maxScanBytesPerPass
	t.md5 = md5simd.NewServer()
	t.mu.streams = map[string]*streamState{}
	m, err := newMetrics(o.Registerer, t)
	if err != nil {
		return nil, err
	}
	t.m = m
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	if o.manual {
		if err := t.recover(ctx); err != nil {
			cancel()
			t.md5.Close()
			return nil, err
		}
		close(t.done)
		return t, nil
	}
	go t.run(ctx)
	return t, nil
}

// Close stops tiering and waits for an upload in flight to end.
func (t *Tierer) Close() error {
	t.closeOnce.Do(func() {
		t.cancel()
		<-t.done
		t.md5.Close()
		t.m.unregister()
	})
	return nil
}

func (t *Tierer) run(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.Interval)
	defer tick.Stop()
	// recover reads every stream record: it runs here rather than in New,
	// so that a start does not wait for it, and before the first pass,
	// which must not upload beside uploads it has yet to clean up.
	for {
		err := t.recover(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		t.log.Warn("cannot finish what the previous run left (retried; nothing is tiered meanwhile)", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
	for {
		// A pass that stopped at its per-segment bounds with work left
		// (a backlog) is followed by the next at once, not a tick later.
		if more := t.scan(ctx); more && ctx.Err() == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// recover finishes what a previous run left: streams whose tier-2 data
// outlived them are removed, and uploads that never committed are deleted.
// A backend that is down now only delays the deletions.
func (t *Tierer) recover(ctx context.Context) error {
	// The one walk over every stream, at start: deleted streams' data is
	// removed, and retention is due at once for streams that have it
	// (an idle stream's chunks expire without any commit to wake it).
	live := map[string]int64{}
	err := t.store.EachStream(func(st core.Stream) error {
		live[st.Tenant+"/"+st.Name] = st.Incarnation()
		if r := st.Config.Retention; r.MaxAge > 0 || r.MaxBytes > 0 {
			t.due[streamID{st.Tenant, st.Name, st.Incarnation()}] = time.Time{}
		}
		return nil
	})
	if err != nil {
		return err
	}
	recs, err := streamRecords(t.cat)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if inc, ok := live[r.Tenant+"/"+r.Stream]; !ok || inc != r.Incarnation {
			if err := t.removeStream(ctx, r); err != nil {
				t.log.Warn("could not remove tier-2 data of a deleted stream; retried at next start", zap.String("stream", r.Tenant+"/"+r.Stream), zap.Error(err))
			}
		}
	}
	var intents []string
	err = t.cat.Scan([]byte(keyIntent), nil, func(k, v []byte) error {
		var in uploadIntent
		if err := json.Unmarshal(v, &in); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		for _, key := range in.keys() {
			if err := t.be.Delete(ctx, key); err != nil {
				t.log.Warn("could not delete an interrupted tier-2 upload; retried before the next upload", zap.String("key", key), zap.Error(err))
				return nil
			}
		}
		intents = append(intents, string(k))
		return nil
	})
	if err != nil {
		return err
	}
	if len(intents) > 0 {
		t.log.Info("removed interrupted tier-2 uploads", zap.Int("count", len(intents)))
		if err := t.cat.DeleteKeys(intents); err != nil {
			return err
		}
	}
	n, err := t.finishDeletes(ctx, keyDelete)
	if n > 0 {
		t.log.Info("removed tier-2 objects of chunks dropped by retention before a restart", zap.Int("count", n))
	}
	return err
}

// removeStream deletes a stream's tier-2 objects and catalog entries. The
// stream record goes last, so a crash part-way is finished by the next
// recover; the view hides a stream whose incarnation is not core's.
func (t *Tierer) removeStream(ctx context.Context, r StreamRecord) error {
	objPrefix := streamObjectPrefix(r.Prefix, r.Tenant, r.Stream)
	keys, err := t.be.List(ctx, objPrefix)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !isStreamObject(objPrefix, k) && k != objPrefix+ManifestName {
			continue
		}
		if err := t.be.Delete(ctx, k); err != nil {
			return err
		}
	}
	for _, seg := range r.Segments {
		if err := t.cat.DeletePrefix(chunkPrefix(r.Tenant, r.Stream, seg)); err != nil {
			return err
		}
		if err := t.cat.DeletePrefix(deletePrefix(r.Tenant, r.Stream, seg)); err != nil {
			return err
		}
	}
	var del []string
	for _, seg := range r.Segments {
		del = append(del, segmentKey(r.Tenant, r.Stream, seg), intentKey(r.Tenant, r.Stream, seg))
	}
	del = append(del, manifestKey(r.Tenant, r.Stream), streamKey(r.Tenant, r.Stream))
	t.log.Info("removed tier-2 data of a deleted stream", zap.String("stream", r.Tenant+"/"+r.Stream), zap.Int("objects", len(keys)))
	// The stream's record goes last: until then the next start retries.
	return t.cat.DeleteKeys(del)
}

// track returns the state of a stream, loading or creating its catalog
// records the first time the stream (incarnation) is seen.
func (t *Tierer) track(ctx context.Context, st core.Stream) (*streamState, error) {
	key := st.Tenant + "/" + st.Name
	t.mu.Lock()
	ss := t.mu.streams[key]
	t.mu.Unlock()
	if ss != nil && ss.incarnation == st.Incarnation() {
		return ss, nil
	}
	rec, ok, err := GetStream(t.cat, st.Tenant, st.Name)
	if err != nil {
		return nil, err
	}
	if ok && rec.Incarnation != st.Incarnation() {
		// The stream was deleted and re-created: its predecessor's chunks
		// would collide with the new ones' names.
		if err := t.removeStream(ctx, rec); err != nil {
			return nil, fmt.Errorf("remove previous incarnation: %w", err)
		}
		ok = false
	}
	if !ok {
		rec = StreamRecord{Tenant: st.Tenant, Stream: st.Name, Encoding: st.Config.Encoding, Created: st.Created, Incarnation: st.Incarnation(), Prefix: st.Config.TierPrefix}
		for _, seg := range st.Segments {
			rec.Segments = append(rec.Segments, seg.ID)
		}
		v, _ := json.Marshal(rec)
		if err := t.cat.Set(streamKey(st.Tenant, st.Name), v); err != nil {
			return nil, err
		}
	}
	ss = &streamState{tenant: st.Tenant, name: st.Name, prefix: rec.Prefix, enc: rec.Encoding, incarnation: rec.Incarnation}
	for _, info := range st.Segments {
		seg := &segState{id: info.ID}
		// A stream without a record has no segment or intent records
		// either (they are written after it and deleted with it in one
		// batch): a new stream costs no point reads per segment, which
		// reach pebble's tables once the catalog outgrows its memtable.
		if ok {
			if seg.rec, err = GetSegment(t.cat, st.Tenant, st.Name, info.ID); err != nil {
				return nil, err
			}
			var in uploadIntent
			if _, err := getJSON(t.cat, intentKey(st.Tenant, st.Name, info.ID), &in); err != nil {
				return nil, err
			}
			seg.intents = in.keys()
		}
		seg.scanned = seg.rec.Tiered
		if info.FirstOffset > seg.rec.Tiered {
			t.log.Error("tier 1 starts above the tiered offset; events in between are lost",
				zap.String("stream", key), zap.String("segment", info.ID),
				zap.Uint64("tiered", seg.rec.Tiered), zap.Uint64("tier1_first", info.FirstOffset))
			seg.scanned = info.FirstOffset
			seg.rec.Tiered = info.FirstOffset
		}
		seg.open = chunkCut{first: seg.scanned, next: seg.scanned}
		if seg.rec.Tiered > 0 {
			// A crash between the catalog commit and the truncation left
			// tiered files in tier 1.
			if err := t.store.TruncateBefore(st.Tenant, st.Name, info.ID, seg.rec.Tiered); err != nil {
				t.log.Warn("truncate tier 1", zap.String("stream", key), zap.Error(err))
			} else {
				seg.truncated = seg.rec.Tiered
			}
		}
		ss.segs = append(ss.segs, seg)
		// A stream that never had a chunk has no manifest to repair:
		// its manifest waits for its first seal. Writing an empty one
		// cost two object syncs, a directory sync and a catalog write per
		// created stream, which made tiering the bulk of the work of
		// creating streams (three quarters of the server's CPU while
		// creating 16 at a time) and of their first appends.
		if seg.rec.Tiered > 0 {
			ss.manifestDirty = true
		}
	}
	t.mu.Lock()
	if old := t.mu.streams[key]; old != nil {
		for _, seg := range old.segs {
			delete(t.mu.failing, seg)
			t.backlog.Add(-seg.pending)
		}
	}
	t.mu.streams[key] = ss
	t.mu.Unlock()
	return ss, nil
}

// Bounds on one scan's work per segment, so that one busy or far-behind
// segment does not hold up the others past the lag ceiling.
const (
	maxScanBytesPerPass = 128 << 20
	maxSealsPerPass     = 16
)

// scanSegment counts what tier 1 holds beyond the scanned offset (at most
// maxScanBytesPerPass of it, and as much again while sealing a backlog)
// and seals the chunks that are due. It reports whether the segment has
// more to seal at once than the pass's bounds allowed.
func (t *Tierer) scanSegment(ctx context.Context, ss *streamState, seg *segState, info core.SegmentInfo) bool {
	if err := t.countTier1(ctx, ss, seg, info); err != nil {
		if ctx.Err() == nil {
			t.fail(ss, seg, err)
		}
		return false
	}
	countedAhead := false
	for sealed := 0; sealed < maxSealsPerPass && ctx.Err() == nil; {
		now := t.now()
		if now.Before(seg.retryAt) {
			return false
		}
		cuts, withOpen := t.sealable(seg, now, maxSealsPerPass-sealed)
		if len(cuts) == 0 {
			return seg.scanned < info.NextOffset
		}
		var err, countErr error
		if !withOpen && !countedAhead && seg.scanned < info.NextOffset {
			// A backlog: while these complete chunks are sealed, the next
			// pass's worth of tier 1 is counted, so that its chunks are cut
			// by the time the window needs them (counting is one core's
			// work, which would otherwise leave the other idle). The
			// sealing leaves the open cut alone, which is all the counting
			// extends, and both change the shared state under t.mu.
			countedAhead = true
			sealErr := make(chan error, 1)
			go func() { sealErr <- t.sealRun(ctx, ss, seg, cuts) }()
			countErr = t.countTier1(ctx, ss, seg, info)
			err = <-sealErr
		} else {
			err = t.sealRun(ctx, ss, seg, cuts)
		}
		if err = cmp.Or(err, countErr); err != nil {
			if ctx.Err() == nil {
				t.fail(ss, seg, err)
			}
			return false
		}
		sealed += len(cuts)
	}
	return seg.scanned < info.NextOffset || len(seg.cuts) > 0 || seg.open.bytes >= t.cfg.MaxChunkBytes
}

// countTier1 reads what tier 1 holds beyond the scanned offset, at most
// passBytes of it, and counts it into the segment's cuts.
func (t *Tierer) countTier1(ctx context.Context, ss *streamState, seg *segState, info core.SegmentInfo) error {
	t.mu.Lock()
	from := seg.scanned
	t.mu.Unlock()
	if from >= info.NextOffset {
		return nil
	}
	read := 0
	err := t.store.Scan(ctx, ss.tenant, ss.name, seg.id, from, info.NextOffset, func(first uint64, at time.Time, events [][]byte) error {
		if read >= t.passBytes {
			return errPassFull
		}
		t.mu.Lock()
		for i, e := range events {
			sz := encodedSize(ss.enc, len(e))
			t.count(seg, first+uint64(i), at, sz)
			if seg.oldest.IsZero() {
				seg.oldest = at
			}
			seg.pending += sz
			t.backlog.Add(sz)
			read += len(e)
		}
		seg.scanned = first + uint64(len(events))
		t.mu.Unlock()
		return nil
	})
	if err != nil && !errors.Is(err, errPassFull) {
		t.mu.Lock()
		at := seg.scanned
		t.mu.Unlock()
		return fmt.Errorf("read tier 1 at offset %d: %w", at, err)
	}
	return nil
}

// errPassFull stops a scan that has counted a pass's worth of bytes.
var errPassFull = errors.New("tiering: scan bound reached")

func encodedSize(enc core.Encoding, n int) int64 {
	if enc == core.EncodingFramed {
		return int64(n) + 4
	}
	return int64(n) + 1
}

// fail records an error and schedules the retry with capped exponential
// backoff. The cap (retry.max) is a few seconds by default, and the first
// upload that succeeds again ends every other segment's wait
// (tierBack), so that catch-up starts within seconds of tier 2's return
// however long the outage was.
func (t *Tierer) fail(ss *streamState, seg *segState, err error) {
	now := t.now()
	if t.onChunk != nil {
		t.onChunk(ChunkEvent{Tenant: ss.tenant, Stream: ss.name, Segment: seg.id, Time: now, Err: err})
	}
	t.mu.Lock()
	seg.failures++
	backoff := t.cfg.Retry.Initial
	for i := 1; i < seg.failures && backoff < t.cfg.Retry.Max; i++ {
		backoff *= 2
	}
	backoff = min(backoff, t.cfg.Retry.Max)
	seg.lastErr, seg.lastErrAt, seg.retryAt = err, now, now.Add(backoff)
	t.mu.failing[seg] = struct{}{}
	failures := seg.failures
	t.mu.Unlock()
	t.m.errors.Inc()
	t.log.Warn("tiering failed; will retry", zap.String("segment", seg.id), zap.Int("failures", failures), zap.Duration("backoff", backoff), zap.Error(err))
}

// tierBack is called after a commit of seg: tier 2 works, so every other
// segment waiting out a backoff retries at the next pass. Called with
// t.mu held.
func (t *Tierer) tierBack(seg *segState) {
	delete(t.mu.failing, seg)
	for s := range t.mu.failing {
		s.retryAt = time.Time{}
		delete(t.mu.failing, s)
	}
}
