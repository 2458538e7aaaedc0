package webhdfs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/silt-io/silt/view"
)

// prefix is where WebHDFS lives on a NameNode's HTTP server.
const prefix = "/webhdfs/v1"

// requestPath reads a request path as a NameNode does. raw is the path as
// sent, which HDFS's messages quote. p drops empty elements ("//", a
// trailing "/"), which HDFS resolves, but keeps "." and "..": HDFS does
// not resolve them, it looks them up as names, and no entry has one. So
// p is a clean view path unless it has such an element (see dotted).
func requestPath(urlPath string) (raw, p string, ok bool) {
	rest, ok := strings.CutPrefix(urlPath, prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", "", false
	}
	if rest == "" {
		rest = "/"
	}
	var elems []string
	for _, e := range strings.Split(rest, "/") {
		if e != "" {
			elems = append(elems, e)
		}
	}
	return rest, "/" + strings.Join(elems, "/"), true
}

// dotted reports whether p has a "." or ".." element.
func dotted(p string) bool {
	for _, e := range strings.Split(p, "/") {
		if e == "." || e == ".." {
			return true
		}
	}
	return false
}

// validName is HDFS's DFSUtilClient.isValidName, which the NameNode
// applies to the ops it redirects to a DataNode (OPEN, GETFILECHECKSUM):
// no "." or ".." element, no ':' and no "//" except at the very end.
func validName(raw string) bool {
	if !strings.HasPrefix(raw, "/") {
		return false
	}
	elems := strings.Split(raw, "/")
	for len(elems) > 1 && elems[len(elems)-1] == "" {
		elems = elems[:len(elems)-1]
	}
	for i, e := range elems {
		if e == "." || e == ".." || strings.Contains(e, ":") || (e == "" && i != 0) {
			return false
		}
	}
	return true
}

// literalView stands between the head and a view that takes clean paths
// only: a path with a "." or ".." element names nothing, as in HDFS,
// instead of another entry.
type literalView struct{ view.View }

func notThere(p string) error { return fmt.Errorf("%w: %s", view.ErrNotFound, p) }

func (v literalView) Stat(ctx context.Context, p string) (view.FileInfo, error) {
	if dotted(p) {
		return view.FileInfo{}, notThere(p)
	}
	return v.View.Stat(ctx, p)
}

func (v literalView) Open(ctx context.Context, p string) (view.File, error) {
	if dotted(p) {
		return nil, notThere(p)
	}
	return v.View.Open(ctx, p)
}

func (v literalView) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	if dotted(dir) {
		return nil, notThere(dir)
	}
	return v.View.ReadDir(ctx, dir, after, limit)
}

// parent is p without its last element. Unlike path.Dir it does not clean,
// so the parent of "/a/.." is "/a", as HDFS's traversal sees it.
func parent(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// notFoundFormats are the FileNotFoundException messages each op's code
// path in HDFS 3.4 writes; %s is the path as sent.
var notFoundFormats = map[string]string{
	"LISTSTATUS":       "File %s does not exist.",
	"LISTSTATUS_BATCH": "File %s does not exist.",
	"GETQUOTAUSAGE":    "File/Directory does not exist: %s",
	"OPEN":             "File %s not found.",
	"GETFILECHECKSUM":  "File %s not found.",
	"GETACLSTATUS":     "cannot find %s",
	"GETXATTRS":        "cannot find %s",
	"LISTXATTRS":       "cannot find %s",
	"CHECKACCESS":      "Path not found: %s",
}

// explain turns the view's "not found" for the request path into what a
// NameNode answers a caller who is not its superuser: when an ancestor is
// a file, its permission check fails on traversing it (403
// AccessControlException "<file> (is not a directory)"); otherwise the
// op's FileNotFoundException. Other errors pass unchanged. The ancestors
// are looked up through the principal's view, and any refusal there
// leaves the plain "not found", so nothing hidden is revealed.
func (h *handler) explain(err error) error {
	var re *remoteError
	if errors.As(err, &re) || !(errors.Is(err, view.ErrNotFound) || errors.Is(err, view.ErrNotDir)) {
		return err
	}
	for q := parent(h.path); q != "/"; q = parent(q) {
		fi, serr := h.v.Stat(h.ctx(), q)
		if serr == nil {
			if !fi.IsDir {
				return errAccess(q + " (is not a directory)")
			}
			break
		}
		if !errors.Is(serr, view.ErrNotFound) && !errors.Is(serr, view.ErrNotDir) {
			break
		}
	}
	format, ok := notFoundFormats[h.q.op]
	if !ok {
		format = "File does not exist: %s"
	}
	return errNotFound(fmt.Sprintf(format, h.raw))
}
