package s3

import (
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"

	"go.uber.org/zap"

	"github.com/silt-io/silt/view"
)

// responseHeaders are the query parameters a signed GetObject or
// HeadObject may use to choose response headers.
var responseHeaders = [...]struct{ param, header string }{
	{"response-content-type", "Content-Type"},
	{"response-content-disposition", "Content-Disposition"},
	{"response-content-encoding", "Content-Encoding"},
	{"response-content-language", "Content-Language"},
	{"response-cache-control", "Cache-Control"},
	{"response-expires", "Expires"},
}

// object answers GetObject and HeadObject with S3's semantics, which are
// not net/http's (http.ServeContent answers multi-range requests with a
// multipart 206, rejects ranges S3 ignores, compares ETags strictly and
// drops Content-Length under a Content-Encoding): the If-* conditions in
// S3's order (conditions.go), then at most one byte range (ranges.go)
// unless If-Range no longer holds, then the bytes, streamed from the open
// file.
func (h *handler) object(bucket, key string) {
	q := h.r.URL.Query()
	if q.Has("partNumber") || (q.Has("versionId") && q.Get("versionId") != "null") {
		h.fail(errNotImplemented, targetKey)
		return
	}
	if h.anonymous {
		for _, rh := range responseHeaders {
			if q.Has(rh.param) {
				h.fail(errAnonymousOverrides, targetKey)
				return
			}
		}
	}
	if _, ok := h.bucketDir(bucket); !ok {
		return
	}
	p := "/" + bucket + "/" + key
	fi, err := h.v.Stat(h.ctx(), p)
	if err == nil && fi.IsDir {
		err = view.ErrIsDir
	}
	if err != nil {
		h.fail(err, targetKey)
		return
	}
	f, err := h.v.Open(h.ctx(), p)
	if err != nil {
		h.fail(err, targetKey)
		return
	}
	defer f.Close()
	// The size comes from the open file, which cannot change while open;
	// Stat may be a moment older for generated files.
	size := f.Size()

	hd := h.w.Header()
	validators := func() {
		if fi.ETag != "" {
			hd.Set("ETag", quoteETag(fi.ETag))
		}
		hd.Set("Last-Modified", fi.ModTime.UTC().Format(http.TimeFormat))
	}
	switch status, cond := checkConditions(h.r.Header, fi.ETag, fi.ModTime); status {
	case http.StatusNotModified:
		validators()
		h.w.WriteHeader(http.StatusNotModified)
		return
	case http.StatusPreconditionFailed:
		validators()
		writeErr(h.w, h.r, errPreconditionOn(cond))
		return
	}

	rng := h.r.Header.Get("Range")
	if !ifRangeHolds(h.r.Header, fi.ETag, fi.ModTime) {
		rng = ""
	}
	start, n, res := parseRange(rng, size)
	if res == rangeUnsatisfiable {
		hd.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		writeErr(h.w, h.r, errRangeNotSatisfiable(rng, size))
		return
	}
	validators()
	hd.Set("Accept-Ranges", "bytes")
	ctype := mime.TypeByExtension(path.Ext(key))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	hd.Set("Content-Type", ctype)
	for _, rh := range responseHeaders {
		if v := q.Get(rh.param); v != "" {
			hd.Set(rh.header, v)
		}
	}
	// Set even under a Content-Encoding (net/http would then leave it
	// out): S3 names the length of the stored bytes, which are sent as
	// they are.
	hd.Set("Content-Length", strconv.FormatInt(n, 10))
	if res == rangePartial {
		hd.Set("Content-Range", "bytes "+strconv.FormatInt(start, 10)+"-"+strconv.FormatInt(start+n-1, 10)+"/"+strconv.FormatInt(size, 10))
		h.w.WriteHeader(http.StatusPartialContent)
	} else {
		h.w.WriteHeader(http.StatusOK)
	}
	if h.r.Method == http.MethodHead || n == 0 {
		return
	}
	// io.CopyN hands the reader to the ResponseWriter's ReadFrom, as
	// http.ServeContent did, so bodies take the same copy path (and a
	// small body gets a small buffer where there is no ReadFrom).
	body := &readErr{r: io.NewSectionReader(f, start, n)}
	if _, err := io.CopyN(h.w, body, n); body.err != nil {
		// Headers are gone; the short body tells the client.
		h.s.log.Warn("s3 object read failed", zap.String("path", p), zap.Int64("offset", start),
			zap.String("request_id", hd.Get("x-amz-request-id")), zap.Error(body.err))
	} else if err != nil {
		h.s.log.Debug("s3 object body not sent", zap.String("path", p), zap.Error(err))
	}
}

// readErr notes the error of the object read, so that a failing tier 2
// is logged and a client that went away is not.
type readErr struct {
	r   io.Reader
	err error
}

func (e *readErr) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF {
		e.err = err
	}
	return n, err
}
