package segment

import (
	"container/list"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/silt-io/silt/core/vfs"
)

// FileCache holds the open descriptors of segment files, shared by every
// log of a store, under a budget: a file is opened when a read, scan or
// write needs it and stays open, least recently used first out, only while
// the budget allows. An idle segment therefore costs no descriptor once
// others need the room. Each file is opened once, read-write, for reads
// and writes alike.
//
// Directory operations (listing, creating, syncing or removing a segment's
// directory, its writer checkpoint) take descriptors too. They get a fixed
// share of the budget of their own, dirMax, for which they wait: such an
// operation holds nothing else while it runs, so a wait for it always
// ends, even when its caller holds a file handle. Handles get the rest, so
// that handles and directory operations together never exceed the budget.
type FileCache struct {
	fs  vfs.FS
	max int
	// files is the handles' share of max; dirMax the directory
	// operations'.
	files, dirMax int

	mu       sync.Mutex
	freed    *sync.Cond // a handle was released or closed
	dirFreed *sync.Cond // a directory operation ended
	open     map[string]*handle
	idle     list.List // of *handle with no references, least recent first
	opened   int       // descriptors held by handles, referenced or not
	dirs     int       // descriptors held by directory operations
}

type handle struct {
	path string
	f    vfs.File
	refs int
	elem *list.Element // in idle while refs == 0
	gone bool          // the file was removed: close once unreferenced
}

// dirShare is the directory operations' share of a budget: enough for a
// removal of a stream's directory tree (which holds three descriptors at
// its deepest) and for some concurrency, without starving the handles.
func dirShare(budget int) int { return min(max(budget/8, 3), 64) }

// NewFileCache returns a cache that keeps at most budget descriptors open
// (at least 4).
func NewFileCache(fs vfs.FS, budget int) *FileCache {
	c := &FileCache{fs: fs, max: max(budget, 4), open: map[string]*handle{}}
	c.dirMax = dirShare(c.max)
	c.files = c.max - c.dirMax
	c.freed = sync.NewCond(&c.mu)
	c.dirFreed = sync.NewCond(&c.mu)
	return c
}

// Max is the descriptor budget.
func (c *FileCache) Max() int { return c.max }

// Open returns the number of descriptors held, by handles and by
// directory operations in progress.
func (c *FileCache) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened + c.dirs
}

// acquire returns an open handle of path, opening it (or, with create,
// creating it) if needed. At the budget it closes the least recently used
// idle handle, or waits for one to be released: a caller holds at most one
// handle at a time, so some holder always finishes.
func (c *FileCache) acquire(path string, create bool) (*handle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if h := c.open[path]; h != nil && !h.gone {
			if create {
				return nil, fmt.Errorf("create %s: %w", path, errExists)
			}
			if h.refs == 0 {
				c.idle.Remove(h.elem)
				h.elem = nil
			}
			h.refs++
			return h, nil
		}
		if c.opened < c.files {
			break
		}
		if e := c.idle.Front(); e != nil {
			c.closeLocked(e.Value.(*handle))
			continue
		}
		c.freed.Wait()
	}
	// Opening under the lock keeps the count exact; an open is a
	// metadata lookup, not data I/O.
	var f vfs.File
	var err error
	if create {
		f, err = c.fs.Create(path)
	} else {
		f, err = c.fs.OpenRW(path)
	}
	if err != nil {
		return nil, err
	}
	h := &handle{path: path, f: f, refs: 1}
	c.open[path] = h
	c.opened++
	return h, nil
}

var errExists = errors.New("file is open")

// DirOp runs fn, a directory operation holding at most n descriptors at
// once (a listing, a directory sync, a small file written or read whole,
// a removal of a directory tree), with those descriptors counted against
// the budget: it waits while the directory operations' share is in use.
func (c *FileCache) DirOp(n int, fn func() error) error {
	n = min(max(n, 1), c.dirMax)
	c.mu.Lock()
	for c.dirs+n > c.dirMax {
		c.dirFreed.Wait()
	}
	c.dirs += n
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.dirs -= n
		c.dirFreed.Broadcast()
		c.mu.Unlock()
	}()
	return fn()
}

func (c *FileCache) closeLocked(h *handle) {
	if h.elem != nil {
		c.idle.Remove(h.elem)
		h.elem = nil
	}
	if c.open[h.path] == h {
		delete(c.open, h.path)
	}
	h.f.Close()
	c.opened--
	c.freed.Signal()
}

// release returns a handle acquired before.
func (c *FileCache) release(h *handle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.refs > 0 {
		return
	}
	if h.gone {
		c.closeLocked(h)
		return
	}
	h.elem = c.idle.PushBack(h)
	c.freed.Signal()
}

// forget closes path's descriptor once nobody uses it (the file was
// removed, or its log closed). A reader still inside the file keeps
// reading it through its handle until it releases it.
func (c *FileCache) forget(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.open[path]
	if h == nil {
		return
	}
	delete(c.open, path)
	h.gone = true
	if h.refs == 0 {
		c.closeLocked(h)
	}
}

// Sync makes the file at path durable. A file removed meanwhile (its data
// tiered, its stream deleted) needs nothing.
func (c *FileCache) Sync(path string) error {
	h, err := c.acquire(path, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s to sync: %w", path, err)
	}
	defer c.release(h)
	if err := h.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
