package nfs

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	billy "github.com/go-git/go-billy/v5"
	"github.com/silt-io/silt/gateways/nfs/internal/xdr"
)

// Patched in: paged READDIR and READDIRPLUS.
//
// Upstream listed the whole directory for every reply and found its place
// by counting entries up to the cookie, so listing n entries cost
// O(n²/page). A Handler that implements DirPager is asked instead for
// the entries after a cookie, a reply's worth at a time, and the
// handler decides what a cookie stands for.

// DirEntry is one entry of a directory page and the cookie that resumes
// the listing after it.
type DirEntry struct {
	Info   fs.FileInfo
	Cookie uint64
}

// DirPager is an optional extension of Handler.
type DirPager interface {
	// DirPage returns up to limit entries of the directory at path in fs
	// (whose handle is dirHandle) that follow the entry with the given
	// cookie, in listing order, and whether they are the last ones.
	// Cookie 0 starts at the first entry. Cookies 1 and 2 belong to "."
	// and "..", which are added here: entries' cookies must be above 2.
	// A cookie the handler cannot place is ErrBadCookie.
	DirPage(ctx context.Context, fs billy.Filesystem, dirHandle []byte, path []string, cookie uint64, limit int) ([]DirEntry, bool, error)
}

// ErrBadCookie is returned by a DirPager for a cookie it cannot resume
// from; the client is answered NFS3ERR_BAD_COOKIE.
var ErrBadCookie = errors.New("nfs: unknown directory cookie")

// Cookies of "." and "..".
const (
	cookieDot    = 1
	cookieDotDot = 2
)

// XDR sizes of READDIR(PLUS) reply parts, for filling a reply up to the
// client's count exactly (upstream guessed 512 bytes per entry).
const (
	fattrSize = 84 // fattr3
	// status, post_op_attr flag, cookieverf; then the list's final
	// value_follows and eof.
	dirReplyFixed = 4 + 4 + 8 + 4 + 4
	// value_follows, fileid, name length, cookie (name bytes extra).
	dirEntryFixed = 4 + 8 + 4 + 8
	// name_attributes and name_handle flags, attributes, handle length
	// (handle bytes extra).
	plusEntryFixed = 4 + fattrSize + 4 + 4
	// maxPageEntries bounds what one reply asks the pager for.
	maxPageEntries = 4096
)

func xdrPad(n int) int { return (n + 3) &^ 3 }

// dirEntryOut is an entry as encoded.
type dirEntryOut struct {
	fileID uint64
	name   string
	cookie uint64
	attrs  *FileAttribute
	handle []byte
}

// onReadDirPaged answers READDIR (plus false) or READDIRPLUS from a
// DirPager. maxcount bounds the whole reply, as RFC 1813 has it for
// READDIR's count and READDIRPLUS's maxcount. READDIRPLUS's dircount
// only advises the server how much directory information to read; like
// the Linux server, this one fills the reply up to maxcount instead.
//
// The cookie verifier is always 0 and never checked: cookies are
// resolved by the pager from names, not positions, so they stay valid
// while a directory grows. A verifier that changed with the directory
// would make the Linux client, which restarts a listing from the start
// on NFS3ERR_BAD_COOKIE and takes the new verifier from the first reply,
// restart for ever on a directory that grows faster than it is listed.
func onReadDirPaged(ctx context.Context, w *response, userHandle Handler, pager DirPager, plus bool, handle []byte, cookie uint64, maxcount uint32) error {
	fsys, p, err := userHandle.FromHandle(w.caller, handle)
	if err != nil {
		return handleError(err)
	}
	dirAttr := tryStat(fsys, p)
	entSize := func(e *dirEntryOut) int {
		n := dirEntryFixed + xdrPad(len(e.name))
		if plus {
			n += plusEntryFixed + xdrPad(len(e.handle))
		}
		return n
	}
	minEntry := dirEntryFixed + 4
	if plus {
		minEntry += plusEntryFixed
	}
	budget := int(maxcount) - dirReplyFixed
	if dirAttr != nil {
		budget -= fattrSize
	}
	if budget < minEntry {
		return &NFSStatusError{NFSStatusTooSmall, nil}
	}

	var out []dirEntryOut
	used := 0
	add := func(e dirEntryOut) bool {
		if !plus {
			e.attrs, e.handle = nil, nil
		}
		n := entSize(&e)
		if used+n > budget {
			return false
		}
		used += n
		out = append(out, e)
		return true
	}
	if cookie < cookieDotDot {
		// At the export root ".." is the root itself.
		parent, parentAttr, parentHandle := p, dirAttr, handle
		if len(p) > 0 {
			parent = p[:len(p)-1]
			parentAttr = tryStat(fsys, parent)
			parentHandle = userHandle.ToHandle(fsys, parent)
		}
		dots := []dirEntryOut{
			{name: ".", cookie: cookieDot, attrs: dirAttr, handle: handle},
			{name: "..", cookie: cookieDotDot, attrs: parentAttr, handle: parentHandle},
		}
		if dirAttr != nil {
			dots[0].fileID = dirAttr.Fileid
		}
		if parentAttr != nil {
			dots[1].fileID = parentAttr.Fileid
		}
		for _, d := range dots[cookie:] {
			if !add(d) {
				return &NFSStatusError{NFSStatusTooSmall, nil}
			}
		}
	}
	after := cookie
	if after <= cookieDotDot {
		after = 0
	}
	limit := min((budget-used)/minEntry+1, maxPageEntries)
	page, eof, err := pager.DirPage(ctx, fsys, handle, p, after, limit)
	if err != nil {
		return dirPageError(err)
	}
	for i, e := range page {
		o := dirEntryOut{name: e.Info.Name(), cookie: e.Cookie}
		full := joinPath(p, o.name)
		attrs := ToFileAttribute(e.Info, fsys.Join(full...))
		o.fileID = attrs.Fileid
		if plus {
			o.attrs = attrs
			o.handle = userHandle.ToHandle(fsys, full)
		}
		if !add(o) {
			if i == 0 && len(out) == 0 {
				return &NFSStatusError{NFSStatusTooSmall, nil}
			}
			eof = false
			break
		}
	}

	body := bytes.NewBuffer(make([]byte, 0, dirReplyFixed+fattrSize+used))
	if err := writeDirReply(body, plus, dirAttr, out, eof); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	if err := w.Write(body.Bytes()); err != nil {
		return &NFSStatusError{NFSStatusServerFault, err}
	}
	return nil
}

func writeDirReply(b *bytes.Buffer, plus bool, dirAttr *FileAttribute, out []dirEntryOut, eof bool) error {
	if err := xdr.Write(b, uint32(NFSStatusOk)); err != nil {
		return err
	}
	if err := WritePostOpAttrs(b, dirAttr); err != nil {
		return err
	}
	if err := xdr.Write(b, uint64(0)); err != nil { // cookieverf
		return err
	}
	for _, e := range out {
		if err := xdr.Write(b, uint32(1)); err != nil { // value_follows
			return err
		}
		if err := xdr.Write(b, e.fileID); err != nil {
			return err
		}
		if err := xdr.Write(b, e.name); err != nil {
			return err
		}
		if err := xdr.Write(b, e.cookie); err != nil {
			return err
		}
		if !plus {
			continue // READDIR's entry3 ends here
		}
		if err := WritePostOpAttrs(b, e.attrs); err != nil {
			return err
		}
		if e.handle == nil {
			if err := xdr.Write(b, uint32(0)); err != nil {
				return err
			}
			continue
		}
		if err := xdr.Write(b, uint32(1)); err != nil {
			return err
		}
		if err := xdr.Write(b, e.handle); err != nil {
			return err
		}
	}
	if err := xdr.Write(b, uint32(0)); err != nil { // no more entries
		return err
	}
	return xdr.Write(b, eof)
}

// dirPageError maps a DirPager error to its NFS status.
func dirPageError(err error) error {
	switch {
	case errors.Is(err, ErrBadCookie):
		return &NFSStatusError{NFSStatusBadCookie, err}
	case os.IsPermission(err):
		return &NFSStatusError{NFSStatusAccess, err}
	case errors.Is(err, syscall.ENOTDIR):
		return &NFSStatusError{NFSStatusNotDir, err}
	case os.IsNotExist(err):
		return &NFSStatusError{NFSStatusNoEnt, err}
	case errors.Is(err, syscall.EINTR):
		return &NFSStatusError{NFSStatusJukebox, err}
	}
	return &NFSStatusError{NFSStatusIO, err}
}
