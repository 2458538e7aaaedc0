package s3

import (
	"io"
	"mime"
	"net/http"
	"path"

	"github.com/silt-io/silt/view"
)

// object answers GetObject and HeadObject. http.ServeContent does ranges
// and the If-* conditionals against the ETag and Last-Modified set here;
// errorWriter turns its plain-text 412 and 416 into S3 XML.
func (h *handler) object(bucket, key string) {
	for k := range h.r.URL.Query() {
		if k == "partNumber" || (k == "versionId" && h.r.URL.Query().Get(k) != "null") {
			h.fail(errNotImplemented, targetKey)
			return
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
	hd := h.w.Header()
	if fi.ETag != "" {
		hd.Set("ETag", quoteETag(fi.ETag))
	}
	hd.Set("Accept-Ranges", "bytes")
	ctype := mime.TypeByExtension(path.Ext(key))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	hd.Set("Content-Type", ctype)
	h.responseOverrides()
	// The size comes from the open file, which cannot change while open;
	// Stat may be a moment older for generated files.
	body := io.NewSectionReader(f, 0, f.Size())
	http.ServeContent(&errorWriter{ResponseWriter: h.w, r: h.r}, h.r, "", fi.ModTime, body)
}

// responseOverrides applies the response-* query parameters presigned
// URLs use to choose headers.
func (h *handler) responseOverrides() {
	q := h.r.URL.Query()
	for param, header := range map[string]string{
		"response-content-type":        "Content-Type",
		"response-content-disposition": "Content-Disposition",
		"response-content-encoding":    "Content-Encoding",
		"response-content-language":    "Content-Language",
		"response-cache-control":       "Cache-Control",
		"response-expires":             "Expires",
	} {
		if v := q.Get(param); v != "" {
			h.w.Header().Set(header, v)
		}
	}
}

// errorWriter replaces the plain-text bodies http.ServeContent writes for
// 412 and 416 with S3 error XML, which S3 clients parse.
type errorWriter struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (e *errorWriter) WriteHeader(code int) {
	var ae *apiError
	switch code {
	case http.StatusPreconditionFailed:
		ae = errPrecondition
	case http.StatusRequestedRangeNotSatisfiable:
		ae = errInvalidRange
	default:
		e.ResponseWriter.WriteHeader(code)
		return
	}
	e.replaced = true
	e.Header().Del("X-Content-Type-Options")
	writeErr(e.ResponseWriter, e.r, ae)
}

func (e *errorWriter) Write(b []byte) (int, error) {
	if e.replaced {
		return len(b), nil
	}
	return e.ResponseWriter.Write(b)
}
