package core

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/record"
	"github.com/silt-io/silt/core/wal"
)

// SharedWAL makes the write-ahead log the durable copy of every event not
// yet in tier 2 (cluster durability, docs/cluster.md): the log's backend
// (Options.WAL) is on shared storage and outlives this node's disk, and
//
//   - a checkpoint keeps every frame whose events tier 2 does not hold
//     yet (not only those the local segment files have not synced), so
//     that another node can rebuild the untiered tail from the log alone;
//   - the local segment files are a cache: they are removed at start and
//     rebuilt from the log, so that files left by an earlier life of this
//     directory never disagree with what another node appended meanwhile;
//   - a segment with no local files starts at the offset tier 2 holds up
//     to (TieredEnd), so that its offsets continue;
//   - the logs of other nodes (Adopt) are replayed with this node's own
//     and copied into it before the store serves, then dropped.
type SharedWAL struct {
	// TieredEnd returns the offset after the last event tier 2 holds of
	// a segment (0 when none): where a segment rebuilt without frames
	// in the log starts.
	TieredEnd func(ref SegmentRef) (uint64, error)
	// Adopt takes over the logs of nodes that are gone (each one fenced:
	// its old writer can have nothing acknowledged any more). Called once
	// at open, after this node's own log is taken over.
	Adopt func(maxFrameBytes int, log *zap.Logger) ([]AdoptedLog, error)
	// FlushInterval and FlushBytes are the log's wal.Options.Linger and
	// LingerBytes: a round waits up to FlushInterval for appends, less
	// once it holds FlushBytes.
	FlushInterval time.Duration
	FlushBytes    int64
}

// AdoptedLog is another node's log taken over at start. Once its frames
// are in this node's log, it is emptied: a checkpoint at its end, and its
// objects below it deleted. A log whose emptying failed is adopted again
// at the next start; its frames are then skipped as duplicates by offset.
type AdoptedLog struct {
	// Name identifies it in logs, e.g. the node id.
	Name    string
	Backend wal.Backend
}

// markEvery is the spacing, in log bytes, of the positions kept per
// segment for tiering-bounded checkpoints, and maxMarks bounds them: the
// checkpoint may keep a little more of the log than it must, never less.
const (
	markEvery = 256 << 10
	maxMarks  = 64
)

// tierMark says: the segment's frames from log position pos on hold
// offsets from first on.
type tierMark struct{ pos, first uint64 }

// sharedState is the part of walState that only a shared log has.
type sharedState struct {
	mu sync.Mutex
	// marks, per segment with events not yet in tier 2, ascending; the
	// first one's offset is at or below what tier 2 holds of it.
	marks map[SegmentRef][]tierMark
	// end is, per segment with marks, the offset after its last logged
	// event: once tier 2 holds it, the log need keep nothing of it.
	end map[SegmentRef]uint64
}

func newSharedState() *sharedState {
	return &sharedState{marks: map[SegmentRef][]tierMark{}, end: map[SegmentRef]uint64{}}
}

// logged notes a frame of ref's at pos holding offsets [first, next).
func (sh *sharedState) logged(ref SegmentRef, pos, first, next uint64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.end[ref] = max(sh.end[ref], next)
	ms := sh.marks[ref]
	// A frame below the last mark's offset (a copy of an adopted log's
	// older frame) adds no mark: marks must ascend in offset too, or
	// tiered would drop one whose later frames tier 2 lacks. The mark
	// before covers it, from further back.
	if n := len(ms); n > 0 && (pos-ms[n-1].pos < markEvery || first <= ms[n-1].first) {
		return
	}
	ms = append(ms, tierMark{pos: pos, first: first})
	if len(ms) > maxMarks {
		// Keep the first and every other one after it: what a dropped
		// mark covered, the one before it covers too (from further back).
		kept := ms[:1]
		for i := 2; i < len(ms); i += 2 {
			kept = append(kept, ms[i])
		}
		ms = kept
	}
	sh.marks[ref] = ms
}

// tiered drops the marks that only cover offsets below offset (tier 2
// holds them); all of them once the segment's logged end is in tier 2.
func (sh *sharedState) tiered(ref SegmentRef, offset uint64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if offset >= sh.end[ref] {
		delete(sh.marks, ref)
		delete(sh.end, ref)
		return
	}
	ms := sh.marks[ref]
	i := 0
	for i+1 < len(ms) && ms[i+1].first <= offset {
		i++
	}
	if i > 0 {
		sh.marks[ref] = append([]tierMark(nil), ms[i:]...)
	}
}

// forget drops a segment's marks (its stream was deleted).
func (sh *sharedState) forget(ref SegmentRef) {
	sh.mu.Lock()
	delete(sh.marks, ref)
	delete(sh.end, ref)
	sh.mu.Unlock()
}

// refs returns the segments the log keeps frames of.
func (sh *sharedState) refs() []SegmentRef {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	out := make([]SegmentRef, 0, len(sh.marks))
	for ref := range sh.marks {
		out = append(out, ref)
	}
	return out
}

// refresh asks tier 2 (its catalog records) how far it holds each segment
// the log keeps frames of, before a checkpoint: tiering removes tier-1
// files only now and then while it catches up, so its calls to
// TruncateBefore alone would let the log grow under steady appends.
func (sh *sharedState) refresh(tieredEnd func(SegmentRef) (uint64, error)) {
	if tieredEnd == nil {
		return
	}
	for _, ref := range sh.refs() {
		if t, err := tieredEnd(ref); err == nil && t > 0 {
			sh.tiered(ref, t)
		}
	}
}

// oldest is the lowest position the log must keep for tier 2's sake.
func (sh *sharedState) oldest(limit uint64) uint64 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, ms := range sh.marks {
		limit = min(limit, ms[0].pos)
	}
	return limit
}

// wipeLogs removes the local segment files: with a shared log they are a
// cache, rebuilt from the log and tier 2. The directory is renamed first,
// so that a crash in the middle of the removal leaves nothing that looks
// like segment files.
func (s *Store) wipeLogs() error {
	names, err := s.fs.List(s.cfg.Dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", s.cfg.Dir, err)
	}
	if slices.Contains(names, "logs") {
		old := "logs.old-" + strconv.FormatInt(time.Now().UnixNano(), 10)
		if err := s.fs.Rename(s.logsDir(), filepath.Join(s.cfg.Dir, old)); err != nil {
			return fmt.Errorf("move aside the local segment files: %w", err)
		}
		if err := s.fs.SyncDir(s.cfg.Dir); err != nil {
			return err
		}
		names = append(names, old)
	}
	// This start's, and any an interrupted start left.
	for _, n := range names {
		if strings.HasPrefix(n, "logs.old-") {
			if err := s.fs.RemoveAll(filepath.Join(s.cfg.Dir, n)); err != nil {
				return fmt.Errorf("remove old local segment files %s: %w", n, err)
			}
		}
	}
	return nil
}

// readAdopted recovers every adopted log from its checkpoint on, passing
// each frame to add, and returns them all, to be copied.
func readAdopted(logs []AdoptedLog, zl *zap.Logger, add func(wal.SegmentFrame)) ([]wal.SegmentFrame, []uint64, error) {
	var out []wal.SegmentFrame
	ends := make([]uint64, len(logs))
	for i, a := range logs {
		data, err := a.Backend.LoadCheckpoint()
		if err != nil {
			return nil, nil, fmt.Errorf("adopted write-ahead log %s: %w", a.Name, err)
		}
		var cp checkpointRecord
		if data != nil {
			if err := json.Unmarshal(data, &cp); err != nil || cp.Version != 1 {
				return nil, nil, fmt.Errorf("adopted write-ahead log %s: checkpoint undecodable: %v: %w", a.Name, err, wal.ErrCorrupt)
			}
		}
		rec, err := a.Backend.Recover(cp.From, func(pos uint64, body []byte) error {
			f, err := wal.DecodeSegment(body)
			if err != nil {
				return fmt.Errorf("frame at %d: %w", pos, err)
			}
			f.Records = append([]byte(nil), f.Records...)
			add(f)
			out = append(out, f)
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("recover adopted write-ahead log %s: %w", a.Name, err)
		}
		ends[i] = rec.End
		zl.Info("adopted the write-ahead log of a node that is gone", zap.String("log", a.Name),
			zap.Uint64("from", rec.Start), zap.Uint64("to", rec.End), zap.Int("frames", rec.Frames))
	}
	return out, ends, nil
}

// emptyAdopted empties an adopted log whose frames are in this node's
// log: a checkpoint at its end (nothing left to replay, and a later
// writer of that log continues its positions and epochs), then its
// objects below the end deleted.
func emptyAdopted(a AdoptedLog, end uint64) error {
	data, err := json.Marshal(checkpointRecord{Version: 1, From: end, Untiered: []SegmentRef{}})
	if err != nil {
		return err
	}
	if err := a.Backend.SaveCheckpoint(data); err != nil {
		return err
	}
	return a.Backend.TruncateBefore(end)
}

// sortFrames orders each segment's frames by offset: frames of several
// logs (another node's before this one's, or a copy of them) then replay
// in order, and those already applied are skipped as duplicates.
func sortFrames(frames map[string][]wal.SegmentFrame) {
	for _, fs := range frames {
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].First < fs[j].First })
	}
}

// copyWriter logs one adopted frame again in this node's log.
type copyWriter struct {
	body [][]byte
	done func(pos uint64, err error)
}

func (c *copyWriter) Seal() [][]byte             { return c.body }
func (c *copyWriter) Done(pos uint64, err error) { c.done(pos, err) }

// copyBatchBytes bounds one round of copied frames (one object).
const copyBatchBytes = 16 << 20

// copyFrames writes the adopted frames of live segments into this node's
// log, so that they are kept (until tiered) by this log alone, and notes
// their positions for the tiering-bounded checkpoint.
func (w *walState) copyFrames(frames []wal.SegmentFrame, refOf func(name string) (SegmentRef, bool)) error {
	i := 0
	for i < len(frames) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		size := 0
		var ws []*copyWriter
		for ; i < len(frames) && (size == 0 || size < copyBatchBytes); i++ {
			f := frames[i]
			ref, ok := refOf(f.Name)
			if !ok {
				continue
			}
			size += len(f.Records)
			wg.Add(1)
			ws = append(ws, &copyWriter{
				body: [][]byte{wal.AppendSegmentHeader(nil, f.Name, f.First), f.Records},
				done: func(pos uint64, err error) {
					defer wg.Done()
					if err != nil {
						mu.Lock()
						firstErr = cmpErr(firstErr, err)
						mu.Unlock()
						return
					}
					w.shared.logged(ref, pos, f.First, f.First+countRecordEvents(f.Records))
				},
			})
		}
		lead := false
		for _, cw := range ws {
			l, err := w.log.Enqueue(cw)
			if err != nil {
				wg.Done()
				firstErr = cmpErr(firstErr, err)
				continue
			}
			lead = lead || l
		}
		if lead {
			w.log.Lead()
		}
		wg.Wait()
		if firstErr != nil {
			return fmt.Errorf("copy adopted frames into this node's write-ahead log: %w", firstErr)
		}
	}
	return nil
}

func cmpErr(have, err error) error {
	if have != nil {
		return have
	}
	return err
}

// segmentBase is where a segment about to be opened starts if it has no
// local files: with a shared log, the end of what tier 2 holds of it (a
// node rebuilding the segments of another continues their offsets);
// otherwise 0.
func (s *Store) segmentBase(ref SegmentRef, dir string) (uint64, error) {
	if s.sharedWAL == nil || s.sharedWAL.TieredEnd == nil {
		return 0, nil
	}
	names, err := s.fs.List(filepath.Dir(dir))
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", filepath.Dir(dir), err)
	}
	if slices.Contains(names, filepath.Base(dir)) {
		return 0, nil
	}
	base, err := s.sharedWAL.TieredEnd(ref)
	if err != nil {
		return 0, fmt.Errorf("%w: the tier-2 end of segment %s of %s/%s: %w", ErrUnavailable, ref.Segment, ref.Tenant, ref.Stream, err)
	}
	return base, nil
}

// countRecordEvents counts the events of a frame's records.
func countRecordEvents(recs []byte) uint64 {
	n := uint64(0)
	rd := record.NewMappedReader(recs, 0, 0, int64(len(recs)), len(recs)+1)
	for {
		r, err := rd.Next()
		if err != nil {
			return n
		}
		n += uint64(len(r.Events))
	}
}
