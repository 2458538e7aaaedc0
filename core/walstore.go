package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/segment"
	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/core/wal"
	"github.com/silt-io/silt/internal/connlimit"
)

// WALConfig configures the node's write-ahead log (docs/format/wal.md).
type WALConfig struct {
	FileBytes int64 `koanf:"file_bytes" help:"roll the write-ahead log to a new file at this size, in bytes"`
	// CheckpointBytes and CheckpointInterval bound the log, and so the
	// replay at start: a checkpoint syncs the segment files that hold
	// the oldest logged data, then drops the log before it.
	CheckpointBytes    int64         `koanf:"checkpoint_bytes" help:"checkpoint once the write-ahead log holds this many bytes since the last checkpoint (what a restart replays at most, about)"`
	CheckpointInterval time.Duration `koanf:"checkpoint_interval" help:"checkpoint at least this often while there are appends"`
}

func defaultWALConfig() WALConfig {
	return WALConfig{FileBytes: 64 << 20, CheckpointBytes: 128 << 20, CheckpointInterval: time.Minute}
}

func (c WALConfig) validate() error {
	if c.FileBytes < 64<<10 {
		return fmt.Errorf("core: wal.file_bytes must be at least 65536")
	}
	if c.CheckpointBytes < c.FileBytes {
		return fmt.Errorf("core: wal.checkpoint_bytes must be at least wal.file_bytes")
	}
	if c.CheckpointInterval < time.Second {
		return fmt.Errorf("core: wal.checkpoint_interval must be at least 1s")
	}
	return nil
}

// openFilesBudget is how many segment files the store keeps open:
// core.max_open_files, or a share of the descriptor limit that the
// connection caps leave (connlimit.SegmentFiles).
func openFilesBudget(cfg Config) int {
	if cfg.MaxOpenFiles > 0 {
		return cfg.MaxOpenFiles
	}
	return connlimit.SegmentFiles(connlimit.Nofile())
}

// walState wires the write-ahead log into the store: it tracks which
// segment files hold data the WAL must keep until they are synced, which
// segments hold data not yet in tier 2, and runs checkpoints.
type walState struct {
	log   *wal.Log
	files *segment.FileCache
	cfg   WALConfig
	zl    *zap.Logger
	fs    vfs.FS
	// logsDir is where segment files live (for a filesystem-wide sync).
	logsDir string

	mu struct {
		sync.Mutex
		// dirty maps a segment file written since its last sync to the
		// WAL position of the oldest frame it has not synced.
		dirty map[string]uint64
		// untiered holds the segments appended to since tiering last
		// took all of their data; checkpoints record it.
		untiered map[SegmentRef]struct{}
		// dirs are directories with entries not yet synced (a fresh
		// segment's directories and files, a rolled file): the WAL
		// replays what went into them, so a checkpoint syncs them
		// before it lets the WAL drop those records.
		dirs  map[string]struct{}
		since uint64 // replay start of the last checkpoint
	}
	ckMu sync.Mutex // one checkpoint or release at a time

	stop chan struct{}
	done chan struct{}
	// replayedFrames is how many frames the last open replayed.
	replayedFrames int
	// shared is set when the log is on shared storage (SharedWAL), and
	// tieredEnd is SharedWAL.TieredEnd.
	shared    *sharedState
	tieredEnd func(SegmentRef) (uint64, error)
	// fresh is set when the WAL had no checkpoint: a first start, or a
	// data directory from a release without a WAL, whose segments the
	// WAL cannot tell apart (any may hold untiered events).
	fresh bool
}

// checkpointRecord is the WAL's checkpoint (docs/format/wal.md).
type checkpointRecord struct {
	Version int `json:"version"`
	// From is where replay starts: every frame below it is in a synced
	// segment file.
	From     uint64       `json:"from"`
	Untiered []SegmentRef `json:"untiered"`
}

// walName is a segment's name in the WAL: its directory below logs/.
func walName(r streamRecord, seg string) string {
	return fmt.Sprintf("%s/%s@%d/%s", r.Tenant, r.Name, r.Incarnation, seg)
}

// openWAL recovers the write-ahead log before any segment is opened:
// every segment with frames since the checkpoint has its files brought up
// to them and synced, then a checkpoint at the log's end drops what was
// replayed. The segments of the checkpoint and of the replay are marked
// in the Activity set. The cost is in proportion to the log since the
// last checkpoint, not to the number of streams.
func (s *Store) openWAL() error {
	w := &walState{cfg: s.cfg.WAL, zl: s.log.Named("wal"), fs: s.fs, logsDir: s.logsDir(), stop: make(chan struct{}), done: make(chan struct{})}
	w.mu.dirty = map[string]uint64{}
	w.mu.untiered = map[SegmentRef]struct{}{}
	w.mu.dirs = map[string]struct{}{}
	w.files = segment.NewFileCache(s.fs, openFilesBudget(s.cfg))
	s.log.Info("segment file descriptor budget", zap.Int("max_open_files", w.files.Max()))
	maxFrame := 2 * (s.cfg.Limits.MaxBatchBytes + 64<<10) * 64
	var be wal.Backend
	var err error
	if s.sharedWAL != nil {
		w.shared, w.tieredEnd = newSharedState(), s.sharedWAL.TieredEnd
		if err := s.wipeLogs(); err != nil {
			return err
		}
	}
	if s.openWALBackend != nil {
		be, err = s.openWALBackend(maxFrame, w.zl)
	} else {
		be, err = wal.OpenFiles(wal.FilesOptions{
			FS: s.fs, Dir: filepath.Join(s.cfg.Dir, "wal"), FileBytes: s.cfg.WAL.FileBytes,
			MaxFrameBytes: maxFrame, Log: w.zl,
		})
	}
	if err != nil {
		return err
	}
	data, err := be.LoadCheckpoint()
	if err != nil {
		return err
	}
	var cp checkpointRecord
	if data != nil {
		if err := json.Unmarshal(data, &cp); err != nil || cp.Version != 1 {
			return fmt.Errorf("wal checkpoint: undecodable (version %d): %v: %w", cp.Version, err, wal.ErrCorrupt)
		}
	}
	frames := map[string][]wal.SegmentFrame{}
	var order []string
	add := func(f wal.SegmentFrame) {
		if _, ok := frames[f.Name]; !ok {
			order = append(order, f.Name)
		}
		frames[f.Name] = append(frames[f.Name], f)
	}
	// ownMarks is, per segment, its first frame in this node's log since
	// the checkpoint: with a shared log, what the log must keep for it.
	ownMarks := map[string]tierMark{}
	rec, err := be.Recover(cp.From, func(pos uint64, body []byte) error {
		s.progress.frame()
		f, err := wal.DecodeSegment(body)
		if err != nil {
			return fmt.Errorf("wal frame at %d: %w", pos, err)
		}
		f.Records = append([]byte(nil), f.Records...)
		if _, ok := ownMarks[f.Name]; !ok {
			ownMarks[f.Name] = tierMark{pos: pos, first: f.First}
		}
		add(f)
		return nil
	})
	if err != nil {
		be.Close()
		return fmt.Errorf("recover write-ahead log: %w", err)
	}
	var adopted []AdoptedLog
	var copies []wal.SegmentFrame
	var adoptedEnds []uint64
	if w.shared != nil && s.sharedWAL.Adopt != nil {
		if adopted, err = s.sharedWAL.Adopt(maxFrame, w.zl); err == nil {
			copies, adoptedEnds, err = readAdopted(adopted, w.zl, add)
		}
		if err != nil {
			be.Close()
			return err
		}
		sortFrames(frames)
	}
	streams := map[string]*streamRecord{}
	for _, ref := range cp.Untiered {
		// A segment of a stream deleted since is dropped here, so that the
		// set does not keep it for ever.
		_, _, ok, err := s.walSegment(walName(streamRecord{Stream: Stream{Tenant: ref.Tenant, Name: ref.Stream}, Incarnation: ref.Incarnation}, ref.Segment), streams)
		if err != nil {
			be.Close()
			return err
		}
		if ok {
			w.mu.untiered[ref] = struct{}{}
		}
	}
	replayed := 0
	for _, name := range order {
		ref, r, ok, err := s.walSegment(name, streams)
		if err != nil {
			be.Close()
			return err
		}
		if !ok {
			continue // its stream was deleted after the append
		}
		if m, ok := ownMarks[name]; ok && w.shared != nil {
			fs := frames[name]
			last := fs[len(fs)-1]
			w.shared.logged(ref, m.pos, m.first, last.First+countRecordEvents(last.Records))
		}
		if err := s.replaySegment(w.files, r, ref.Segment, frames[name], w.shared != nil); err != nil {
			be.Close()
			return fmt.Errorf("replay write-ahead log into %s: %w", name, err)
		}
		w.mu.untiered[ref] = struct{}{}
		replayed++
	}
	w.replayedFrames = rec.Frames
	w.fresh = data == nil
	wopts := wal.Options{Backend: be, Log: w.zl}
	if s.sharedWAL != nil {
		wopts.Linger, wopts.LingerBytes = s.sharedWAL.FlushInterval, s.sharedWAL.FlushBytes
	}
	w.log = wal.Open(wopts, rec.End)
	w.mu.since = rec.Start
	if rec.Frames > 0 || rec.TornBytes > 0 {
		w.zl.Info("replayed the write-ahead log", zap.Uint64("from", rec.Start), zap.Uint64("to", rec.End),
			zap.Int("frames", rec.Frames), zap.Int("segments", replayed), zap.Int64("torn_bytes", rec.TornBytes))
	}
	if len(copies) > 0 {
		// Each segment's frames in offset order, whichever log they came
		// from, so that its first copy is its oldest.
		sort.SliceStable(copies, func(i, j int) bool {
			if copies[i].Name != copies[j].Name {
				return copies[i].Name < copies[j].Name
			}
			return copies[i].First < copies[j].First
		})
		err := w.copyFrames(copies, func(name string) (SegmentRef, bool) {
			ref, _, ok, err := s.walSegment(name, streams)
			return ref, ok && err == nil
		})
		if err != nil {
			w.log.Close()
			return err
		}
	}
	// The replayed segments are synced: a checkpoint at the end lets the
	// log drop what was replayed (with a shared log, what tier 2 holds).
	if err := w.checkpoint(w.log.End()); err != nil {
		w.log.Close()
		return err
	}
	for i, a := range adopted {
		// Its frames are in this node's log now, under its checkpoint.
		if err := emptyAdopted(a, adoptedEnds[i]); err != nil {
			w.zl.Warn("could not empty an adopted write-ahead log; it is adopted again at the next start", zap.String("log", a.Name), zap.Error(err))
		}
	}
	for ref := range w.mu.untiered {
		s.activity.Mark(ref)
	}
	s.wal = w
	go w.run()
	return nil
}

// walSegment resolves a WAL segment name to its stream's catalog record;
// ok is false when that stream (that incarnation) no longer exists.
func (s *Store) walSegment(name string, cache map[string]*streamRecord) (SegmentRef, streamRecord, bool, error) {
	parts := strings.Split(name, "/")
	at := -1
	if len(parts) == 3 {
		at = strings.LastIndexByte(parts[1], '@')
	}
	if at < 0 {
		return SegmentRef{}, streamRecord{}, false, fmt.Errorf("wal: bad segment name %q: %w", name, wal.ErrCorrupt)
	}
	tenant, stream, seg := parts[0], parts[1][:at], parts[2]
	inc, err := strconv.ParseInt(parts[1][at+1:], 10, 64)
	if err != nil {
		return SegmentRef{}, streamRecord{}, false, fmt.Errorf("wal: bad segment name %q: %w", name, wal.ErrCorrupt)
	}
	key := tenant + "/" + stream
	r, ok := cache[key]
	if !ok {
		v, found, err := s.cat.Get([]byte(keyStream + key))
		if err != nil {
			return SegmentRef{}, streamRecord{}, false, err
		}
		if found {
			r = new(streamRecord)
			if err := json.Unmarshal(v, r); err != nil {
				return SegmentRef{}, streamRecord{}, false, fmt.Errorf("decode stream record: %w", err)
			}
		}
		cache[key] = r
	}
	if r == nil || r.Incarnation != inc {
		return SegmentRef{}, streamRecord{}, false, nil
	}
	for _, sg := range r.Segments {
		if sg.ID == seg {
			return SegmentRef{Tenant: tenant, Stream: stream, Segment: seg, Incarnation: r.Created.UnixNano()}, *r, true, nil
		}
	}
	return SegmentRef{}, streamRecord{}, false, nil
}

// replaySegment brings one segment's files up to its frames and syncs
// them.
//
// With a shared log the segment's local files were removed at start: it
// is rebuilt from its first frame on, the events before that being in tier
// 2 (the log keeps every frame tier 2 lacks).
func (s *Store) replaySegment(files *segment.FileCache, r streamRecord, seg string, frames []wal.SegmentFrame, shared bool) error {
	var base uint64
	if shared && len(frames) > 0 {
		base = frames[0].First
	}
	l, err := segment.Open(segment.Options{
		Base: base,
		FS:   s.fs, Files: files, Dir: filepath.Join(s.streamDir(r), seg),
		FileBytes: s.cfg.SegmentFileBytes, MaxRecordBytes: s.cfg.Limits.MaxBatchBytes + 64<<10,
		WriterRetention: writerRetention, Log: s.log.With(zap.String("tenant", r.Tenant), zap.String("stream", r.Name), zap.String("segment", seg)),
	})
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.Replay(frames); err != nil {
		return err
	}
	return l.Sync()
}

// segmentOptions adds the WAL's part to a segment's options.
func (w *walState) segmentOptions(o segment.Options, r streamRecord, seg string, ref SegmentRef) segment.Options {
	o.Files = w.files
	o.WAL = w.log
	o.Name = walName(r, seg)
	o.OnWrite = w.onWrite
	o.DeferDirSync = w.deferDirs
	if w.shared != nil {
		o.OnLogged = func(pos, first, next uint64) { w.shared.logged(ref, pos, first, next) }
	}
	commit := o.OnCommit
	o.OnCommit = func() {
		w.mu.Lock()
		w.mu.untiered[ref] = struct{}{}
		w.mu.Unlock()
		if commit != nil {
			commit()
		}
	}
	return o
}

func (w *walState) onWrite(path string, pos uint64) {
	w.mu.Lock()
	if cur, ok := w.mu.dirty[path]; !ok || pos < cur {
		w.mu.dirty[path] = pos
	}
	w.mu.Unlock()
}

// deferDirs records directories whose new entries a checkpoint syncs.
// A segment hands them over before any of its records reaches the WAL,
// so a checkpoint that reads the applied position first and takes the
// set after it holds every directory its records went into.
func (w *walState) deferDirs(dirs []string) {
	w.mu.Lock()
	for _, d := range dirs {
		w.mu.dirs[d] = struct{}{}
	}
	w.mu.Unlock()
}

// run checkpoints every interval, and sooner when the log outgrows
// checkpoint_bytes.
func (w *walState) run() {
	defer close(w.done)
	tick := time.NewTicker(min(time.Second, w.cfg.CheckpointInterval))
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		applied := w.log.Applied()
		w.mu.Lock()
		since := w.mu.since
		w.mu.Unlock()
		if applied == since {
			last = time.Now()
			continue
		}
		var target uint64
		switch {
		case applied-since >= uint64(w.cfg.CheckpointBytes):
			// Sync what holds the older half, so that one checkpoint
			// does not sync every active segment at once.
			target = since + (applied-since)/2
		case time.Since(last) >= w.cfg.CheckpointInterval:
			target = applied
		default:
			continue
		}
		if err := w.checkpoint(target); err != nil {
			w.zl.Warn("write-ahead log checkpoint failed; retried", zap.Error(err))
			continue
		}
		last = time.Now()
	}
}

// checkpoint syncs the segment files holding frames below target, records
// the new replay start and the untiered segments, and drops the log
// before that start.
func (w *walState) checkpoint(target uint64) error {
	w.ckMu.Lock()
	defer w.ckMu.Unlock()
	if w.shared != nil {
		w.shared.refresh(w.tieredEnd)
	}
	applied := w.log.Applied()
	target = min(target, applied)
	w.mu.Lock()
	var paths []string
	var poss []uint64
	for p, pos := range w.mu.dirty {
		if pos < target {
			paths = append(paths, p)
			poss = append(poss, pos)
			delete(w.mu.dirty, p)
		}
	}
	dirs := make([]string, 0, len(w.mu.dirs))
	for d := range w.mu.dirs {
		dirs = append(dirs, d)
	}
	clear(w.mu.dirs)
	w.mu.Unlock()
	// Taken out before the sync: a write after it marks its file dirty
	// again, and is synced by a later checkpoint.
	if err := w.syncFiles(paths, dirs); err != nil {
		for i := range paths {
			w.onWrite(paths[i], poss[i])
		}
		w.deferDirs(dirs)
		return err
	}
	// target may fall inside a frame (run halves the log by bytes); the
	// replay must start at a frame. Every frame below applied not in a
	// dirty file is synced, so the oldest dirty frame, or applied, is the
	// start, at or above target.
	w.mu.Lock()
	from := applied
	for _, pos := range w.mu.dirty {
		from = min(from, pos)
	}
	if w.shared != nil {
		// The log is the only copy of what tier 2 lacks: another node
		// rebuilds those segments from it.
		from = w.shared.oldest(from)
	}
	cp := checkpointRecord{Version: 1, From: from, Untiered: make([]SegmentRef, 0, len(w.mu.untiered))}
	for ref := range w.mu.untiered {
		cp.Untiered = append(cp.Untiered, ref)
	}
	w.mu.Unlock()
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	be := w.log.Backend()
	if err := be.SaveCheckpoint(data); err != nil {
		return err
	}
	w.mu.Lock()
	w.mu.since = from
	w.mu.Unlock()
	return be.TruncateBefore(from)
}

// syncManyFiles is the number of files from which a checkpoint syncs the
// whole filesystem at once where it can: with 64 busy segments, syncing
// each file cost a journal commit apiece, competing with the WAL's own
// syncs, and cut the appends' throughput by a fifth.
const syncManyFiles = 8

// syncFiles syncs the files' data and the directories' entries: one
// filesystem-wide sync when there are many (syncfs writes back every
// file and directory of the filesystem), else one sync each.
func (w *walState) syncFiles(paths, dirs []string) error {
	if syncer, ok := w.fs.(vfs.FSSyncer); ok && len(paths)+len(dirs) >= syncManyFiles {
		return w.files.DirOp(1, func() error { return syncer.SyncFS(w.logsDir) })
	}
	for _, p := range paths {
		if err := w.files.Sync(p); err != nil {
			return err
		}
	}
	for _, d := range dirs {
		err := w.files.DirOp(1, func() error { return w.fs.SyncDir(d) })
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // a deleted stream's: nothing to keep
			return err
		}
	}
	return nil
}

// untiered adds a segment to the untiered set that checkpoints record.
func (w *walState) untiered(ref SegmentRef) {
	w.mu.Lock()
	w.mu.untiered[ref] = struct{}{}
	w.mu.Unlock()
}

// tiered is told by TruncateBefore that tiering holds a segment's events
// below offset, next being the segment's end. Once it holds them all, the
// segment leaves the untiered set and its files are synced now, so that
// the WAL need not keep its frames until the next checkpoint.
func (w *walState) tiered(ref SegmentRef, l *segment.Log, offset uint64) error {
	if w.shared != nil {
		w.shared.tiered(ref, offset)
	}
	if offset < l.State().Next {
		return nil
	}
	w.ckMu.Lock()
	defer w.ckMu.Unlock()
	paths := l.FilePaths()
	w.mu.Lock()
	poss := make([]uint64, len(paths))
	for i, p := range paths {
		pos, ok := w.mu.dirty[p]
		if !ok {
			pos = ^uint64(0)
		}
		poss[i] = pos
		delete(w.mu.dirty, p)
	}
	w.mu.Unlock()
	for i, p := range paths {
		if err := w.files.Sync(p); err != nil {
			for j := i; j < len(paths); j++ {
				if poss[j] != ^uint64(0) {
					w.onWrite(paths[j], poss[j])
				}
			}
			return err
		}
	}
	w.mu.Lock()
	if offset >= l.State().Next {
		delete(w.mu.untiered, ref)
	}
	w.mu.Unlock()
	return nil
}

// close stops checkpoints, closes the log (segments are closed already)
// and takes a last checkpoint, so that a clean restart replays nothing.
func (w *walState) close() error {
	close(w.stop)
	<-w.done
	end := w.log.End()
	cerr := w.checkpoint(end)
	if err := w.log.Close(); cerr == nil {
		cerr = err
	}
	return cerr
}
