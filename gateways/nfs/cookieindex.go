package nfs

import (
	"container/list"
	"context"
	"sync"
	"time"

	"github.com/silt-io/silt/view"
)

// Directory indexes: the fallback of dirCookies.
//
// A cookie the cache does not know (after a restart, once other listings
// have pushed it out, or made up by a client) used to be resolved by
// scanning the directory from its start: O(directory) for every such
// call, so a client sending unknown cookies for a tenant of 100,000
// streams made every call cost the whole tenant. Instead, the first miss
// in a directory reads it once into an index of cookie → name, and later
// misses there are answered from it. An index is rebuilt at most once per
// indexMinAge (a cookie the index does not know within that time is
// NFS3ERR_BAD_COOKIE, on which clients restart the listing), so made-up
// cookies cannot force scans; indexes are evicted least recently used
// beyond indexMaxEntries names in all. A directory larger than that is
// not indexed and keeps the scan.

const (
	// indexMaxEntries bounds the names held by all indexes: at some tens
	// of bytes each, a few tens of MiB.
	indexMaxEntries = 1 << 19
	// indexMinAge is how long an index answers before a miss may rebuild
	// it: entries added to a directory since are found in the cookie
	// cache, which every reply fills, unless it has also been evicted.
	indexMinAge = time.Minute
)

type dirIndexes struct {
	maxEntries int
	minAge     time.Duration
	now        func() time.Time
	mu         struct {
		sync.Mutex
		dirs  map[uint64]*dirIndex
		lru   *list.List // of uint64 dir keys, most recent at the front
		total int
	}
}

type dirIndex struct {
	ready chan struct{} // closed once names, built and err are set
	names map[uint64]string
	built time.Time
	err   error
	elem  *list.Element
}

func newDirIndexes(maxEntries int, minAge time.Duration) *dirIndexes {
	x := &dirIndexes{maxEntries: maxEntries, minAge: minAge, now: time.Now}
	x.mu.dirs = map[uint64]*dirIndex{}
	x.mu.lru = list.New()
	return x
}

// find resolves cookie in the directory dir of view v (dk is its cookie
// cache key).
func (x *dirIndexes) find(ctx context.Context, v view.View, dk uint64, dir string, cookie uint64) (name string, ok bool, err error) {
	x.mu.Lock()
	ix := x.mu.dirs[dk]
	if ix != nil {
		x.mu.lru.MoveToFront(ix.elem)
		x.mu.Unlock()
		<-ix.ready
		// An index that failed, or a directory too large for one, leaves
		// this call to read the directory itself.
		if ix.err == nil && ix.names != nil {
			if name, ok := ix.names[cookie]; ok {
				return name, true, nil
			}
			if x.now().Sub(ix.built) < x.minAge {
				return "", false, nil
			}
		}
		x.mu.Lock()
		if x.mu.dirs[dk] == ix { // not rebuilt by another call meanwhile
			x.removeLocked(dk, ix)
		}
		x.mu.Unlock()
		return x.find(ctx, v, dk, dir, cookie)
	}
	ix = &dirIndex{ready: make(chan struct{})}
	ix.elem = x.mu.lru.PushFront(dk)
	x.mu.dirs[dk] = ix
	x.mu.Unlock()

	names, found, err := x.build(ctx, v, dir, cookie)
	ix.names, ix.built, ix.err = names, x.now(), err
	close(ix.ready)
	x.mu.Lock()
	if err != nil || names == nil {
		// Failed, or too large to index: the next miss tries again.
		if x.mu.dirs[dk] == ix {
			x.removeLocked(dk, ix)
		}
	} else {
		x.mu.total += len(names)
		x.evictLocked()
	}
	x.mu.Unlock()
	return found, found != "", err
}

// build reads dir into an index, and finds cookie's name on the way. The
// index is nil when dir holds more than maxEntries names.
func (x *dirIndexes) build(ctx context.Context, v view.View, dir string, cookie uint64) (map[uint64]string, string, error) {
	names := map[uint64]string{}
	found, after := "", ""
	for {
		page, err := v.ReadDir(ctx, dir, after, view.DefaultPageSize)
		if err != nil {
			return nil, "", err
		}
		for _, fi := range page {
			c := nameCookie(fi.Name)
			if c == cookie && found == "" {
				found = fi.Name
			}
			if names != nil {
				names[c] = fi.Name
				if len(names) > x.maxEntries {
					names = nil
				}
			}
		}
		if len(page) < view.DefaultPageSize {
			return names, found, nil
		}
		after = page[len(page)-1].Name
	}
}

func (x *dirIndexes) removeLocked(dk uint64, ix *dirIndex) {
	delete(x.mu.dirs, dk)
	x.mu.lru.Remove(ix.elem)
	x.mu.total -= len(ix.names)
}

// evictLocked drops least recently used indexes beyond maxEntries, never
// one still being built.
func (x *dirIndexes) evictLocked() {
	for e := x.mu.lru.Back(); e != nil && x.mu.total > x.maxEntries; {
		prev := e.Prev()
		dk := e.Value.(uint64)
		ix := x.mu.dirs[dk]
		select {
		case <-ix.ready:
			x.removeLocked(dk, ix)
		default:
		}
		e = prev
	}
}
