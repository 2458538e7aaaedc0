package core

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/silt-io/silt/core/vfs"
)

// countFS counts Sync calls on files under logs/ (segment files) and
// under wal/, and can fail the next write to a file whose path contains
// failWrite.
type countFS struct {
	vfs.FS
	segSyncs, walSyncs atomic.Int64
	segCreates         atomic.Int64
	mu                 sync.Mutex
	failWrite          string
}

type countFile struct {
	vfs.File
	fs   *countFS
	path string
}

func (f countFile) Sync() error {
	switch {
	case strings.Contains(f.path, string(filepath.Separator)+"logs"+string(filepath.Separator)):
		f.fs.segSyncs.Add(1)
	case strings.Contains(f.path, string(filepath.Separator)+"wal"+string(filepath.Separator)):
		f.fs.walSyncs.Add(1)
	}
	return f.File.Sync()
}

func (f countFile) WriteVAt(bufs [][]byte, off int64) error {
	f.fs.mu.Lock()
	fail := f.fs.failWrite != "" && strings.Contains(f.path, f.fs.failWrite)
	if fail {
		f.fs.failWrite = ""
	}
	f.fs.mu.Unlock()
	if fail {
		return &os.PathError{Op: "write", Path: f.path, Err: errors.New("injected I/O error")}
	}
	return f.File.WriteVAt(bufs, off)
}

func (c *countFS) wrap(f vfs.File, err error, path string) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return countFile{File: f, fs: c, path: path}, nil
}

func (c *countFS) Create(p string) (vfs.File, error) {
	if strings.Contains(p, string(filepath.Separator)+"logs"+string(filepath.Separator)) {
		c.segCreates.Add(1)
	}
	f, err := c.FS.Create(p)
	return c.wrap(f, err, p)
}
func (c *countFS) OpenRW(p string) (vfs.File, error) {
	f, err := c.FS.OpenRW(p)
	return c.wrap(f, err, p)
}
func (c *countFS) Open(p string) (vfs.File, error) { f, err := c.FS.Open(p); return c.wrap(f, err, p) }

func walTestConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Dir = dir
	cfg.SegmentFileBytes = 4096 // several files per segment
	return cfg
}

func mustOpenFS(t *testing.T, cfg Config, fs vfs.FS) *Store {
	t.Helper()
	s, err := OpenFS(cfg, nil, fs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readAll returns every event of a segment as strings.
func readAll(t *testing.T, s *Store, tenant, stream, seg string) []string {
	t.Helper()
	var out []string
	from := uint64(0)
	for {
		res, err := s.Read(context.Background(), ReadRequest{Tenant: tenant, Stream: stream, Segment: seg, From: from, MaxEvents: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Events) == 0 {
			return out
		}
		for _, e := range res.Events {
			out = append(out, string(e.Data))
		}
		from = res.Next
	}
}

// TestWALCrashKeepsAcknowledged appends from many writers to many
// segments on a CrashFS, "loses power" (unsynced bytes dropped or torn)
// at random moments, and checks after each restart that every
// acknowledged batch is stored exactly once, that a retry of the last one
// is answered as a duplicate, and that segment files were synced on the
// append path only when sealed: the WAL syncs appends.
func TestWALCrashKeepsAcknowledged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	crash := vfs.NewCrashFS()
	cfg := walTestConfig(dir)
	s := mustOpenFS(t, cfg, crash)
	if _, err := s.CreateTenant(ctx, "tnt", nil); err != nil {
		t.Fatal(err)
	}
	const streams, writers = 8, 16
	for i := 0; i < streams; i++ {
		if _, err := s.CreateStream(ctx, "tnt", fmt.Sprintf("s%d", i), StreamConfig{Segments: 2}); err != nil {
			t.Fatal(err)
		}
	}
	// acked[w] is writer w's last acknowledged sequence; where[w] its
	// stream and routing key.
	acked := make([]int, writers)
	for round := 0; round < 8; round++ {
		cfs := &countFS{FS: crash}
		if round > 0 {
			s = mustOpenFS(t, cfg, cfs)
		}
		// Every acknowledged event is there once, in order.
		for w := 0; w < writers; w++ {
			st, key := fmt.Sprintf("s%d", w%streams), fmt.Sprintf("k%d", w)
			res, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: st, RoutingKey: key, WriterID: key, Seq: uint64(acked[w]), Events: [][]byte{[]byte("retry")}})
			if acked[w] > 0 && (err != nil || !res.Duplicate) {
				t.Fatalf("round %d: retry of writer %s's last batch: %+v %v; want a duplicate", round, key, res, err)
			}
		}
		got := map[string][]string{}
		for i := 0; i < streams; i++ {
			for _, seg := range []string{"0", "1"} {
				for _, e := range readAll(t, s, "tnt", fmt.Sprintf("s%d", i), seg) {
					k, _, _ := strings.Cut(e, ":")
					got[k] = append(got[k], e)
				}
			}
		}
		for w := 0; w < writers; w++ {
			key := fmt.Sprintf("k%d", w)
			evs := got[key]
			if len(evs) < acked[w] {
				t.Fatalf("round %d: writer %s: %d events stored, %d acknowledged", round, key, len(evs), acked[w])
			}
			for i, e := range evs {
				if e != fmt.Sprintf("%s:%d", key, i+1) {
					t.Fatalf("round %d: writer %s: event %d is %q (lost, doubled or reordered)", round, key, i, e)
				}
			}
			// Stored but unacknowledged batches count as acknowledged
			// from now on: a retry would be told they are duplicates.
			acked[w] = len(evs)
		}
		segSyncs, segCreates := cfs.segSyncs.Load(), cfs.segCreates.Load()
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, key := fmt.Sprintf("s%d", w%streams), fmt.Sprintf("k%d", w)
				for i := 0; i < 20; i++ {
					seq := acked[w] + 1
					res, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: st, RoutingKey: key, WriterID: key, Seq: uint64(seq), Events: [][]byte{[]byte(fmt.Sprintf("%s:%d", key, seq))}})
					if err != nil {
						t.Errorf("append: %v", err)
						return
					}
					if res.Duplicate {
						t.Errorf("writer %s seq %d answered as a duplicate", key, seq)
						return
					}
					acked[w] = seq
				}
			}()
		}
		wg.Wait()
		// A segment file is synced once, when it is sealed by a roll.
		if n, rolls := cfs.segSyncs.Load()-segSyncs, cfs.segCreates.Load()-segCreates; n > rolls {
			t.Fatalf("round %d: %d segment file syncs on the append path for %d rolls; the WAL alone should sync", round, n, rolls)
		}
		if round > 0 && cfs.walSyncs.Load() == 0 {
			t.Fatalf("round %d: appends acknowledged without a WAL sync", round)
		}
		next := crash.Crash(rng)
		s.Close() // writes into the abandoned filesystem only
		crash = next
	}
}

// TestCheckpointRecordsUntiered: the segments appended to since they were
// last fully tiered survive a clean restart (the checkpoint lists them)
// and a crash (the replay finds them); a segment tiered up to its end
// leaves the set. A clean restart replays no frame.
func TestCheckpointRecordsUntiered(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := walTestConfig(dir)
	s := mustOpenFS(t, cfg, vfs.OS{})
	s.CreateTenant(ctx, "tnt", nil)
	for _, name := range []string{"a", "b", "c"} {
		if _, err := s.CreateStream(ctx, "tnt", name, StreamConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"a", "b"} {
		for i := 0; i < 10; i++ {
			if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: name, Events: [][]byte{[]byte("x")}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.TruncateBefore("tnt", "b", "0", 10); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = mustOpenFS(t, cfg, vfs.OS{})
	if got := untieredNames(s); got != "a" {
		t.Fatalf("after a clean restart the untiered set is %q, want a", got)
	}
	if s.wal.replayedFrames != 0 {
		t.Fatalf("a clean restart replayed %d frames", s.wal.replayedFrames)
	}
	if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: "c", Events: [][]byte{[]byte("y")}}); err != nil {
		t.Fatal(err)
	}
	// Stop without the closing checkpoint: as after kill -9.
	s.wal.stopWithoutCheckpoint()
	s.closeAllLogs()
	s.cat.Close()
	s = mustOpenFS(t, cfg, vfs.OS{})
	defer func() { s.Close() }()
	if got := untieredNames(s); got != "a,c" {
		t.Fatalf("after a crash the untiered set is %q, want a,c", got)
	}
	if s.wal.replayedFrames != 1 {
		t.Fatalf("after a crash %d frames replayed, want the 1 appended since the checkpoint", s.wal.replayedFrames)
	}
	marked := map[string]bool{}
	for _, ref := range s.Activity().Take() {
		marked[ref.Stream] = true
	}
	for _, name := range []string{"a", "c"} {
		if !marked[name] {
			t.Errorf("segment of %s not marked in the Activity set at start", name)
		}
	}
	// A deleted stream leaves the set, and its frames are not replayed.
	if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: "c", Events: [][]byte{[]byte("z")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStream(ctx, "tnt", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteStream(ctx, "tnt", "c"); err != nil {
		t.Fatal(err)
	}
	s.wal.stopWithoutCheckpoint()
	s.closeAllLogs()
	s.cat.Close()
	s = mustOpenFS(t, cfg, vfs.OS{})
	if got := untieredNames(s); got != "" {
		t.Fatalf("after deleting a and c the untiered set is %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "tnt")); err == nil {
		if ents, _ := os.ReadDir(filepath.Join(dir, "logs", "tnt")); len(ents) != 1 {
			t.Fatalf("log dirs after replay: %v; want only b's", ents)
		}
	}
}

func untieredNames(s *Store) string {
	s.wal.mu.Lock()
	defer s.wal.mu.Unlock()
	var names []string
	for ref := range s.wal.mu.untiered {
		names = append(names, ref.Stream)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// TestDescriptorBudget appends to and reads from many segments at once
// with a budget of 8 segment files, and checks, by counting the process's
// open descriptors into the logs directory, that the budget holds
// throughout and is used.
func TestDescriptorBudget(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd to count descriptors")
	}
	ctx := context.Background()
	dir := t.TempDir()
	cfg := walTestConfig(dir)
	cfg.MaxOpenFiles = 8
	s := mustOpenFS(t, cfg, vfs.OS{})
	defer s.Close()
	s.CreateTenant(ctx, "tnt", nil)
	const streams = 30
	for i := 0; i < streams; i++ {
		if _, err := s.CreateStream(ctx, "tnt", fmt.Sprintf("s%d", i), StreamConfig{Segments: 2}); err != nil {
			t.Fatal(err)
		}
	}
	logs := filepath.Join(dir, "logs")
	var peak atomic.Int64
	var samples atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ents, _ := os.ReadDir("/proc/self/fd")
			n := int64(0)
			for _, e := range ents {
				if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(target, logs) {
					n++
				}
			}
			samples.Add(1)
			if n > peak.Load() {
				peak.Store(n)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := 0; i < streams; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("s%d", i)
			for j := 0; j < 30; j++ {
				if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: name, Events: [][]byte{[]byte(fmt.Sprintf("%d-%d", i, j))}}); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Read(ctx, ReadRequest{Tenant: "tnt", Stream: name, Segment: fmt.Sprint(j % 2), MaxEvents: 10}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	if p := peak.Load(); p > 8 {
		t.Fatalf("%d segment files open at once; the budget is 8", p)
	} else if p < 4 {
		t.Fatalf("at most %d segment files seen open in %d samples: the test did not load the cache", p, samples.Load())
	}
	if n := s.wal.files.Open(); n > 8 {
		t.Fatalf("the cache holds %d descriptors, budget 8", n)
	}
	for i := 0; i < streams; i++ {
		for _, seg := range []string{"0", "1"} {
			if got := readAll(t, s, "tnt", fmt.Sprintf("s%d", i), seg); len(got) != 15 {
				t.Fatalf("s%d/%s holds %d events, want 15", i, seg, len(got))
			}
		}
	}
}

// TestSegmentWriteFailureReapplied: a batch durable in the WAL whose
// segment-file write fails is not acknowledged, poisons the segment, and
// is written before anything else once the segment recovers, so that the
// file never disagrees with the WAL (and a retry is a duplicate).
func TestSegmentWriteFailureReapplied(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfs := &countFS{FS: vfs.OS{}}
	s := mustOpenFS(t, walTestConfig(dir), cfs)
	defer s.Close()
	s.CreateTenant(ctx, "tnt", nil)
	s.CreateStream(ctx, "tnt", "s", StreamConfig{})
	app := func(seq int, ev string) (AppendResult, error) {
		return s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: "s", WriterID: "w", Seq: uint64(seq), Events: [][]byte{[]byte(ev)}})
	}
	if _, err := app(1, "one"); err != nil {
		t.Fatal(err)
	}
	cfs.mu.Lock()
	cfs.failWrite = string(filepath.Separator) + "logs" + string(filepath.Separator)
	cfs.mu.Unlock()
	if _, err := app(2, "two"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append whose segment write failed: %v, want ErrUnavailable", err)
	}
	var res AppendResult
	var err error
	for i := 0; i < 50; i++ { // the segment retries recovery after a pause
		if res, err = app(2, "two"); !errors.Is(err, ErrUnavailable) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || !res.Duplicate || res.FirstOffset != 1 {
		t.Fatalf("retry after recovery: %+v %v; want the duplicate at offset 1", res, err)
	}
	if _, err := app(3, "three"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(readAll(t, s, "tnt", "s", "0"), ","); got != "one,two,three" {
		t.Fatalf("segment holds %s", got)
	}
}

// stopWithoutCheckpoint stops as a crash would (tests).
func (w *walState) stopWithoutCheckpoint() {
	close(w.stop)
	<-w.done
	w.log.Close()
}

// TestCheckpointAtFrameBoundary: a checkpoint that outgrew
// checkpoint_bytes syncs the files holding the older half of the log,
// whose end falls anywhere inside a frame; the replay start it records
// must still be a frame's, or the next start (after kill -9) reads from
// the middle of a frame and refuses the log, or cuts it there.
func TestCheckpointAtFrameBoundary(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := walTestConfig(dir)
	// A frame or two per log file, so that the middle is in a file
	// that is not the last.
	cfg.WAL.FileBytes, cfg.SegmentFileBytes = 64<<10, 1<<20
	s := mustOpenFS(t, cfg, vfs.OS{})
	s.CreateTenant(ctx, "tnt", nil)
	if _, err := s.CreateStream(ctx, "tnt", "a", StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 5; i++ {
		ev := fmt.Sprintf("event-%d-%040000d", i, i)
		if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: "a", Events: [][]byte{[]byte(ev)}}); err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	// As run does past checkpoint_bytes: half way, which is inside the
	// second frame.
	since := s.wal.mu.since
	if err := s.wal.checkpoint(since + (s.wal.log.Applied()-since)/2); err != nil {
		t.Fatal(err)
	}
	s.wal.stopWithoutCheckpoint()
	s.closeAllLogs()
	s.cat.Close()
	s, err := OpenFS(cfg, nil, vfs.OS{})
	if err != nil {
		t.Fatalf("open after a checkpoint at the log's half and a crash: %v", err)
	}
	defer s.Close()
	if got := readAll(t, s, "tnt", "a", "0"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("segment holds %q, want %q", got, want)
	}
}

// TestOpenProgress: OpenWithProgress counts the write-ahead log frames it
// replays and ends in PhaseOpen.
func TestOpenProgress(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := walTestConfig(dir)
	s := mustOpenFS(t, cfg, vfs.OS{})
	s.CreateTenant(ctx, "tnt", nil)
	if _, err := s.CreateStream(ctx, "tnt", "a", StreamConfig{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 7; i++ {
		if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: "a", Events: [][]byte{[]byte("x")}}); err != nil {
			t.Fatal(err)
		}
	}
	s.wal.stopWithoutCheckpoint()
	s.closeAllLogs()
	s.cat.Close()
	var p Progress
	if phase, _ := p.Phase(); phase != PhaseStarting {
		t.Fatalf("phase %d before the open", phase)
	}
	s, err := OpenWithProgress(cfg, nil, &p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if phase, frames := p.Phase(); phase != PhaseOpen || frames != 7 {
		t.Fatalf("after the open: phase %d, %d frames; want %d, the 7 appended", phase, frames, PhaseOpen)
	}
}

// A data directory from a release before the write-ahead log (no wal/
// directory, no core/swept): the one sweep at its first start marks every
// segment with files as untiered, and the checkpoint keeps them marked at
// every later start until tiering takes them, without another sweep.
func TestSweptSegmentsStayUntieredAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	fill(t, s, 3, 2)
	if err := s.cat.Delete(keySwept); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.RemoveAll(filepath.Join(dir, "wal")); err != nil {
		t.Fatal(err)
	}
	marked := func(s *Store) []string {
		var out []string
		for _, ref := range s.Activity().Take() {
			out = append(out, ref.Stream+"/"+ref.Segment)
		}
		slices.Sort(out)
		return out
	}
	want := "[s0000/0 s0000/1 s0001/0 s0001/1 s0002/0 s0002/1]"
	s = openStore(t, dir)
	if got := fmt.Sprint(marked(s)); got != want {
		t.Fatalf("first start of an old directory marked %s, want %s", got, want)
	}
	// Tiering takes all of one segment.
	if err := s.TruncateBefore("acme", "s0001", "1", 1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if got, want := fmt.Sprint(marked(s)), "[s0000/0 s0000/1 s0001/0 s0002/0 s0002/1]"; got != want {
		t.Fatalf("a later start marked %s, want %s (from the checkpoint)", got, want)
	}
	if n := s.lazy.opens.Load(); n != 0 {
		t.Fatalf("a later start opened %d logs", n)
	}
	if _, err := s.GetStream(ctx, "acme", "s0002"); err != nil {
		t.Fatal(err)
	}
}

// dirSyncFS counts directory syncs below logs/ (segment directories and
// their parents).
type dirSyncFS struct {
	vfs.FS
	logDirSyncs atomic.Int64
}

func (fs *dirSyncFS) SyncDir(dir string) error {
	if strings.Contains(dir+string(filepath.Separator), string(filepath.Separator)+"logs"+string(filepath.Separator)) {
		fs.logDirSyncs.Add(1)
	}
	return fs.FS.SyncDir(dir)
}

// TestFreshSegmentDirSyncDeferred: the first append to a fresh segment
// syncs no directory (the WAL holds its record), a crash before any
// checkpoint loses none of those acknowledged events (the replay makes
// the directories and files again), and a clean close's checkpoint makes
// fresh segments' directory entries durable: after it a crash finds every
// event with nothing left to replay.
func TestFreshSegmentDirSyncDeferred(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := walTestConfig(dir)
	crash := vfs.NewCrashFS()
	dfs := &dirSyncFS{FS: crash}
	s := mustOpenFS(t, cfg, dfs)
	if _, err := s.CreateTenant(ctx, "tnt", nil); err != nil {
		t.Fatal(err)
	}
	const streams = 12
	// fresh creates streams named prefix0… and appends one event to
	// each of their two segments.
	fresh := func(s *Store, prefix string) {
		t.Helper()
		for i := range streams {
			name := fmt.Sprint(prefix, i)
			if _, err := s.CreateStream(ctx, "tnt", name, StreamConfig{Segments: 2}); err != nil {
				t.Fatal(err)
			}
			for _, seg := range []string{"0", "1"} {
				if _, err := s.Append(ctx, AppendRequest{Tenant: "tnt", Stream: name, Segment: seg, Events: [][]byte{[]byte(name + "/" + seg)}}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check := func(s *Store, prefix string) {
		t.Helper()
		for i := range streams {
			name := fmt.Sprint(prefix, i)
			for _, seg := range []string{"0", "1"} {
				if got := readAll(t, s, "tnt", name, seg); len(got) != 1 || got[0] != name+"/"+seg {
					t.Fatalf("%s segment %s holds %q after the crash; want [%s/%s]", name, seg, got, name, seg)
				}
			}
		}
	}
	before := dfs.logDirSyncs.Load()
	fresh(s, "a")
	if n := dfs.logDirSyncs.Load() - before; n != 0 {
		t.Fatalf("first appends to %d fresh segments synced %d directories; want 0 (a checkpoint syncs them)", 2*streams, n)
	}

	// A crash before any checkpoint: the files' entries were never
	// synced, so the restart finds none of them; the replay does.
	next := crash.Crash(nil)
	s.Close() // writes into the abandoned filesystem only
	crash = next
	s = mustOpenFS(t, cfg, crash)
	check(s, "a")
	if s.wal.replayedFrames == 0 {
		t.Fatal("nothing replayed: the crash kept unsynced directory entries, so this test proves nothing")
	}

	// A clean close checkpoints: the fresh segments' entries are durable,
	// and a crash after it finds every event with nothing to replay.
	fresh(s, "b")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	crash = crash.Crash(nil)
	s = mustOpenFS(t, cfg, crash)
	defer s.Close()
	if s.wal.replayedFrames != 0 {
		t.Fatalf("%d frames replayed after a clean close", s.wal.replayedFrames)
	}
	check(s, "a")
	check(s, "b")
}
