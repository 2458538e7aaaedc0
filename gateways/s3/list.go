package s3

import (
	"encoding/base64"
	"encoding/xml"
	"errors"
	"net/http"
	"strconv"
	"strings"
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
	writeXML(h.w, h.r, listBucketsResult{Owner: owner, Buckets: out})
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
