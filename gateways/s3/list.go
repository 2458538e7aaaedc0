package s3

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/silt-io/silt/view"
)

const (
	s3NS        = "http://s3.amazonaws.com/doc/2006-03-01/"
	maxKeysCap  = 1000
	timeFormat  = "2006-01-02T15:04:05.000Z"
	dirPageSize = 1000
)

func writeXML(w http.ResponseWriter, r *http.Request, v any) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	w.Write([]byte(xml.Header))
	xml.NewEncoder(w).Encode(v)
}

type bucketXML struct {
	Name         string
	CreationDate string
}

type listBucketsResult struct {
	XMLName struct{}    `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListAllMyBucketsResult"`
	Owner   ownerXML    `xml:"Owner"`
	Buckets []bucketXML `xml:"Buckets>Bucket"`
}

type ownerXML struct {
	ID          string
	DisplayName string
}

// listBuckets lists the tenants the principal may see; the wrapped view
// does the filtering.
func (h *handler) listBuckets() {
	var out []bucketXML
	after := ""
	for {
		page, err := h.v.ReadDir(h.ctx(), "/", after, dirPageSize)
		if err != nil {
			h.fail(err, targetBucket)
			return
		}
		for _, fi := range page {
			if fi.IsDir {
				out = append(out, bucketXML{Name: fi.Name, CreationDate: fi.ModTime.UTC().Format(timeFormat)})
			}
		}
		if len(page) < dirPageSize {
			break
		}
		after = page[len(page)-1].Name
	}
	writeXML(h.w, h.r, listBucketsResult{Owner: ownerXML{ID: "silt", DisplayName: "silt"}, Buckets: out})
}

type objectXML struct {
	Key          string
	LastModified string
	ETag         string
	Size         int64
	StorageClass string
}

type prefixXML struct{ Prefix string }

type listResult struct {
	XMLName               struct{} `xml:"http://s3.amazonaws.com/doc/2006-03-01/ ListBucketResult"`
	Name                  string
	Prefix                string
	Marker                *string `xml:",omitempty"`
	NextMarker            string  `xml:",omitempty"`
	StartAfter            string  `xml:",omitempty"`
	ContinuationToken     string  `xml:",omitempty"`
	NextContinuationToken string  `xml:",omitempty"`
	KeyCount              *int    `xml:",omitempty"`
	MaxKeys               int
	Delimiter             string `xml:",omitempty"`
	EncodingType          string `xml:",omitempty"`
	IsTruncated           bool
	Contents              []objectXML
	CommonPrefixes        []prefixXML
}

// listObjects answers ListObjects (V1) and ListObjectsV2.
func (h *handler) listObjects(bucket string) {
	q := h.r.URL.Query()
	v2 := q.Get("list-type") == "2"
	dir, ok := h.bucketDir(bucket)
	if !ok {
		return
	}
	maxKeys := maxKeysCap
	if s := q.Get("max-keys"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			h.fail(errInvalidArgument("max-keys must be a non-negative integer"), targetBucket)
			return
		}
		maxKeys = min(n, maxKeysCap)
	}
	delim := q.Get("delimiter")
	if delim != "" && delim != "/" {
		h.fail(newErr(http.StatusNotImplemented, "NotImplemented", `only the delimiter "/" is supported`), targetBucket)
		return
	}
	enc := q.Get("encoding-type")
	if enc != "" && enc != "url" {
		h.fail(errInvalidArgument(`encoding-type must be "url"`), targetBucket)
		return
	}
	esc := func(s string) string {
		if enc == "url" {
			return awsEscape(s, false)
		}
		return s
	}
	prefix := q.Get("prefix")
	res := listResult{Name: bucket, Prefix: esc(prefix), MaxKeys: maxKeys, Delimiter: esc(delim), EncodingType: enc}
	var start string
	if v2 {
		res.StartAfter = esc(q.Get("start-after"))
		start = q.Get("start-after")
		if tok := q.Get("continuation-token"); tok != "" {
			b, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil {
				h.fail(errInvalidArgument("the continuation token is not one this server issued"), targetBucket)
				return
			}
			res.ContinuationToken = tok
			start = max(start, string(b))
		}
	} else {
		m := q.Get("marker")
		start = m
		m = esc(m)
		res.Marker = &m
	}

	w := walker{h: h, prefix: prefix, start: start, delim: delim == "/", limit: maxKeys}
	err := w.run(dir)
	if err != nil && !errors.Is(err, errStop) {
		h.fail(err, targetBucket)
		return
	}
	for _, it := range w.items {
		if it.isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, prefixXML{Prefix: esc(it.key)})
			continue
		}
		res.Contents = append(res.Contents, objectXML{
			Key: esc(it.key), LastModified: it.fi.ModTime.UTC().Format(timeFormat),
			ETag: quoteETag(it.fi.ETag), Size: it.fi.Size, StorageClass: "STANDARD",
		})
	}
	res.IsTruncated = w.truncated
	if w.truncated && len(w.items) > 0 {
		last := w.items[len(w.items)-1].key
		if v2 {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(last))
		} else {
			res.NextMarker = esc(last)
		}
	}
	if v2 {
		n := len(w.items)
		res.KeyCount = &n
		res.Marker = nil
	}
	writeXML(h.w, h.r, res)
}

func quoteETag(etag string) string {
	if etag == "" {
		return ""
	}
	return `"` + etag + `"`
}

var errStop = errors.New("s3: listing page full")

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
type walker struct {
	h         *handler
	prefix    string
	start     string
	delim     bool
	limit     int
	items     []listItem
	truncated bool
}

func (w *walker) add(it listItem) error {
	if len(w.items) == w.limit {
		w.truncated = true
		return errStop
	}
	w.items = append(w.items, it)
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
	after := before(first)
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
		// A page need not be longer than what can still be returned (plus
		// one, to learn whether the listing is truncated).
		size := min(dirPageSize, w.limit-len(w.items)+1)
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
			} else if key > w.start {
				if err := w.add(listItem{key: key, fi: fi}); err != nil {
					return err
				}
			}
		}
		if len(page) < size {
			return flush("", true)
		}
		after = page[len(page)-1].Name
	}
}

// dir handles child directory name of dir: a common prefix with the
// delimiter, otherwise its keys.
func (w *walker) dir(dir, base, name string) error {
	key := base + name + "/"
	if w.delim {
		if key > w.start {
			return w.add(listItem{key: key, isPrefix: true})
		}
		return nil
	}
	if key > w.start || strings.HasPrefix(w.start, key) {
		return w.walk(view.Join(dir, name), key, "")
	}
	return nil
}

// before returns a name just below s for ReadDir's exclusive "after": the
// last byte decremented and followed by 0xff. Valid names never contain
// 0xff, so no name falls between the result and s.
func before(s string) string {
	if s == "" {
		return ""
	}
	last := s[len(s)-1]
	if last == 0 {
		return s[:len(s)-1]
	}
	return s[:len(s)-1] + string([]byte{last - 1, 0xff})
}
