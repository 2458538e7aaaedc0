package tiering

import (
	"context"
	"encoding/json"
	"fmt"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
)

// maxRetentionDeletesPerPass bounds one scan's deletions per stream, so
// that a stream with a long expired history does not hold up the others.
const maxRetentionDeletesPerPass = 256

// retain applies a stream's retention after its segments were scanned.
// Only committed chunks have records, so only fully tiered chunks are
// ever deleted; tier 1 is not touched.
//
//   - MaxAge: in each segment, chunks are deleted from the oldest while
//     their newest event (LastTime) is older than now − MaxAge. The first
//     chunk still young enough stops the segment, so what is kept is
//     always a contiguous range ending at the tiered offset.
//   - MaxBytes: while the stream's tiered bytes, summed over its
//     segments, exceed MaxBytes, the chunk whose newest event is oldest
//     among the segments' first chunks is deleted.
//
// It reports whether work is left for a later pass: deletions that
// failed, or more than one pass may delete.
func (t *Tierer) retain(ctx context.Context, ss *streamState, r core.Retention) (left bool) {
	if !t.everTiered(ss) {
		// No chunk was ever sealed: nothing to expire and no deletion
		// pending, and no catalog scan for each new stream.
		return false
	}
	// Deletions a failing backend left pending are retried first.
	if _, err := t.finishDeletes(ctx, keyDelete+ss.tenant+"/"+ss.name+"/"); err != nil {
		t.log.Warn("retention: delete tier-2 objects; retried at the next scan", zap.String("stream", ss.tenant+"/"+ss.name), zap.Error(err))
		left = true
	}
	if r.MaxAge <= 0 && r.MaxBytes <= 0 {
		return left
	}
	deleted := 0
	defer func() {
		left = left || deleted >= maxRetentionDeletesPerPass || t.deletesLeft(ss)
	}()
	heads := make([]*ChunkRecord, len(ss.segs))
	head := func(i int) (*ChunkRecord, error) {
		if heads[i] == nil {
			c, ok, err := firstChunk(t.cat, ss.tenant, ss.name, ss.segs[i].id)
			if err != nil || !ok {
				return nil, err
			}
			heads[i] = &c
		}
		return heads[i], nil
	}
	drop := func(i int, c *ChunkRecord) bool {
		if err := t.dropChunk(ctx, ss, ss.segs[i], *c); err != nil {
			t.m.errors.Inc()
			t.log.Warn("retention: drop chunk; retried at the next scan", zap.String("chunk", c.Key), zap.Error(err))
			left = true
			return false
		}
		heads[i] = nil
		deleted++
		return true
	}

	if r.MaxAge > 0 {
		cutoff := t.now().Add(-r.MaxAge)
		for i := range ss.segs {
			for deleted < maxRetentionDeletesPerPass && ctx.Err() == nil {
				c, err := head(i)
				if err != nil {
					t.log.Warn("retention: read catalog", zap.String("segment", ss.segs[i].id), zap.Error(err))
					break
				}
				if c == nil || !c.LastTime.Before(cutoff) || !drop(i, c) {
					break
				}
			}
		}
	}
	if r.MaxBytes > 0 {
		for deleted < maxRetentionDeletesPerPass && ctx.Err() == nil {
			var total int64
			for _, seg := range ss.segs {
				total += seg.rec.Bytes
			}
			if total <= r.MaxBytes {
				break
			}
			oldest := -1
			for i := range ss.segs {
				c, err := head(i)
				if err != nil {
					t.log.Warn("retention: read catalog", zap.String("segment", ss.segs[i].id), zap.Error(err))
					return true
				}
				if c != nil && (oldest < 0 || c.LastTime.Before(heads[oldest].LastTime)) {
					oldest = i
				}
			}
			if oldest < 0 || !drop(oldest, heads[oldest]) {
				break
			}
		}
	}
	return left
}

// everTiered reports whether any segment of the stream ever had a chunk
// sealed (its tiered offset never goes back).
func (t *Tierer) everTiered(ss *streamState) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, seg := range ss.segs {
		if seg.rec.Tiered > 0 {
			return true
		}
	}
	return false
}

// deletesLeft reports whether deletions of the stream's objects wait for
// a retry (their delete intents are still in the catalog).
func (t *Tierer) deletesLeft(ss *streamState) bool {
	found := false
	err := t.cat.Scan([]byte(keyDelete+ss.tenant+"/"+ss.name+"/"), nil, func(_, _ []byte) error {
		found = true
		return catalog.ErrStop
	})
	return found || err != nil
}

// dropChunk deletes one chunk: the record (with the segment's counters and
// first offset, and a delete intent) in one synced batch, then the object.
// A failed object deletion leaves the intent, retried later; the chunk is
// invisible either way.
func (t *Tierer) dropChunk(ctx context.Context, ss *streamState, seg *segState, c ChunkRecord) error {
	rec := seg.rec
	rec.Chunks--
	rec.Bytes -= c.Size
	rec.First = c.LastOffset + 1
	sv, _ := json.Marshal(rec)
	dv, _ := json.Marshal(deleteIntent{Key: c.Key})
	dk := deleteKey(ss.tenant, ss.name, seg.id, c.FirstOffset)
	err := t.cat.Commit(map[string][]byte{
		segmentKey(ss.tenant, ss.name, seg.id): sv,
		dk:                                     dv,
	}, []string{chunkKey(ss.tenant, ss.name, seg.id, c.FirstOffset)})
	if err != nil {
		return fmt.Errorf("commit retention of %s: %w", c.Key, err)
	}
	ss.manifestDirty = true
	ss.chunkChanges++
	t.mu.Lock()
	seg.rec = rec
	t.mu.Unlock()
	// The segment's oldest event moved up: a group's cached lag counts
	// from it.
	t.store.Tier2Changed(ss.tenant, ss.name)
	t.m.retained.Inc()
	if t.hooks.beforeRetentionDelete != nil {
		if err := t.hooks.beforeRetentionDelete(); err != nil {
			return nil // as a crash: the intent stays
		}
	}
	if err := t.be.Delete(ctx, c.Key); err != nil {
		t.log.Warn("retention: delete tier-2 object; retried at the next scan", zap.String("key", c.Key), zap.Error(err))
		return nil
	}
	return t.cat.Delete(dk)
}

// finishDeletes deletes the objects of the delete intents under prefix
// and then the intents, returning how many were finished. A backend
// failure stops it; the rest are retried later.
func (t *Tierer) finishDeletes(ctx context.Context, prefix string) (int, error) {
	var done []string
	var failed error
	err := t.cat.Scan([]byte(prefix), nil, func(k, v []byte) error {
		var in deleteIntent
		if err := json.Unmarshal(v, &in); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		if err := t.be.Delete(ctx, in.Key); err != nil {
			failed = fmt.Errorf("delete %s: %w", in.Key, err)
			return catalog.ErrStop
		}
		done = append(done, string(k))
		return nil
	})
	if err == nil && len(done) > 0 {
		err = t.cat.DeleteKeys(done)
	}
	if err == nil {
		err = failed
	}
	return len(done), err
}

// firstChunk returns a segment's oldest remaining chunk.
func firstChunk(cat *catalog.Catalog, tenant, stream, seg string) (ChunkRecord, bool, error) {
	var r ChunkRecord
	found := false
	err := cat.Scan([]byte(chunkPrefix(tenant, stream, seg)), nil, func(k, v []byte) error {
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		found = true
		return catalog.ErrStop
	})
	return r, found, err
}
