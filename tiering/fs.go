package tiering

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/silt-io/silt/internal/datadir"
)

// FSBackend keeps tier 2 in a directory (local disk or a mounted share).
// Like the rest of the data dir, its directories are 0700 and its objects
// 0600: they are the tenants' events, for silt's user only; the heads
// serve them to whoever the ACL allows.
// An upload goes to a temp file beside its target, named by the key, so
// that a re-upload after a crash reuses (truncates) it and Delete can find
// it; Finish fsyncs, renames and fsyncs the directory, so a finished
// object is durable and an unfinished one is never visible under its key.
type FSBackend struct {
	root string
}

// tempPrefix marks unfinished uploads; List and the view never show them.
const tempPrefix = ".tmp-"

// OpenFS opens (creating if needed) an fs backend rooted at dir.
func OpenFS(dir string) (*FSBackend, error) {
	if err := mkdirAllDurable(dir); err != nil {
		return nil, fmt.Errorf("create tier-2 dir %s: %w", dir, err)
	}
	return &FSBackend{root: dir}, nil
}

// path maps a key to a file, refusing keys that could leave the root or
// collide with temp files.
func (b *FSBackend) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("tier-2 key %q: must be relative and name a file", key)
	}
	for _, e := range strings.Split(key, "/") {
		if e == "" || e == "." || e == ".." || strings.HasPrefix(e, tempPrefix) {
			return "", fmt.Errorf("tier-2 key %q: invalid element %q", key, e)
		}
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

func tempPath(p string) string {
	return filepath.Join(filepath.Dir(p), tempPrefix+filepath.Base(p))
}

// Create implements Backend.
func (b *FSBackend) Create(_ context.Context, key string) (Writer, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	if err := mkdirAllDurable(filepath.Dir(p)); err != nil {
		return nil, fmt.Errorf("create tier-2 dir for %s: %w", key, err)
	}
	tmp := tempPath(p)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, datadir.FileMode)
	if err != nil {
		return nil, fmt.Errorf("create tier-2 upload %s: %w", key, err)
	}
	// A temp file reused from a crashed upload keeps the mode it was
	// created with, which older versions made 0644.
	if err := f.Chmod(datadir.FileMode); err != nil {
		f.Close()
		return nil, fmt.Errorf("create tier-2 upload %s: %w", key, err)
	}
	return &fsWriter{f: f, tmp: tmp, final: p}, nil
}

type fsWriter struct {
	f          *os.File
	tmp, final string
	done       bool
	written    int64 // bytes written
	started    int64 // bytes whose writeback has been started
}

// writebackBytes is how much an upload writes before it asks the kernel
// to start writing it to disk. Without it the whole chunk waits in the
// page cache for Finish's fsync, so a window of chunks built together
// alternates between keeping the CPU busy (encoding, hashing) and
// keeping the disk busy (their fsyncs); with it the two overlap, and
// Finish finds most of the chunk on disk already.
const writebackBytes = 1 << 20

func (w *fsWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.written += int64(n)
	if w.written-w.started >= writebackBytes {
		// Asynchronous (SYNC_FILE_RANGE_WRITE only waits for nothing):
		// durability still comes from Finish's fsync. Where the call is
		// not available the data simply waits for it.
		startWriteback(w.f, w.started, w.written-w.started)
		w.started = w.written
	}
	return n, err
}

func (w *fsWriter) Finish() error {
	if w.done {
		return errors.New("tier-2 upload already finished or aborted")
	}
	w.done = true
	err := w.f.Sync()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.tmp, w.final)
	}
	if err == nil {
		err = syncDir(filepath.Dir(w.final))
	}
	if err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("finish tier-2 upload %s: %w", w.final, err)
	}
	return nil
}

func (w *fsWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	if err := os.Remove(w.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("abort tier-2 upload %s: %w", w.final, err)
	}
	return nil
}

// Open implements Backend.
func (b *FSBackend) Open(_ context.Context, key string) (Object, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return nil, fmt.Errorf("open tier-2 object %s: %w", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat tier-2 object %s: %w", key, err)
	}
	return fsObject{f, st.Size()}, nil
}

type fsObject struct {
	*os.File
	size int64
}

func (o fsObject) Size() int64 { return o.size }

// Stat implements Backend.
func (b *FSBackend) Stat(_ context.Context, key string) (ObjectInfo, error) {
	p, err := b.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ObjectInfo{}, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat tier-2 object %s: %w", key, err)
	}
	if st.IsDir() {
		return ObjectInfo{}, fmt.Errorf("%w: %s is a directory", ErrNotExist, key)
	}
	return ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete implements Backend.
func (b *FSBackend) Delete(_ context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	for _, x := range []string{tempPath(p), p} {
		if err := os.Remove(x); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("delete tier-2 object %s: %w", key, err)
		}
	}
	if err := syncDir(filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete tier-2 object %s: %w", key, err)
	}
	return nil
}

// List implements Backend. It walks only the directory the prefix points
// into, so listing one segment does not read the whole tree.
func (b *FSBackend) List(_ context.Context, prefix string) ([]string, error) {
	base := prefix
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i]
	} else {
		base = ""
	}
	start := filepath.Join(b.root, filepath.FromSlash(base))
	var keys []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), tempPrefix) {
			return nil
		}
		rel, err := filepath.Rel(b.root, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list tier-2 prefix %q: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// mkdirAllDurable creates dir and syncs the parent of every directory it
// created, so that objects renamed into it survive a crash.
func mkdirAllDurable(dir string) error {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, datadir.DirMode); err != nil {
		return err
	}
	for _, d := range missing {
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	return nil
}

var _ Backend = (*FSBackend)(nil)
