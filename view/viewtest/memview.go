package viewtest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"path"
	"sort"

	"time"

	"github.com/silt-io/silt/view"
)

// MemView is an in-memory View over a fixed set of files, for testing
// heads without a store. Directories are implied by file paths plus
// any listed explicitly.
type MemView struct {
	mtime   time.Time
	files   map[string][]byte
	entries map[string][]string // dir → sorted child names
}

// NewMemView builds a MemView from a Fixture. Every entry's ModTime is
// mtime.
func NewMemView(fx Fixture, mtime time.Time) *MemView {
	m := &MemView{mtime: mtime, files: map[string][]byte{}, entries: map[string][]string{"/": nil}}
	addDir := func(d string) {
		for ; d != "/"; d = path.Dir(d) {
			if _, ok := m.entries[d]; ok {
				return
			}
			m.entries[d] = nil
			defer func(d string) { // parents first, so each exists when its child is added
				parent := path.Dir(d)
				m.entries[parent] = append(m.entries[parent], path.Base(d))
			}(d)
		}
	}
	for p, data := range fx.Files {
		m.files[p] = bytes.Clone(data)
		addDir(path.Dir(p))
		m.entries[path.Dir(p)] = append(m.entries[path.Dir(p)], path.Base(p))
	}
	for _, d := range fx.Dirs {
		addDir(d)
	}
	for _, names := range m.entries {
		sort.Strings(names)
	}
	return m
}

func (m *MemView) info(p string) (view.FileInfo, error) {
	if _, err := view.Split(p); err != nil {
		return view.FileInfo{}, err
	}
	name := path.Base(p)
	if data, ok := m.files[p]; ok {
		sum := md5.Sum(data)
		return view.FileInfo{Name: name, Size: int64(len(data)), ModTime: m.mtime, ETag: hex.EncodeToString(sum[:]), ID: view.PathID(p)}, nil
	}
	if _, ok := m.entries[p]; ok {
		return view.FileInfo{Name: name, ModTime: m.mtime, IsDir: true, ID: view.PathID(p)}, nil
	}
	return view.FileInfo{}, fmt.Errorf("%w: %s", view.ErrNotFound, p)
}

// Stat implements view.View.
func (m *MemView) Stat(_ context.Context, p string) (view.FileInfo, error) { return m.info(p) }

// ReadDir implements view.View.
func (m *MemView) ReadDir(_ context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	fi, err := m.info(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir {
		return nil, fmt.Errorf("%w: %s", view.ErrNotDir, dir)
	}
	names := m.entries[dir]
	i := sort.Search(len(names), func(i int) bool { return names[i] > after })
	var out []view.FileInfo
	for ; i < len(names) && len(out) < view.Limit(limit); i++ {
		c, err := m.info(view.Join(dir, names[i]))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Open implements view.View.
func (m *MemView) Open(_ context.Context, p string) (view.File, error) {
	fi, err := m.info(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir {
		return nil, fmt.Errorf("%w: %s", view.ErrIsDir, p)
	}
	return memFile{bytes.NewReader(m.files[p])}, nil
}

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

var _ view.View = (*MemView)(nil)
