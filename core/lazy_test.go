package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/core/vfs"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("descriptors are counted in /proc/self/fd, which this system lacks: %v", err)
	}
	return len(ents)
}

func fill(t *testing.T, s *Store, streams, segments int) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateTenant(ctx, "acme", nil); err != nil && !errors.Is(err, ErrExists) {
		t.Fatal(err)
	}
	for i := range streams {
		name := fmt.Sprintf("s%04d", i)
		if _, err := s.CreateStream(ctx, "acme", name, StreamConfig{Segments: segments}); err != nil {
			t.Fatal(err)
		}
		for seg := range segments {
			if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: name, Segment: fmt.Sprint(seg), Events: [][]byte{[]byte(name)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Start-up opens no segment log: the descriptors it takes do not grow
// with the streams (the catalog's own are a handful).
func TestStartOpensNoSegmentLog(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	fill(t, s, 40, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := openFDs(t)
	s = openStore(t, dir)
	defer s.Close()
	// The background warm-up may open one log at a time to learn its
	// bounds; 80 segments with two descriptors each would take 160.
	if got := openFDs(t) - before; got > 20 {
		t.Fatalf("opening a store of 80 segments took %d descriptors", got)
	}
	if n := s.OpenSegments(); n > 1 {
		t.Fatalf("%d segment logs open after start", n)
	}
}

// Creating a stream writes its catalog record and no file or directory.
func TestCreateStreamMakesNoFiles(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := openStore(t, dir)
	defer s.Close()
	s.CreateTenant(ctx, "acme", nil)
	if _, err := s.CreateStream(ctx, "acme", "clicks", StreamConfig{Segments: 3}); err != nil {
		t.Fatal(err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "logs", "acme")); err == nil && len(ents) > 0 {
		t.Fatalf("creation made %d entries under logs/acme", len(ents))
	}
	if n := s.OpenSegments(); n != 0 {
		t.Fatalf("creation opened %d segment logs", n)
	}
	st, err := s.GetStream(ctx, "acme", "clicks")
	if err != nil || len(st.Segments) != 3 || st.Segments[2].NextOffset != 0 {
		t.Fatalf("describe new stream: %+v %v", st, err)
	}
	if n := s.lazy.opens.Load(); n != 0 {
		t.Fatalf("describing a new stream opened %d logs", n)
	}
}

// A log unused for IdleClose is closed (its descriptors returned), its
// bounds kept for describing, and reopened by the next use.
func TestIdleLogsCloseAndReopen(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	fill(t, s, 3, 2)
	if n := s.OpenSegments(); n != 6 {
		t.Fatalf("%d logs open after appends to 6 segments", n)
	}
	fds := openFDs(t)
	if n := s.closeIdle(time.Now()); n != 0 {
		t.Fatalf("closed %d logs used just now", n)
	}
	if n := s.closeIdle(time.Now().Add(s.cfg.IdleClose + time.Second)); n != 6 {
		t.Fatalf("closed %d idle logs, want 6", n)
	}
	// Every segment file's descriptor goes with its log (one per file,
	// from the shared file cache).
	if got := fds - openFDs(t); got != 6 {
		t.Fatalf("closing 6 logs returned %d descriptors, want 6", got)
	}
	opens := s.lazy.opens.Load()
	st, err := s.GetStream(ctx, "acme", "s0001")
	if err != nil || st.Segments[1].NextOffset != 1 || st.Segments[1].Bytes == 0 {
		t.Fatalf("describe idle stream: %+v %v", st, err)
	}
	if _, err := s.ListStreams(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s0000", "s0001", "s0002"} {
		if st, err := s.GetStream(ctx, "acme", name); err != nil || st.Segments[0].NextOffset != 1 {
			t.Fatalf("GetStream %s: %+v %v", name, st, err)
		}
	}
	if n := s.lazy.opens.Load() - opens; n != 0 {
		t.Fatalf("describing idle streams opened %d logs", n)
	}
	res, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "s0001", Segment: "1"})
	if err != nil || len(res.Events) != 1 || string(res.Events[0].Data) != "s0001" {
		t.Fatalf("read after idle close: %+v %v", res, err)
	}
	if n := s.OpenSegments(); n != 1 {
		t.Fatalf("%d logs open after one read", n)
	}
	// A log in use is not closed however long the use lasts.
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Wait(ctx, "acme", "s0002", "0", 1, time.Minute)
	}()
	for s.OpenSegments() < 2 {
		time.Sleep(time.Millisecond)
	}
	s.closeIdle(time.Now().Add(time.Hour))
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s0002", Segment: "0", Events: [][]byte{[]byte("x")}}); err != nil {
		t.Fatal(err)
	}
	<-done
}

// Many first uses at once open the log once.
func TestFirstUsesOpenOnce(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	s.CreateTenant(ctx, "acme", nil)
	s.CreateStream(ctx, "acme", "s", StreamConfig{})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if i%2 == 0 {
				_, err = s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "s", Segment: "0"})
			} else {
				_, err = s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Events: [][]byte{[]byte("e")}})
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := s.lazy.opens.Load(); n != 1 {
		t.Fatalf("32 concurrent first uses opened the log %d times", n)
	}
}

// A delete racing first uses leaves no files behind, and the uses fail
// only as a deleted or closed stream's would.
func TestDeleteRacesOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	defer s.Close()
	s.CreateTenant(ctx, "acme", nil)
	for round := range 20 {
		name := fmt.Sprintf("r%d", round)
		st, err := s.CreateStream(ctx, "acme", name, StreamConfig{Segments: 2})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: name, Segment: fmt.Sprint(i % 2), Events: [][]byte{[]byte("e")}})
				errs <- err
			}()
		}
		if err := s.DeleteStream(ctx, "acme", name); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrClosed) {
				t.Fatalf("append racing delete: %v", err)
			}
		}
		p := filepath.Join(dir, "logs", "acme", fmt.Sprintf("%s@%d", name, st.Created.UnixNano()))
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("round %d: deleted stream's directory remains: %v", round, err)
		}
	}
	if n := s.OpenSegments(); n != 0 {
		t.Fatalf("%d logs of deleted streams open", n)
	}
}

// Close closes what is open, and nothing opens after it.
func TestCloseClosesOpenLogs(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	fill(t, s, 2, 2)
	fds := openFDs(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := fds - openFDs(t); got < 8 {
		t.Fatalf("Close returned %d descriptors; the 4 open logs hold 8", got)
	}
	if _, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: "s0000", Segment: "0"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if n := s.OpenSegments(); n != 0 {
		t.Fatalf("%d logs open after Close", n)
	}
}

// The stream-wide writer binding survives the stream going idle: it is
// rebuilt from the logs, so another principal cannot take the id on a
// segment the owner has not used.
func TestWriterOwnersAfterIdle(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	defer s.Close()
	s.CreateTenant(ctx, "acme", nil)
	s.CreateStream(ctx, "acme", "s", StreamConfig{Segments: 2})
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Segment: "0", WriterID: "w", Seq: 1, Owner: "alice", Events: [][]byte{[]byte("a")}}); err != nil {
		t.Fatal(err)
	}
	s.closeIdle(time.Now().Add(time.Hour))
	if s.OpenSegments() != 0 {
		t.Fatal("stream did not go idle")
	}
	_, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Segment: "1", WriterID: "w", Seq: 1, Owner: "bob", Events: [][]byte{[]byte("b")}})
	if !errors.Is(err, ErrWriterOwned) {
		t.Fatalf("another owner's batch with alice's writer id after idle: %v", err)
	}
	res, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Segment: "0", WriterID: "w", Seq: 1, Owner: "alice", Events: [][]byte{[]byte("a")}})
	if err != nil || !res.Duplicate {
		t.Fatalf("alice's retry after idle: %+v %v", res, err)
	}
}

// Creation refusals: each answers a sentinel the API maps to a 4xx naming
// the limit or to 503, and none leaves a record or a file behind.
func TestCreateStreamRefusals(t *testing.T) {
	noSpace := fmt.Errorf("write catalog: %w", syscall.ENOSPC)
	cases := map[string]struct {
		limits    func(*Limits)
		catalog   error
		want      error
		wantInMsg string
	}{
		"node limit":   {limits: func(l *Limits) { l.MaxStreams = 2 }, want: ErrLimit, wantInMsg: "core.limits.max_streams"},
		"tenant limit": {limits: func(l *Limits) { l.MaxStreamsPerTenant = 2 }, want: ErrLimit, wantInMsg: "core.limits.max_streams_per_tenant"},
		"disk full":    {catalog: noSpace, want: ErrUnavailable, wantInMsg: "no space"},
		"catalog":      {catalog: errors.New("pebble: background error"), want: ErrUnavailable, wantInMsg: "create stream"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			cfg := DefaultConfig()
			cfg.Dir = dir
			if tc.limits != nil {
				tc.limits(&cfg.Limits)
			}
			s, err := Open(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { s.Close() }()
			s.CreateTenant(ctx, "acme", nil)
			s.CreateTenant(ctx, "other", nil)
			for _, n := range []string{"a", "b"} {
				if _, err := s.CreateStream(ctx, "acme", n, StreamConfig{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.catalog != nil {
				s.setRecord = func(string, []byte) error { return tc.catalog }
			}
			_, err = s.CreateStream(ctx, "acme", "c", StreamConfig{Segments: 2})
			if !errors.Is(err, tc.want) || !contains(err.Error(), tc.wantInMsg) {
				t.Fatalf("got %v, want %v naming %q", err, tc.want, tc.wantInMsg)
			}
			if _, err := s.GetStream(ctx, "acme", "c"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("refused stream is there: %v", err)
			}
			if tc.limits != nil {
				// The per-tenant limit leaves other tenants alone; the node
				// limit does not.
				_, err := s.CreateStream(ctx, "other", "c", StreamConfig{})
				if wantOK := cfg.Limits.MaxStreamsPerTenant > 0; (err == nil) != wantOK {
					t.Fatalf("stream in another tenant: %v", err)
				}
			}
			s.Close()
			if ents, err := os.ReadDir(filepath.Join(dir, "logs", "acme")); err == nil && len(ents) > 0 {
				t.Fatalf("refused creation left %d entries under logs/acme", len(ents))
			}
			s, err = Open(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.GetStream(ctx, "acme", "c"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("refused stream is there after restart: %v", err)
			}
			if tc.catalog != nil {
				// Once the catalog works again the name is free.
				if _, err := s.CreateStream(ctx, "acme", "c", StreamConfig{}); err != nil {
					t.Fatalf("create after the catalog recovered: %v", err)
				}
			}
		})
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0))
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// emfileFS fails every open of a segment file, as a process out of
// descriptors does once the write-ahead log, opened at start, holds its own.
type emfileFS struct{ vfs.FS }

func segmentPath(name string) bool {
	return strings.Contains(name, string(filepath.Separator)+"logs"+string(filepath.Separator))
}

func (e emfileFS) Open(name string) (vfs.File, error) {
	if !segmentPath(name) {
		return e.FS.Open(name)
	}
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
}

func (e emfileFS) OpenRW(name string) (vfs.File, error) {
	if !segmentPath(name) {
		return e.FS.OpenRW(name)
	}
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
}

func (e emfileFS) Create(name string) (vfs.File, error) {
	if !segmentPath(name) {
		return e.FS.Create(name)
	}
	return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
}

// A use whose log cannot be opened for want of descriptors answers
// ErrUnavailable (503 + Retry-After), not an internal error.
func TestOpenWithoutDescriptorsIsUnavailable(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	s, err := OpenFS(cfg, nil, emfileFS{vfs.OS{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.CreateTenant(ctx, "acme", nil)
	if _, err := s.CreateStream(ctx, "acme", "s", StreamConfig{}); err != nil {
		t.Fatalf("creation needs no descriptor: %v", err)
	}
	if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: "s", Events: [][]byte{[]byte("e")}}); !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("append without descriptors: %v", err)
	}
}

// Under a descriptor limit far below two per segment, streams are still
// created and used: only the segments in use hold descriptors.
func TestManyStreamsUnderLowDescriptorLimit(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Skipf("cannot read RLIMIT_NOFILE: %v", err)
	}
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.IdleClose = time.Hour
	s, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lim := old
	lim.Cur = uint64(openFDs(t) + 64)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("cannot lower RLIMIT_NOFILE: %v", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	s.CreateTenant(ctx, "acme", nil)
	const n = 300
	for i := range n {
		name := fmt.Sprintf("s%d", i)
		if _, err := s.CreateStream(ctx, "acme", name, StreamConfig{Segments: 2}); err != nil {
			t.Fatalf("create stream %d of %d under a limit of %d descriptors: %v", i, n, lim.Cur, err)
		}
		if _, err := s.Append(ctx, AppendRequest{Tenant: "acme", Stream: name, Segment: "0", Events: [][]byte{[]byte("e")}}); err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("append to stream %d: %v", i, err)
		}
		// Idle logs go, as the sweeper would close them.
		s.closeIdle(time.Now().Add(2 * time.Hour))
	}
	for _, i := range []int{0, n / 2, n - 1} {
		res, err := s.Read(ctx, ReadRequest{Tenant: "acme", Stream: fmt.Sprintf("s%d", i), Segment: "0"})
		if err != nil || len(res.Events) != 1 {
			t.Fatalf("read stream %d: %+v %v", i, res, err)
		}
	}
}

// A wait holds its logs open, and a deletion or Close ends it at once.
func TestWaitEndsOnDeleteAndClose(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	s.CreateTenant(ctx, "acme", nil)
	for _, n := range []string{"a", "b"} {
		s.CreateStream(ctx, "acme", n, StreamConfig{Segments: 2})
	}
	type result struct {
		name string
		err  error
	}
	res := make(chan result, 4)
	go func() {
		_, err := s.WaitStream(ctx, "acme", "a", nil, time.Hour)
		res <- result{"WaitStream on deleted", err}
	}()
	go func() {
		_, err := s.Wait(ctx, "acme", "a", "1", 0, time.Hour)
		res <- result{"Wait on deleted", err}
	}()
	for s.OpenSegments() < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := s.DeleteStream(ctx, "acme", "a"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := <-res
		if !errors.Is(r.err, ErrNotFound) {
			t.Fatalf("%s: %v", r.name, r.err)
		}
	}
	go func() {
		_, err := s.WaitStream(ctx, "acme", "b", nil, time.Hour)
		res <- result{"WaitStream at Close", err}
	}()
	go func() {
		_, err := s.Wait(ctx, "acme", "b", "0", 0, time.Hour)
		res <- result{"Wait at Close", err}
	}()
	for s.OpenSegments() < 2 {
		time.Sleep(time.Millisecond)
	}
	s.Close()
	for range 2 {
		r := <-res
		if !errors.Is(r.err, ErrClosed) {
			t.Fatalf("%s: %v", r.name, r.err)
		}
	}
}

// After a restart, a description reports the bounds of segments nobody
// has used since, learned by opening each once, and leaves none of their
// logs open; a segment never used is known empty without an open.
func TestDescribeAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	fill(t, s, 3, 2)
	if _, err := s.CreateStream(ctx, "acme", "unused", StreamConfig{Segments: 2}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if n := s.lazy.opens.Load(); n != 0 {
		t.Fatalf("start-up opened %d logs", n)
	}
	for _, name := range []string{"s0000", "s0001", "s0002"} {
		st, err := s.GetStream(ctx, "acme", name)
		if err != nil {
			t.Fatal(err)
		}
		for _, seg := range st.Segments {
			if seg.NextOffset != 1 || seg.Bytes == 0 {
				t.Fatalf("%s segment %s after restart: %+v", st.Name, seg.ID, seg)
			}
		}
	}
	st, err := s.GetStream(ctx, "acme", "unused")
	if err != nil || st.Segments[0].NextOffset != 0 || st.Segments[1].Bytes != 0 {
		t.Fatalf("unused stream after restart: %+v %v", st, err)
	}
	if n := s.OpenSegments(); n != 0 {
		t.Fatalf("%d logs left open by learning their bounds", n)
	}
	if n := s.lazy.opens.Load(); n != 6 {
		t.Fatalf("6 segments with files learned with %d opens", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs", "acme")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "logs", "acme"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "unused@") {
			t.Fatalf("describing an unused stream made its directory %s", e.Name())
		}
	}
}

// TestSystemStreamsOutsideLimits checks that the system tenant's streams
// count against neither stream limit: they neither take a user's place
// nor are refused for the users' streams.
func TestSystemStreamsOutsideLimits(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig()
	cfg.Dir = t.TempDir()
	cfg.Limits.MaxStreams, cfg.Limits.MaxStreamsPerTenant = 2, 2
	s, err := Open(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tn := range []string{"acme", names.SystemTenant} {
		if _, err := s.CreateTenant(ctx, tn, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"x.requests", "x.denials", "x.tiering"} {
		if _, err := s.CreateStream(ctx, names.SystemTenant, n, StreamConfig{}); err != nil {
			t.Fatalf("system stream %s: %v", n, err)
		}
	}
	for _, n := range []string{"a", "b"} {
		if _, err := s.CreateStream(ctx, "acme", n, StreamConfig{}); err != nil {
			t.Fatalf("user stream %s beside the system streams: %v", n, err)
		}
	}
	_, err = s.CreateStream(ctx, "acme", "c", StreamConfig{})
	if !errors.Is(err, ErrLimit) || !contains(err.Error(), "holds 2 streams") {
		t.Fatalf("third user stream: %v, want the limit naming the 2 user streams", err)
	}
	if _, err := s.CreateStream(ctx, names.SystemTenant, "y.requests", StreamConfig{}); err != nil {
		t.Fatalf("system stream at the limit: %v", err)
	}
}
