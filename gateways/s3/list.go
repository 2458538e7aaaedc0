package s3

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/silt-io/silt/core/names"
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
	// ContinuationToken is, as S3 names it in this answer, the token of
	// the next page.
	ContinuationToken string `xml:",omitempty"`
	Prefix            string `xml:",omitempty"`
}

type ownerXML struct {
	ID          string
	DisplayName string
}

// maxBuckets is S3's largest ListBuckets page, and the page silt always
// applies: S3 answers every bucket in one page when no paging parameter
// is given, but an account there has at most 10,000 general purpose
// buckets, and a node may hold many more tenants.
const maxBuckets = 10_000

// listBuckets lists one page of the tenants the principal may see; the
// wrapped view does the filtering. The page is one ReadDir of the root
// from where the continuation token (or the prefix) points, so it costs
// what it returns however many tenants there are.
func (h *handler) listBuckets() {
	q := h.r.URL.Query()
	limit := maxBuckets
	if s := q.Get("max-buckets"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxBuckets {
			h.fail(errInvalidArgument("max-buckets must be an integer between 1 and 10000"), targetBucket)
			return
		}
		limit = n
	}
	prefix := q.Get("prefix")
	after := names.Before(prefix)
	if tok := q.Get("continuation-token"); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil || len(b) == 0 {
			h.fail(errInvalidArgument("the continuation token is not one this server issued"), targetBucket)
			return
		}
		after = max(after, string(b))
	}
	res := listBucketsResult{Owner: owner, Buckets: []bucketXML{}, Prefix: prefix}
	// Every tenant is in the region the server reports.
	if r := q.Get("bucket-region"); r != "" && r != h.s.cfg.Region {
		writeXML(h.w, h.r, res)
		return
	}
	// One more than the page tells whether a token is due.
	page, err := h.v.ReadDir(h.ctx(), "/", after, limit+1)
	if err != nil {
		h.fail(err, targetBucket)
		return
	}
	for i, fi := range page {
		if !strings.HasPrefix(fi.Name, prefix) {
			break // names past the prefix: the listing ends
		}
		if i == limit {
			res.ContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(page[i-1].Name))
			break
		}
		if fi.IsDir {
			res.Buckets = append(res.Buckets, bucketXML{Name: fi.Name, CreationDate: fi.ModTime.UTC().Format(timeFormat)})
		}
	}
	writeXML(h.w, h.r, res)
}

type objectXML struct {
	Key          string
	LastModified string
	ETag         string
	Size         int64
	Owner        *ownerXML `xml:",omitempty"`
	StorageClass string
}

// owner is the owner S3 names for every bucket and object: silt has one
// account, and objects are written by the tiering, not by principals.
var owner = ownerXML{ID: "silt", DisplayName: "silt"}

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
	// S3 echoes the max-keys asked for but returns at most 1000 keys.
	maxKeys := maxKeysCap
	if s := q.Get("max-keys"); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			h.fail(errInvalidArgument("Argument maxKeys must be an integer between 0 and 2147483647"), targetBucket)
			return
		}
		maxKeys = int(n)
	}
	delim := q.Get("delimiter")
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

	withOwner := !v2 || strings.EqualFold(q.Get("fetch-owner"), "true")
	w := walker{h: h, prefix: prefix, start: skipRolledUp(start, prefix, delim), delim: delim, limit: min(maxKeys, maxKeysCap)}
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
		o := objectXML{
			Key: esc(it.key), LastModified: it.fi.ModTime.UTC().Format(timeFormat),
			ETag: quoteETag(it.fi.ETag), Size: it.fi.Size, StorageClass: "STANDARD",
		}
		if withOwner {
			o.Owner = &owner
		}
		res.Contents = append(res.Contents, o)
	}
	res.IsTruncated = w.truncated
	if w.truncated && len(w.items) > 0 {
		last := w.items[len(w.items)-1].key
		switch {
		case v2:
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(last))
		case delim != "":
			// Without a delimiter S3 leaves NextMarker out: the last key
			// is the marker of the next page.
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
