package vfs

import (
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// ErrInjected is returned by every CrashFS operation once its fault point
// has been reached: the simulated machine has died.
var ErrInjected = errors.New("vfs: injected crash")

// CrashFS is an in-memory FS for crash tests. It remembers, per file, the
// bytes made durable by Sync and, per directory, the entries made durable by
// SyncDir. Crash returns the filesystem a restarted process would find:
// synced bytes, plus optionally a random part of the unsynced writes (a torn
// write), under the durable directory entries. Directories themselves are
// treated as durable once created.
type CrashFS struct {
	mu      sync.Mutex
	live    map[string]*memFile
	durable map[string]*memFile
	dirs    map[string]bool
	ops     int
	failAt  int // 0: never
}

type memFile struct {
	data    []byte // what the process sees
	durable []byte // what the disk holds: data as of the last Sync
}

// NewCrashFS returns an empty CrashFS.
func NewCrashFS() *CrashFS {
	return &CrashFS{live: map[string]*memFile{}, durable: map[string]*memFile{}, dirs: map[string]bool{"/": true, ".": true}}
}

// FailAt makes the k-th mutating operation from now (1-based) and every one
// after it fail with ErrInjected. k <= 0 disables injection.
func (fs *CrashFS) FailAt(k int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.ops = 0
	fs.failAt = k
}

// Ops returns the number of mutating operations since the last FailAt.
func (fs *CrashFS) Ops() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.ops
}

// step counts a mutating operation; it reports ErrInjected once the fault
// point is reached. Called with mu held.
func (fs *CrashFS) step() error {
	fs.ops++
	if fs.failAt > 0 && fs.ops >= fs.failAt {
		return ErrInjected
	}
	return nil
}

// Crash returns what a restarted process would find. With rng non-nil, each
// file keeps a random amount of its unsynced tail, some of it possibly
// garbage, as disks do after power loss.
func (fs *CrashFS) Crash(rng *rand.Rand) *CrashFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n := NewCrashFS()
	for d := range fs.dirs {
		n.dirs[d] = true
	}
	copied := map[*memFile]*memFile{}
	for name, f := range fs.durable {
		c, ok := copied[f]
		if !ok {
			data := append([]byte(nil), f.durable...)
			if rng != nil && rng.IntN(2) == 0 {
				data = tear(rng, data, f.data)
			}
			c = &memFile{data: data, durable: append([]byte(nil), data...)}
			copied[f] = c
		}
		n.live[name] = c
		n.durable[name] = c
	}
	return n
}

// tear applies a random part of the writes that turned durable into live
// onto durable: from the first byte where they differ, a random length of
// live's bytes, one of them possibly garbled. For an append-only file that
// is a torn tail; for a write into preallocated space it is a torn
// overwrite.
func tear(rng *rand.Rand, durable, live []byte) []byte {
	start := 0
	for start < len(durable) && start < len(live) && durable[start] == live[start] {
		start++
	}
	if start >= len(live) {
		return durable
	}
	n := rng.IntN(len(live) - start + 1)
	if n == 0 {
		return durable
	}
	if len(durable) < start+n {
		durable = append(durable, make([]byte, start+n-len(durable))...)
	}
	copy(durable[start:], live[start:start+n])
	if rng.IntN(3) == 0 {
		durable[start+rng.IntN(n)] ^= 0x5a
	}
	return durable
}

func clean(name string) string { return filepath.Clean(name) }

func (fs *CrashFS) Create(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	name = clean(name)
	if err := fs.step(); err != nil {
		return nil, err
	}
	if !fs.dirs[filepath.Dir(name)] {
		return nil, &os.PathError{Op: "create", Path: name, Err: os.ErrNotExist}
	}
	if _, ok := fs.live[name]; ok {
		return nil, &os.PathError{Op: "create", Path: name, Err: os.ErrExist}
	}
	f := &memFile{}
	fs.live[name] = f
	return &crashFile{fs: fs, f: f, name: name, rw: true}, nil
}

func (fs *CrashFS) open(name string, rw bool) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	name = clean(name)
	f, ok := fs.live[name]
	if !ok {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	return &crashFile{fs: fs, f: f, name: name, rw: rw}, nil
}

func (fs *CrashFS) OpenRW(name string) (File, error) { return fs.open(name, true) }
func (fs *CrashFS) Open(name string) (File, error)   { return fs.open(name, false) }

func (fs *CrashFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	name = clean(name)
	if err := fs.step(); err != nil {
		return err
	}
	if _, ok := fs.live[name]; !ok {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	delete(fs.live, name)
	return nil
}

func (fs *CrashFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	oldname, newname = clean(oldname), clean(newname)
	if err := fs.step(); err != nil {
		return err
	}
	f, ok := fs.live[oldname]
	if !ok {
		return &os.PathError{Op: "rename", Path: oldname, Err: os.ErrNotExist}
	}
	if !fs.dirs[filepath.Dir(newname)] {
		return &os.PathError{Op: "rename", Path: newname, Err: os.ErrNotExist}
	}
	delete(fs.live, oldname)
	fs.live[newname] = f
	return nil
}

func (fs *CrashFS) RemoveAll(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	name = clean(name)
	if err := fs.step(); err != nil {
		return err
	}
	// Treated as durable at once: the engine only removes whole trees
	// whose catalog entry is already gone, so a partial removal is
	// finished at the next start anyway.
	for n := range fs.live {
		if n == name || strings.HasPrefix(n, name+"/") {
			delete(fs.live, n)
			delete(fs.durable, n)
		}
	}
	for d := range fs.dirs {
		if d == name || strings.HasPrefix(d, name+"/") {
			delete(fs.dirs, d)
		}
	}
	return nil
}

func (fs *CrashFS) MkdirAll(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.step(); err != nil {
		return err
	}
	for d := clean(dir); !fs.dirs[d]; d = filepath.Dir(d) {
		fs.dirs[d] = true
	}
	return nil
}

func (fs *CrashFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir = clean(dir)
	seen := map[string]bool{}
	for n := range fs.live {
		if filepath.Dir(n) == dir {
			seen[filepath.Base(n)] = true
		}
	}
	for d := range fs.dirs {
		if d != dir && filepath.Dir(d) == dir {
			seen[filepath.Base(d)] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

func (fs *CrashFS) SyncDir(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir = clean(dir)
	if err := fs.step(); err != nil {
		return err
	}
	for n := range fs.durable {
		if filepath.Dir(n) == dir {
			if _, ok := fs.live[n]; !ok {
				delete(fs.durable, n)
			}
		}
	}
	for n, f := range fs.live {
		if filepath.Dir(n) == dir {
			fs.durable[n] = f
		}
	}
	return nil
}

type crashFile struct {
	fs   *CrashFS
	f    *memFile
	name string
	rw   bool
}

func (c *crashFile) ReadAt(p []byte, off int64) (int, error) {
	c.fs.mu.Lock()
	defer c.fs.mu.Unlock()
	if off >= int64(len(c.f.data)) {
		return 0, io.EOF
	}
	n := copy(p, c.f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (c *crashFile) WriteAt(p []byte, off int64) (int, error) {
	c.fs.mu.Lock()
	defer c.fs.mu.Unlock()
	if !c.rw {
		return 0, &os.PathError{Op: "write", Path: c.name, Err: os.ErrPermission}
	}
	if off < 0 {
		return 0, &os.PathError{Op: "write", Path: c.name, Err: os.ErrInvalid}
	}
	if err := c.fs.step(); err != nil {
		return 0, err
	}
	if end := off + int64(len(p)); end > int64(len(c.f.data)) {
		c.f.data = append(c.f.data, make([]byte, end-int64(len(c.f.data)))...)
	}
	copy(c.f.data[off:], p)
	return len(p), nil
}

// WriteVAt counts as one operation, like the single pwritev it stands for;
// a crash tears it like any unsynced write.
func (c *crashFile) WriteVAt(bufs [][]byte, off int64) error {
	var all []byte
	for _, b := range bufs {
		all = append(all, b...)
	}
	_, err := c.WriteAt(all, off)
	return err
}

func (c *crashFile) Sync() error {
	c.fs.mu.Lock()
	defer c.fs.mu.Unlock()
	if err := c.fs.step(); err != nil {
		return err
	}
	c.f.durable = append(c.f.durable[:0], c.f.data...)
	return nil
}

func (c *crashFile) Truncate(size int64) error {
	c.fs.mu.Lock()
	defer c.fs.mu.Unlock()
	if err := c.fs.step(); err != nil {
		return err
	}
	if size < int64(len(c.f.data)) {
		c.f.data = c.f.data[:size]
	}
	// A truncation is made durable by the sync that follows it, but a
	// crash cannot bring back bytes past the cut either.
	if len(c.f.durable) > len(c.f.data) {
		c.f.durable = c.f.durable[:len(c.f.data)]
	}
	return nil
}

func (c *crashFile) Size() (int64, error) {
	c.fs.mu.Lock()
	defer c.fs.mu.Unlock()
	return int64(len(c.f.data)), nil
}

func (c *crashFile) Close() error { return nil }
