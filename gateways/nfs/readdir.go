package nfs

import (
	"context"
	"errors"
	"hash/fnv"
	"hash/maphash"
	"sync"

	billy "github.com/go-git/go-billy/v5"

	gonfs "github.com/silt-io/silt/gateways/nfs/internal/gonfs"
)

// Directory cookies.
//
// The view pages by name (ReadDir after a name), so a page costs the same
// wherever it is, but an NFS cookie is 64 bits and names are up to 255
// bytes: a cookie cannot carry the name it resumes after. What it carries
// instead is a 63-bit hash of the name (top bit set, so that it never
// collides with 0 and the "." and ".." cookies 1 and 2). That makes a
// cookie a property of the entry alone: the same across restarts, across
// replies and while the directory grows, which is also what the Linux
// client assumes when it looks cookies up again in its page cache.
//
// To turn a cookie back into a name, every entry handed out is kept in a
// bounded cache (dirCookies), so that a listing in progress continues in
// O(page). The cache is only a shortcut: a miss (after a restart, or once
// many listings have pushed an entry out) is answered from an index of
// the directory's cookies, read once per directory (dirIndexes, in
// cookieindex.go), which puts the listing back on the cache. Only an
// entry that has also left the directory meanwhile (retention) cannot be
// found: that is NFS3ERR_BAD_COOKIE, on which clients restart the
// listing.
//
// Positions would have been the other choice, but an index cookie cannot
// be resumed without counting from the start either, and it names another
// entry as soon as one is added or removed before it.

// nameCookie is the cookie of a directory entry.
func nameCookie(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() | 1<<63
}

// cookieCacheSize is how many entries dirCookies remembers: at about a
// hundred bytes each, a few MiB, and enough for hundreds of concurrent
// listings of Linux-sized replies.
const cookieCacheSize = 1 << 15

// dirCookies maps (directory, cookie) to the entry name the cookie was
// handed out for. It forgets the oldest entries first.
type dirCookies struct {
	seed maphash.Seed
	mu   struct {
		sync.Mutex
		names map[cookieKey]cookieName
		ring  []cookieKey // insertion order; slot i is next overwritten when next == i
		next  int
	}
}

type cookieKey struct{ dir, cookie uint64 }

type cookieName struct {
	name string
	slot int // ring slot that owns this mapping
}

func newDirCookies(size int) *dirCookies {
	c := &dirCookies{seed: maphash.MakeSeed()}
	c.mu.names = make(map[cookieKey]cookieName, size)
	c.mu.ring = make([]cookieKey, 0, size)
	return c
}

// dirKey identifies a directory listing by the principal it was made for
// and the directory's file handle (export and path). The principal keeps
// one principal's cookies from resolving in another's listing, where a
// remembered name would tell that an entry the other cannot see exists.
// It is seeded per process, so that clients cannot aim collisions at it.
func (c *dirCookies) dirKey(principal string, handle []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(principal)
	h.WriteByte(0)
	h.Write(handle)
	return h.Sum64()
}

func (c *dirCookies) get(dir, cookie uint64) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, ok := c.mu.names[cookieKey{dir, cookie}]
	return n.name, ok
}

func (c *dirCookies) put(dir uint64, ents []gonfs.DirEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range ents {
		k := cookieKey{dir, e.Cookie}
		slot := c.mu.next
		if slot < len(c.mu.ring) {
			old := c.mu.ring[slot]
			if n, ok := c.mu.names[old]; ok && n.slot == slot {
				delete(c.mu.names, old)
			}
			c.mu.ring[slot] = k
		} else {
			c.mu.ring = append(c.mu.ring, k)
		}
		c.mu.names[k] = cookieName{name: e.Info.Name(), slot: slot}
		c.mu.next = (slot + 1) % cap(c.mu.ring)
	}
}

var _ gonfs.DirPager = (*handler)(nil)

// DirPage serves one READDIR(PLUS) reply: one view page after the name
// the cookie stands for.
func (h *handler) DirPage(ctx context.Context, f billy.Filesystem, dirHandle []byte, p []string, cookie uint64, limit int) ([]gonfs.DirEntry, bool, error) {
	vf, ok := f.(*viewFS)
	if !ok {
		return nil, false, errors.New("nfs: readdir: not a file system of this server")
	}
	dir := vf.viewPath(vf.Join(p...))
	dk := h.cookies.dirKey(vf.principal, dirHandle)
	after := ""
	if cookie != 0 {
		name, ok := h.cookies.get(dk, cookie)
		if !ok {
			var err error
			if name, ok, err = h.indexes.find(ctx, vf.v, dk, dir, cookie); err != nil {
				return nil, false, vf.fail("readdir", dir, err)
			}
			if !ok {
				return nil, false, gonfs.ErrBadCookie
			}
		}
		after = name
	}
	// One more than asked for tells whether the listing ends here.
	page, err := vf.v.ReadDir(ctx, dir, after, limit+1)
	if err != nil {
		return nil, false, vf.fail("readdir", dir, err)
	}
	eof := len(page) <= limit
	page = page[:min(len(page), limit)]
	out := make([]gonfs.DirEntry, len(page))
	for i, fi := range page {
		out[i] = gonfs.DirEntry{Info: fileInfo{fi}, Cookie: nameCookie(fi.Name)}
	}
	h.cookies.put(dk, out)
	return out, eof, nil
}
