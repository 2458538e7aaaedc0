// Package tiering moves acknowledged events from tier 1 (core's segment
// logs) to tier 2 as sealed, immutable chunks, and records them in the
// catalog that the read-only view serves.
//
// One goroutine scans every segment each interval. A segment's untiered
// range [tiered, next) is sealed into a chunk when it holds max_chunk_bytes
// of encoded events or its oldest event nears the lag ceiling. A chunk's
// bytes are exactly core.Encode of its events, so tier-2 files are directly
// usable by line- or frame-oriented tools.
//
// The upload protocol keeps tier 1 and tier 2 consistent across crashes:
//
//  1. commit an upload intent (the object key) to the catalog;
//  2. Backend.Create, write, Finish (durable, visible under the key);
//  3. commit the chunk record and the segment's new tiered offset, and
//     drop the intent, in one synced batch;
//  4. only then truncate tier-1 files wholly below the tiered offset.
//
// A crash before 3 leaves an intent: its object is deleted at the next
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
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
)

// Options are the Tierer's collaborators.
type Options struct {
	Logger     *zap.Logger
	Registerer prometheus.Registerer // nil: metrics are not registered
	Now        func() time.Time      // nil: time.Now

	manual bool // tests drive scan themselves
}

// Tierer runs the tier policy. It is safe for concurrent use.
type Tierer struct {
	cfg   Config
	store *core.Store
	cat   *catalog.Catalog
	be    Backend
	log   *zap.Logger
	now   func() time.Time
	m     *metrics

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once

	// bufs holds chunk buffers (*[]byte), one per seal in progress.
	bufs  sync.Pool
	hooks struct {
		beforeCommit func() error // tests: fail between upload and commit
		// tests: fail between a retention commit and the object's deletion
		beforeRetentionDelete func() error
	}

	// mu guards the state below. Only the scanning goroutine writes it;
	// Status and Backpressure read it. No I/O happens under mu.
	mu struct {
		sync.Mutex
		streams map[string]*streamState // tenant/stream
	}
}

type streamState struct {
	tenant, name string
	prefix       string // tier prefix ("" for none)
	enc          core.Encoding
	incarnation  int64
	segs         []*segState

	// The manifest in tier 2 is rewritten when chunks changed (see
	// maybeWriteManifest); it starts dirty so that each start rewrites it
	// once, repairing one whose catalog record a crash cut off.
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
	// intent is the key of an upload not yet committed.
	intent string

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
	t := &Tierer{cfg: cfg, store: store, cat: store.Catalog(), be: be, log: o.Logger, now: o.Now, done: make(chan struct{})}
	t.mu.streams = map[string]*streamState{}
	m, err := newMetrics(o.Registerer, t)
	if err != nil {
		return nil, err
	}
	t.m = m
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	if err := t.recover(ctx); err != nil {
		cancel()
		return nil, err
	}
	if o.manual {
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
		t.m.unregister()
	})
	return nil
}

func (t *Tierer) run(ctx context.Context) {
	defer close(t.done)
	tick := time.NewTicker(t.cfg.Interval)
	defer tick.Stop()
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
	live := map[string]int64{}
	for _, st := range t.store.Streams() {
		live[st.Tenant+"/"+st.Name] = st.Incarnation()
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
		if err := t.be.Delete(ctx, in.Key); err != nil {
			t.log.Warn("could not delete an interrupted tier-2 upload; retried before the next upload", zap.String("key", in.Key), zap.Error(err))
			return nil
		}
		intents = append(intents, string(k))
		return nil
	})
	if err != nil {
		return err
	}
	if len(intents) > 0 {
		t.log.Info("removed interrupted tier-2 uploads", zap.Int("count", len(intents)))
		if err := t.cat.Commit(nil, intents); err != nil {
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
	del = append(del, streamKey(r.Tenant, r.Stream), manifestKey(r.Tenant, r.Stream))
	t.log.Info("removed tier-2 data of a deleted stream", zap.String("stream", r.Tenant+"/"+r.Stream), zap.Int("objects", len(keys)))
	return t.cat.Commit(nil, del)
}

// scan is one pass over every segment.
// scan runs one pass over every stream; it reports whether some segment
// has more to seal right away than one pass may do.
func (t *Tierer) scan(ctx context.Context) (more bool) {
	streams := t.store.Streams()
	seen := make(map[string]bool, len(streams))
	for _, st := range streams {
		seen[st.Tenant+"/"+st.Name] = true
	}
	// Streams are tiered by up to cfg.Streams workers; each stream is one
	// worker's for the whole pass, so its state needs no more locking than
	// before.
	var anyMore atomic.Bool
	work := make(chan core.Stream)
	var wg sync.WaitGroup
	for range min(t.cfg.Streams, len(streams)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for st := range work {
				if t.scanStream(ctx, st) {
					anyMore.Store(true)
				}
			}
		}()
	}
	for _, st := range streams {
		if ctx.Err() != nil {
			break
		}
		work <- st
	}
	close(work)
	wg.Wait()
	if ctx.Err() != nil {
		return false
	}
	more = anyMore.Load()
	t.mu.Lock()
	var gone []*streamState
	for key, ss := range t.mu.streams {
		if !seen[key] {
			gone = append(gone, ss)
			delete(t.mu.streams, key)
		}
	}
	t.mu.Unlock()
	for _, ss := range gone {
		r, ok, err := GetStream(t.cat, ss.tenant, ss.name)
		if err == nil && ok && r.Incarnation == ss.incarnation {
			err = t.removeStream(ctx, r)
		}
		if err != nil {
			t.log.Warn("could not remove tier-2 data of a deleted stream; retried at next start", zap.String("stream", ss.tenant+"/"+ss.name), zap.Error(err))
		}
	}
	return more
}

// scanStream runs one pass over a stream: its segments in turn, retention,
// the manifest. It reports whether a segment has more to seal at once.
func (t *Tierer) scanStream(ctx context.Context, st core.Stream) (more bool) {
	key := st.Tenant + "/" + st.Name
	ss, err := t.track(ctx, st)
	if err != nil {
		t.log.Warn("cannot track stream for tiering", zap.String("stream", key), zap.Error(err))
		return false
	}
	sealed := ss.chunkChanges
	for i, info := range st.Segments {
		if t.scanSegment(ctx, ss, ss.segs[i], info) {
			more = true
		}
	}
	t.retain(ctx, ss, st.Config.Retention)
	// A stream that sealed in this pass and still has more to seal is
	// busy; one that has caught up gets its manifest now.
	busy := ss.chunkChanges != sealed
	if busy {
		t.mu.Lock()
		busy = false
		for _, seg := range ss.segs {
			busy = busy || seg.pending > 0
		}
		t.mu.Unlock()
	}
	t.maybeWriteManifest(ctx, ss, busy)
	return more
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
	ss = &streamState{tenant: st.Tenant, name: st.Name, prefix: rec.Prefix, enc: rec.Encoding, incarnation: rec.Incarnation, manifestDirty: true}
	for _, info := range st.Segments {
		seg := &segState{id: info.ID}
		if seg.rec, err = GetSegment(t.cat, st.Tenant, st.Name, info.ID); err != nil {
			return nil, err
		}
		var in uploadIntent
		if _, err := getJSON(t.cat, intentKey(st.Tenant, st.Name, info.ID), &in); err != nil {
			return nil, err
		}
		seg.intent = in.Key
		seg.scanned = seg.rec.Tiered
		if info.FirstOffset > seg.rec.Tiered {
			t.log.Error("tier 1 starts above the tiered offset; events in between are lost",
				zap.String("stream", key), zap.String("segment", info.ID),
				zap.Uint64("tiered", seg.rec.Tiered), zap.Uint64("tier1_first", info.FirstOffset))
			seg.scanned = info.FirstOffset
			seg.rec.Tiered = info.FirstOffset
		}
		if seg.rec.Tiered > 0 {
			// A crash between the catalog commit and the truncation left
			// tiered files in tier 1.
			if err := t.store.TruncateBefore(st.Tenant, st.Name, info.ID, seg.rec.Tiered); err != nil {
				t.log.Warn("truncate tier 1", zap.String("stream", key), zap.Error(err))
			}
		}
		ss.segs = append(ss.segs, seg)
	}
	t.mu.Lock()
	t.mu.streams[key] = ss
	t.mu.Unlock()
	return ss, nil
}

// Bounds on one scan's work per segment, so that one busy or far-behind
// segment does not hold up the others past the lag ceiling.
const (
	maxScanBytesPerPass = 64 << 20
	maxSealsPerPass     = 8
)

// It reports whether the segment has more to seal at once than the pass's
// bounds allowed.
func (t *Tierer) scanSegment(ctx context.Context, ss *streamState, seg *segState, info core.SegmentInfo) bool {
	read := 0
	for seg.scanned < info.NextOffset && read < maxScanBytesPerPass {
		res, err := t.store.Read(ctx, core.ReadRequest{Tenant: ss.tenant, Stream: ss.name, Segment: seg.id, From: seg.scanned, MaxEvents: 10000})
		if err != nil {
			t.fail(seg, fmt.Errorf("read tier 1 at offset %d: %w", seg.scanned, err))
			return false
		}
		if len(res.Events) == 0 {
			break
		}
		t.mu.Lock()
		for _, e := range res.Events {
			if seg.oldest.IsZero() {
				seg.oldest = e.Time
			}
			seg.pending += encodedSize(ss.enc, len(e.Data))
			read += len(e.Data)
		}
		seg.scanned = res.Next
		t.mu.Unlock()
	}
	for i := 0; i < maxSealsPerPass && seg.pending > 0 && ctx.Err() == nil; i++ {
		now := t.now()
		if seg.pending < t.cfg.MaxChunkBytes && now.Sub(seg.oldest) < t.cfg.sealAge() {
			return false
		}
		if now.Before(seg.retryAt) {
			return false
		}
		if err := t.seal(ctx, ss, seg); err != nil {
			if ctx.Err() == nil {
				t.fail(seg, err)
			}
			return false
		}
	}
	return seg.scanned < info.NextOffset || seg.pending >= t.cfg.MaxChunkBytes
}

func encodedSize(enc core.Encoding, n int) int64 {
	if enc == core.EncodingFramed {
		return int64(n) + 4
	}
	return int64(n) + 1
}

// fail records an error and schedules the retry with capped exponential
// backoff.
func (t *Tierer) fail(seg *segState, err error) {
	now := t.now()
	t.mu.Lock()
	seg.failures++
	backoff := t.cfg.Retry.Initial
	for i := 1; i < seg.failures && backoff < t.cfg.Retry.Max; i++ {
		backoff *= 2
	}
	backoff = min(backoff, t.cfg.Retry.Max)
	seg.lastErr, seg.lastErrAt, seg.retryAt = err, now, now.Add(backoff)
	failures := seg.failures
	t.mu.Unlock()
	t.m.errors.Inc()
	t.log.Warn("tiering failed; will retry", zap.String("segment", seg.id), zap.Int("failures", failures), zap.Duration("backoff", backoff), zap.Error(err))
}

// seal builds the next chunk of a segment from tier 1, uploads it, commits
// it and truncates tier 1.
func (t *Tierer) seal(ctx context.Context, ss *streamState, seg *segState) error {
	first := seg.rec.Tiered
	off := first
	bp, _ := t.bufs.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	defer t.bufs.Put(bp)
	buf := (*bp)[:0]
	var c ChunkRecord
	var nextOldest time.Time
build:
	for off < seg.scanned {
		res, err := t.store.Read(ctx, core.ReadRequest{Tenant: ss.tenant, Stream: ss.name, Segment: seg.id, From: off, MaxEvents: 10000})
		if err != nil {
			return fmt.Errorf("read tier 1 at offset %d: %w", off, err)
		}
		if len(res.Events) == 0 {
			return fmt.Errorf("read tier 1 at offset %d: no events below the scanned offset %d", off, seg.scanned)
		}
		for _, e := range res.Events {
			if e.Offset >= seg.scanned {
				break build
			}
			if len(buf) > 0 && int64(len(buf))+encodedSize(ss.enc, len(e.Data)) > t.cfg.MaxChunkBytes {
				nextOldest = e.Time
				break build
			}
			if c.Events == 0 {
				c.FirstTime = e.Time
			}
			c.LastTime = e.Time
			c.Events++
			buf = core.Encode(ss.enc, buf, e.Data)
			off = e.Offset + 1
		}
	}
	*bp = buf
	if c.Events == 0 {
		return nil
	}
	c.Segment, c.FirstOffset, c.LastOffset = seg.id, first, off-1
	c.Name = ChunkName(ss.enc, c.FirstOffset, c.LastOffset)
	c.Key = PrefixedObjectKey(ss.prefix, ss.tenant, ss.name, seg.id, c.Name)
	c.Size = int64(len(buf))

	// The checksums are needed only for the catalog commit: computing them
	// while the upload writes and syncs keeps the other core busy instead
	// of adding their time to every chunk's.
	summed := make(chan struct{})
	go func() {
		defer close(summed)
		sum := md5.Sum(buf)
		c.MD5, c.CRC32C = hex.EncodeToString(sum[:]), crc32.Checksum(buf, castagnoli)
	}()
	start := time.Now()
	err := t.upload(ctx, ss, seg, c.Key, buf)
	<-summed
	if err != nil {
		return err
	}
	t.m.uploadSeconds.Observe(time.Since(start).Seconds())
	if t.hooks.beforeCommit != nil {
		if err := t.hooks.beforeCommit(); err != nil {
			return err
		}
	}
	now := t.now()
	c.Sealed = now.UTC()
	rec := SegmentRecord{Tiered: off, First: seg.rec.First, Chunks: seg.rec.Chunks + 1, Bytes: seg.rec.Bytes + c.Size, LastSeal: c.Sealed}
	cv, _ := json.Marshal(c)
	sv, _ := json.Marshal(rec)
	err = t.cat.Commit(map[string][]byte{
		chunkKey(ss.tenant, ss.name, seg.id, first): cv,
		segmentKey(ss.tenant, ss.name, seg.id):      sv,
	}, []string{intentKey(ss.tenant, ss.name, seg.id)})
	if err != nil {
		return fmt.Errorf("commit chunk %s: %w", c.Key, err)
	}
	ss.manifestDirty = true
	ss.chunkChanges++
	t.mu.Lock()
	seg.rec = rec
	seg.pending -= c.Size
	seg.oldest = nextOldest
	seg.intent = ""
	seg.failures, seg.lastErr, seg.retryAt = 0, nil, time.Time{}
	t.mu.Unlock()
	t.m.chunks.Inc()
	t.m.bytes.Add(float64(c.Size))
	t.m.visibility.Observe(now.Sub(c.FirstTime).Seconds())

	// Truncation can only drop what is now safe in tier 2; if it fails,
	// the next chunk's truncation (or the next start) catches up.
	if err := t.store.TruncateBefore(ss.tenant, ss.name, seg.id, off); err != nil && !errors.Is(err, core.ErrNotFound) {
		t.log.Warn("truncate tier 1 after tiering", zap.String("stream", ss.tenant+"/"+ss.name), zap.String("segment", seg.id), zap.Error(err))
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// upload writes one chunk with its intent committed first.
func (t *Tierer) upload(ctx context.Context, ss *streamState, seg *segState, key string, data []byte) error {
	if seg.intent != "" && seg.intent != key {
		// An earlier attempt at a different range may have left an
		// object behind; it must go before its intent is forgotten.
		if err := t.be.Delete(ctx, seg.intent); err != nil {
			return fmt.Errorf("delete interrupted upload %s: %w", seg.intent, err)
		}
	}
	if seg.intent != key {
		v, _ := json.Marshal(uploadIntent{Key: key})
		if err := t.cat.Set(intentKey(ss.tenant, ss.name, seg.id), v); err != nil {
			return err
		}
		t.mu.Lock()
		seg.intent = key
		t.mu.Unlock()
	}
	w, err := t.be.Create(ctx, key)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	if _, err := w.Write(data); err != nil {
		w.Abort()
		return fmt.Errorf("upload %s: %w", key, err)
	}
	if err := w.Finish(); err != nil {
		w.Abort()
		return fmt.Errorf("upload %s: %w", key, err)
	}
	return nil
}
