package webhdfs

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
)

// handler serves one request through the principal's view.
type handler struct {
	s         *Server
	v         view.View
	principal acl.Principal
	how       authMethod
	w         http.ResponseWriter
	r         *http.Request
	q         params
	path      string // the request path, see requestPath
	raw       string // the request path as sent, for messages
}

func (h *handler) ctx() context.Context { return h.r.Context() }

// ops are the operations served, by upper-case op name.
var ops = map[string]func(*handler) error{
	"GETFILESTATUS":         (*handler).getFileStatus,
	"GETFILELINKSTATUS":     (*handler).getFileStatus, // the view has no symlinks
	"LISTSTATUS":            (*handler).listStatus,
	"LISTSTATUS_BATCH":      (*handler).listStatusBatch,
	"OPEN":                  (*handler).open,
	"GETCONTENTSUMMARY":     (*handler).contentSummary,
	"GETQUOTAUSAGE":         (*handler).quotaUsage,
	"GETSTATUS":             (*handler).fsStatus,
	"GETFILECHECKSUM":       (*handler).fileChecksum,
	"GETHOMEDIRECTORY":      (*handler).homeDirectory,
	"GETTRASHROOT":          (*handler).trashRoot,
	"GETSERVERDEFAULTS":     (*handler).serverDefaults,
	"CHECKACCESS":           (*handler).checkAccess,
	"GETACLSTATUS":          (*handler).aclStatus,
	"GETXATTRS":             (*handler).xattrs,
	"LISTXATTRS":            (*handler).listXattrs,
	"GETFILEBLOCKLOCATIONS": (*handler).fileBlockLocations,
	"GET_BLOCK_LOCATIONS":   (*handler).locatedBlocks,
	"GETDELEGATIONTOKEN":    (*handler).delegationToken,
	"RENEWDELEGATIONTOKEN":  (*handler).renewToken,
	"CANCELDELEGATIONTOKEN": (*handler).cancelToken,
}

// Owner and group of every entry. The view has no POSIX ownership; access
// is decided by acl grants, not by these names.
const (
	owner = "silt"
	group = "silt"
	// lsLimit is HDFS's dfs.ls.limit default, the LISTSTATUS_BATCH page.
	lsLimit = 1000
)

// fileStatus is an HdfsFileStatus as Hadoop's JsonUtil writes it; the
// field order matches its (sorted) output.
type fileStatus struct {
	AccessTime       int64  `json:"accessTime"`
	BlockSize        int64  `json:"blockSize"`
	ChildrenNum      int    `json:"childrenNum"`
	FileID           int64  `json:"fileId"`
	Group            string `json:"group"`
	Length           int64  `json:"length"`
	ModificationTime int64  `json:"modificationTime"`
	Owner            string `json:"owner"`
	PathSuffix       string `json:"pathSuffix"`
	Permission       string `json:"permission"`
	Replication      int    `json:"replication"`
	StoragePolicy    int    `json:"storagePolicy"`
	Type             string `json:"type"`
}

// status describes fi; suffix is its name relative to the listed path ("" for
// the path itself). Values follow what a NameNode reports for the same kind
// of entry: directories have no block size, replication or access time.
func (h *handler) status(fi view.FileInfo, suffix string) fileStatus {
	// Java reads fileId as a signed long; dropping the top bit keeps it
	// positive and still stable.
	id := int64(fi.ID &^ (1 << 63))
	st := fileStatus{
		FileID: id, Group: group, Owner: owner, PathSuffix: suffix,
		ModificationTime: fi.ModTime.UnixMilli(),
	}
	if fi.IsDir {
		st.Permission, st.Type = "555", "DIRECTORY"
		return st
	}
	st.AccessTime = st.ModificationTime
	st.BlockSize = h.s.cfg.BlockSize
	st.Length = fi.Size
	st.Permission, st.Type = "444", "FILE"
	st.Replication = 1
	return st
}

func (h *handler) json(v any) error {
	h.w.Header().Set("Content-Type", "application/json")
	h.w.WriteHeader(http.StatusOK)
	return json.NewEncoder(h.w).Encode(v)
}

func (h *handler) getFileStatus() error {
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return err
	}
	return h.json(map[string]fileStatus{"FileStatus": h.status(fi, "")})
}

// listStatus streams the whole listing page by page, so that a large
// directory costs one page of memory. The first page is read before the
// status line, so that errors still become RemoteExceptions; a failure
// after that aborts the response rather than end it as valid JSON.
func (h *handler) listStatus() error {
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return err
	}
	if !fi.IsDir {
		return h.json(map[string]any{"FileStatuses": map[string]any{"FileStatus": []fileStatus{h.status(fi, "")}}})
	}
	page, err := h.v.ReadDir(h.ctx(), h.path, "", lsLimit)
	if err != nil {
		return err
	}
	h.w.Header().Set("Content-Type", "application/json")
	h.w.WriteHeader(http.StatusOK)
	h.w.Write([]byte(`{"FileStatuses":{"FileStatus":[`))
	first := true
	for {
		for _, c := range page {
			b, _ := json.Marshal(h.status(c, c.Name))
			if !first {
				h.w.Write([]byte{','})
			}
			first = false
			h.w.Write(b)
		}
		if len(page) < lsLimit {
			break
		}
		if page, err = h.v.ReadDir(h.ctx(), h.path, page[len(page)-1].Name, lsLimit); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	h.w.Write([]byte("]}}\n"))
	return nil
}

// listStatusBatch serves one page after startAfter. One entry more than
// the page is read only to learn whether the listing goes on: the view
// cannot count what remains without listing it, so remainingEntries is 1
// when more follow (Hadoop only tests it for > 0) and 0 at the end.
func (h *handler) listStatusBatch() error {
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return err
	}
	out := []fileStatus{}
	remaining := 0
	if !fi.IsDir {
		out = append(out, h.status(fi, ""))
	} else {
		page, err := h.v.ReadDir(h.ctx(), h.path, h.q.startAfter, lsLimit+1)
		if err != nil {
			return err
		}
		if len(page) > lsLimit {
			page, remaining = page[:lsLimit], 1
		}
		for _, c := range page {
			out = append(out, h.status(c, c.Name))
		}
	}
	return h.json(map[string]any{"DirectoryListing": map[string]any{
		"partialListing":   map[string]any{"FileStatuses": map[string]any{"FileStatus": out}},
		"remainingEntries": remaining,
	}})
}

type summary struct{ dirs, files, length int64 }

// walk adds the subtree at p to sum, listing directories page by page.
func (h *handler) walk(p string, fi view.FileInfo, sum *summary) error {
	if !fi.IsDir {
		sum.files++
		sum.length += fi.Size
		return nil
	}
	sum.dirs++
	after := ""
	for {
		page, err := h.v.ReadDir(h.ctx(), p, after, view.DefaultPageSize)
		if err != nil {
			return err
		}
		for _, c := range page {
			if err := h.walk(view.Join(p, c.Name), c, sum); err != nil {
				return err
			}
		}
		if len(page) < view.DefaultPageSize {
			return nil
		}
		after = page[len(page)-1].Name
	}
}

// summarize walks the subtree at the request path.
func (h *handler) summarize() (summary, error) {
	var sum summary
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return sum, err
	}
	err = h.walk(h.path, fi, &sum)
	return sum, err
}

// contentSummary reports ecPolicy "Replicated", as HDFS does for content
// that is not erasure coded: Hadoop's ContentSummary shows any other value
// as "EC:<value>" (hadoop fs -count -e, -ls -e).
func (h *handler) contentSummary() error {
	sum, err := h.summarize()
	if err != nil {
		return err
	}
	return h.json(map[string]any{"ContentSummary": map[string]any{
		"directoryCount": sum.dirs, "ecPolicy": "Replicated", "fileCount": sum.files, "length": sum.length,
		"quota": h.nsQuota(), "spaceConsumed": sum.length, "spaceQuota": -1, "typeQuota": map[string]any{},
		// silt has no snapshots; HDFS sends these whatever the path.
		"snapshotDirectoryCount": 0, "snapshotFileCount": 0, "snapshotLength": 0, "snapshotSpaceConsumed": 0,
	}})
}

// nsQuota is the namespace quota of the request path: HDFS's root always
// has one, Long.MAX_VALUE (FSDirectory's default for the root inode);
// nothing else has any.
func (h *handler) nsQuota() int64 {
	if h.path == "/" {
		return math.MaxInt64
	}
	return -1
}

// quotaUsage answers GETQUOTAUSAGE (hadoop fs -count -u): no quotas, and
// the subtree's entries and bytes as used.
func (h *handler) quotaUsage() error {
	sum, err := h.summarize()
	if err != nil {
		return err
	}
	return h.json(map[string]any{"QuotaUsage": map[string]any{
		"fileAndDirectoryCount": sum.dirs + sum.files, "quota": h.nsQuota(), "spaceConsumed": sum.length,
		"spaceQuota": -1, "typeQuota": map[string]any{},
	}})
}

// fsStatus answers GETSTATUS (hadoop fs -df). The store behind the view
// has no capacity to report, so capacity is what the principal can see
// under the path, all of it used, and nothing remains: the head is
// read-only.
func (h *handler) fsStatus() error {
	sum, err := h.summarize()
	if err != nil {
		return err
	}
	return h.json(map[string]any{"FsStatus": map[string]int64{
		"capacity": sum.length, "used": sum.length, "remaining": 0,
	}})
}

// fileChecksum is served here, where a NameNode redirects to a DataNode;
// the NameNode's path check before that redirect is kept.
func (h *handler) fileChecksum() error {
	if !validName(h.raw) {
		return errInvalidPath(h.raw)
	}
	f, err := h.v.Open(h.ctx(), h.path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum, err := md5MD5CRC32C(h.ctx(), f, f.Size(), h.s.cfg.BlockSize)
	if err != nil {
		return fmt.Errorf("checksum %s: %w", h.path, err)
	}
	return h.json(map[string]any{"FileChecksum": sum})
}

func (h *handler) homeDirectory() error {
	return h.json(map[string]string{"Path": "/user/" + h.principal.Name})
}

func (h *handler) trashRoot() error {
	return h.json(map[string]string{"Path": "/user/" + h.principal.Name + "/.Trash"})
}

// serverDefaults reports HDFS's defaults where they describe silt
// (CRC32C checksums every 512 bytes, no trash, no encryption: an empty
// keyProviderUri keeps clients off the encryption path).
func (h *handler) serverDefaults() error {
	return h.json(map[string]any{"FsServerDefaults": map[string]any{
		"blockSize": h.s.cfg.BlockSize, "bytesPerChecksum": bytesPerCRC, "checksumType": 2,
		"defaultStoragePolicyId": 7, "encryptDataTransfer": false, "fileBufferSize": 4096,
		"keyProviderUri": "", "replication": 1, "trashInterval": 0, "writePacketSize": 65536,
	}})
}

// checkAccess allows reading what the principal can see, executing
// (traversing) directories, and never writing.
func (h *handler) checkAccess() error {
	a := h.q.fsAction
	if a == "" {
		return errRequired("fsaction", h.q.op)
	}
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return err
	}
	if a[1] == 'w' || (a[2] == 'x' && !fi.IsDir) {
		return errAccess(fmt.Sprintf("Permission denied: user=%s, access=%s, inode=%q", h.principal.Name, a, h.path))
	}
	h.w.WriteHeader(http.StatusOK)
	return nil
}

// errRequired is the NameNode's validateOpParams refusal.
func errRequired(param, op string) *remoteError {
	return errArgument(fmt.Sprintf("Required param %s for op: %s is null or empty", param, op))
}

func (h *handler) aclStatus() error {
	fi, err := h.v.Stat(h.ctx(), h.path)
	if err != nil {
		return err
	}
	return h.json(map[string]any{"AclStatus": map[string]any{
		"entries": []string{}, "group": group, "owner": owner,
		"permission": h.status(fi, "").Permission, "stickyBit": false,
	}})
}

// xattrs answers GETXATTRS as for an entry without extended attributes.
// The names are checked first, as HDFS checks them before it looks the
// path up: their form (XAttrHelper.buildXAttr), then the caller's right
// to their namespace. No silt principal is the HDFS superuser, so only
// user.* names may be read (and the security.hdfs.unreadable.by.superuser
// marker, which HDFS lets anyone ask for).
func (h *handler) xattrs() error {
	if h.q.encoding == "" {
		return errRequired("encoding", h.q.op)
	}
	var names []string
	for _, n := range h.q.values["xattr.name"] {
		if n == "" {
			continue // XAttrNameParam's default: no name
		}
		prefixed, err := xattrName(n)
		if err != nil {
			return err
		}
		names = append(names, prefixed)
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "user.") && n != "security.hdfs.unreadable.by.superuser" {
			return errAccess("User doesn't have permission for xattr: " + n)
		}
	}
	if _, err := h.v.Stat(h.ctx(), h.path); err != nil {
		return err
	}
	if len(names) > 0 {
		return errXAttrNotFound
	}
	return h.json(map[string]any{"XAttrs": []string{}})
}

// xattrName checks an xattr name as XAttrHelper.buildXAttr does and
// returns it with its namespace in lower case, as HDFS prints it.
func xattrName(n string) (string, error) {
	i := strings.IndexByte(n, '.')
	switch {
	case i < 3:
		return "", errHadoopArgument("An XAttr name must be prefixed with user/trusted/security/system/raw, followed by a '.'")
	case i == len(n)-1:
		return "", errHadoopArgument("XAttr name cannot be empty.")
	}
	ns := strings.ToLower(n[:i])
	switch ns {
	case "user", "trusted", "security", "system", "raw":
		return ns + n[i:], nil
	}
	return "", errHadoopArgument("An XAttr name must be prefixed with user/trusted/security/system/raw, followed by a '.'")
}

func (h *handler) listXattrs() error {
	if _, err := h.v.Stat(h.ctx(), h.path); err != nil {
		return err
	}
	return h.json(map[string]string{"XAttrNames": "[]"})
}

// hostPort is how this server was reached; block locations name it as
// the (only) host holding every block.
func (h *handler) hostPort() (string, int) {
	host, port, err := net.SplitHostPort(h.r.Host)
	if err != nil {
		if h.r.TLS != nil {
			return h.r.Host, 443
		}
		return h.r.Host, 80
	}
	n, _ := strconv.Atoi(port)
	return host, n
}
