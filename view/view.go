// Package view is the read-only virtual filesystem every protocol head
// serves: S3, NFSv3 and WebHDFS all consume a View, so that they show the
// same files with the same names, sizes, checksums, times and identities.
//
// The tree is
//
//	/
//	/<tenant>
//	/<tenant>/<stream>
//	/<tenant>/<stream>/_manifest.json
//	/<tenant>/<stream>/segment=<id>
//	/<tenant>/<stream>/segment=<id>/<chunk>
//
// A View has no mutators: read-only comes from the type, so no head needs
// its own "is this a write?" checks against the data.
package view

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"time"
)

// Errors returned by every View; heads map them with errors.Is.
var (
	ErrNotFound   = errors.New("view: not found")
	ErrNotDir     = errors.New("view: not a directory")
	ErrIsDir      = errors.New("view: is a directory")
	ErrPermission = errors.New("view: permission denied")
)

// Names shared by implementations and heads.
const (
	// ManifestName is the per-stream manifest file. The '_' prefix makes
	// Hadoop and Spark skip it when they read a stream directory.
	ManifestName = "_manifest.json"
	// SegmentPrefix starts a segment directory name (Hive-style, so that
	// partition discovery adds a "segment" column).
	SegmentPrefix = "segment="
	// DefaultPageSize is used by ReadDir when limit <= 0.
	DefaultPageSize = 1000
)

// FileInfo describes one entry.
type FileInfo struct {
	Name    string
	Size    int64
	ModTime time.Time
	IsDir   bool
	// ETag is the hex MD5 of a file's content (the S3 ETag of a
	// single-part object); empty for directories.
	ETag string
	// ID is a stable identity derived from the entry's path, the same
	// across restarts (NFS fileid, WebHDFS fileId).
	ID uint64
}

// File is an open file; its content does not change while it is open.
// Chunk files never change at all once visible; generated files (the
// manifest) may differ between one Open and the next.
type File interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// View is a read-only filesystem. Paths are slash-separated, absolute and
// clean ("/" is the root; no trailing slash, no "." or ".." elements).
type View interface {
	// Stat describes the entry at path.
	Stat(ctx context.Context, path string) (FileInfo, error)
	// ReadDir lists up to limit entries of dir, in byte order of their
	// names, starting after the name after ("" starts at the beginning).
	// Paging by name rather than by position keeps the cost of a page
	// independent of where it is, and stays correct while entries are
	// added. A short page (fewer than limit) means the listing ended.
	ReadDir(ctx context.Context, dir string, after string, limit int) ([]FileInfo, error)
	// Open opens a file for reading.
	Open(ctx context.Context, path string) (File, error)
}

// StreamSets is implemented by views that know each stream's stream set,
// so that acl.Wrap can apply "<tenant>/set:<name>" grants as the native
// API does. StreamSet returns "" for a stream in no set or one that does
// not exist.
type StreamSets interface {
	StreamSet(ctx context.Context, tenant, stream string) string
}

// Split checks that p is a clean absolute path and returns its elements
// ("/" has none). Implementations use it so that all agree on what a
// valid path is.
func Split(p string) ([]string, error) {
	if p == "/" {
		return nil, nil
	}
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") {
		return nil, fmt.Errorf("%w: %q is not a clean absolute path", ErrNotFound, p)
	}
	parts := strings.Split(p[1:], "/")
	for _, e := range parts {
		if e == "" || e == "." || e == ".." {
			return nil, fmt.Errorf("%w: %q is not a clean absolute path", ErrNotFound, p)
		}
	}
	return parts, nil
}

// Join builds the path of a child entry.
func Join(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// Limit returns the page size ReadDir should use for a requested limit.
func Limit(limit int) int {
	if limit <= 0 {
		return DefaultPageSize
	}
	return limit
}

// PathID is the stable identity implementations give an entry: FNV-1a
// (64-bit) of its path, never 0 (some NFS clients treat fileid 0 as unset).
func PathID(p string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(p))
	if id := h.Sum64(); id != 0 {
		return id
	}
	return 1
}
