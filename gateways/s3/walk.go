package s3

import (
	"errors"
	"strings"

	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/view"
)

var errStop = errors.New("s3: listing page full")

// hasKeyPage is the ReadDir page size of hasKey: the first entry of a
// segment directory, or the manifest first in a stream directory, usually
// answers it.
const hasKeyPage = 16

type listItem struct {
	key      string
	isPrefix bool
	fi       view.FileInfo
}

// walker lists the keys of a bucket in S3 order (byte order of the whole
// key) by walking the view one ReadDir page at a time, so that a listing
// costs what it returns, not the size of the tree. Keys are only ever
// greater than start and carry prefix.
//
// Byte order of keys is not the depth-first order of directory names: the
// key "a/x" of a file in directory "a" sorts after the key "a-b" of a
// sibling, because '-' and '.' sort before '/'. So a directory is held back
// until the first sibling whose key sorts after the directory's key
// ("a/"); such held-back directories always form a stack.
//
// With a delimiter, keys roll up into common prefixes as S3 does for any
// delimiter string. A directory whose key already holds the delimiter past
// the prefix rolls up whole, without being walked; with "/" that is every
// directory, so "/" listings read no deeper than the level they show.
type walker struct {
	h          *handler
	prefix     string
	start      string
	delim      string
	limit      int
	items      []listItem
	truncated  bool
	lastPrefix string // the last common prefix added: its other keys are skipped
}

// skipRolledUp returns the start to walk from for a listing that starts
// after start. When start itself rolls up into a common prefix (as the
// marker of a page that ended on one does), every key under that prefix
// rolls up into it too and is not after start, so the walk can begin past
// all of them. Keys never hold 0xff (view names are UTF-8).
func skipRolledUp(start, prefix, delim string) string {
	if delim == "" || !strings.HasPrefix(start, prefix) {
		return start
	}
	if i := strings.Index(start[len(prefix):], delim); i >= 0 {
		return start[:len(prefix)+i+len(delim)] + "\xff"
	}
	return start
}

// rollUp returns the common prefix key rolls up into, or "" when key is
// listed as itself. key starts with the listing's prefix.
func (w *walker) rollUp(key string) string {
	if w.delim == "" {
		return ""
	}
	if i := strings.Index(key[len(w.prefix):], w.delim); i >= 0 {
		return key[:len(w.prefix)+i+len(w.delim)]
	}
	return ""
}

func (w *walker) add(it listItem) error {
	if len(w.items) == w.limit {
		w.truncated = true
		return errStop
	}
	w.items = append(w.items, it)
	return nil
}

// wanted reports whether common prefix cp is still to be listed. Keys come
// in order, so those of one prefix are adjacent.
func (w *walker) wanted(cp string) bool { return cp != w.lastPrefix && cp > w.start }

func (w *walker) addPrefix(cp string) error {
	if err := w.add(listItem{key: cp, isPrefix: true}); err != nil {
		return err
	}
	w.lastPrefix = cp
	return nil
}

// file handles a file of key key.
func (w *walker) file(key string, fi view.FileInfo) error {
	if cp := w.rollUp(key); cp != "" {
		if w.wanted(cp) {
			return w.addPrefix(cp)
		}
		return nil
	}
	if key > w.start {
		return w.add(listItem{key: key, fi: fi})
	}
	return nil
}

// run descends directly to the directory the prefix's complete elements
// name, then walks from there.
func (w *walker) run(dir string) error {
	base, rest := "", w.prefix
	for {
		el, more, ok := strings.Cut(rest, "/")
		if !ok {
			break
		}
		p := view.Join(dir, el)
		fi, err := w.h.v.Stat(w.h.ctx(), p)
		if err != nil || !fi.IsDir {
			// Nothing under a missing, unreadable or file prefix: an empty
			// listing, as a filtered listing would show.
			if err == nil || errors.Is(err, view.ErrNotFound) || errors.Is(err, view.ErrPermission) {
				return nil
			}
			return err
		}
		dir, base, rest = p, base+el+"/", more
	}
	if w.limit == 0 {
		return nil
	}
	return w.walk(dir, base, rest)
}

// walk lists dir, whose children have keys base+name, keeping names that
// start with namePrefix.
func (w *walker) walk(dir, base, namePrefix string) error {
	first := namePrefix
	if strings.HasPrefix(w.start, base) {
		nm, _, _ := strings.Cut(w.start[len(base):], "/")
		// Directories named by a prefix of nm that is followed by a byte
		// below '/' have keys after start; do not skip past them.
		if j := strings.IndexFunc(nm, func(r rune) bool { return r < '/' }); j >= 0 {
			nm = nm[:j]
		}
		first = max(first, nm)
	}
	after := names.Before(first)
	var pending []string // held-back directory names; the last has the smallest key
	flush := func(upTo string, all bool) error {
		for len(pending) > 0 {
			d := pending[len(pending)-1]
			if !all && base+d+"/" >= upTo {
				return nil
			}
			pending = pending[:len(pending)-1]
			if err := w.dir(dir, base, d); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		// Without roll-up, a page need not be longer than what can still
		// be returned (plus one, to learn whether the listing is
		// truncated). Other delimiters than "/" may roll many entries
		// into one item, and read whole pages.
		size := dirPageSize
		if w.delim == "" || w.delim == "/" {
			size = min(dirPageSize, w.limit-len(w.items)+1)
		}
		page, err := w.h.v.ReadDir(w.h.ctx(), dir, after, size)
		if errors.Is(err, view.ErrNotFound) || errors.Is(err, view.ErrPermission) {
			return nil // gone since its parent was listed, or hidden
		}
		if err != nil {
			return err
		}
		for _, fi := range page {
			if !strings.HasPrefix(fi.Name, namePrefix) {
				if fi.Name > namePrefix {
					return flush("", true)
				}
				continue
			}
			key := base + fi.Name
			if fi.IsDir {
				key += "/"
			}
			if err := flush(key, false); err != nil {
				return err
			}
			if fi.IsDir {
				pending = append(pending, fi.Name)
			} else if err := w.file(key, fi); err != nil {
				return err
			}
		}
		if len(page) < size {
			return flush("", true)
		}
		after = page[len(page)-1].Name
	}
}

// dir handles child directory name of dir: a common prefix when its key
// holds the delimiter past the prefix, otherwise its keys.
func (w *walker) dir(dir, base, name string) error {
	key := base + name + "/"
	p := view.Join(dir, name)
	if cp := w.rollUp(key); cp != "" {
		if !w.wanted(cp) {
			return nil
		}
		// S3 has no folders: a prefix is shown only for the keys under it.
		ok, err := w.hasKey(p)
		if err != nil || !ok {
			return err
		}
		return w.addPrefix(cp)
	}
	if key > w.start || strings.HasPrefix(w.start, key) {
		return w.walk(p, key, "")
	}
	return nil
}

// hasKey reports whether any file lies under directory dir.
func (w *walker) hasKey(dir string) (bool, error) {
	after := ""
	for {
		page, err := w.h.v.ReadDir(w.h.ctx(), dir, after, hasKeyPage)
		if errors.Is(err, view.ErrNotFound) || errors.Is(err, view.ErrPermission) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		// A file anywhere on the page answers without descending.
		for _, fi := range page {
			if !fi.IsDir {
				return true, nil
			}
		}
		for _, fi := range page {
			if ok, err := w.hasKey(view.Join(dir, fi.Name)); ok || err != nil {
				return ok, err
			}
		}
		if len(page) < hasKeyPage {
			return false, nil
		}
		after = page[len(page)-1].Name
	}
}
