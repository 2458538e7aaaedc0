package s3

import (
	"net/http"
	"strings"
	"time"
)

// checkConditions evaluates a GetObject's If-* headers against an
// object's ETag (unquoted) and modification time, in S3's order (that of
// RFC 9110 13.2.2): If-Match, or without it If-Unmodified-Since, can fail
// with 412; then If-None-Match, or without it If-Modified-Since, can
// answer 304. It returns 0 when the object is to be sent, with the
// failed condition's header name for a 412.
//
// ETags match with or without quotes, as S3 compares them; "*" matches
// any object. An unparseable date is ignored, as S3 does.
func checkConditions(h http.Header, etag string, mtime time.Time) (status int, cond string) {
	// HTTP dates have whole seconds.
	mod := mtime.Truncate(time.Second)
	if im := header(h, "If-Match"); im != "" {
		if !etagListMatches(im, etag, false) {
			return http.StatusPreconditionFailed, "If-Match"
		}
	} else if t, ok := httpDate(h, "If-Unmodified-Since"); ok && mod.After(t) {
		return http.StatusPreconditionFailed, "If-Unmodified-Since"
	}
	if inm := header(h, "If-None-Match"); inm != "" {
		if etagListMatches(inm, etag, true) {
			return http.StatusNotModified, ""
		}
	} else if t, ok := httpDate(h, "If-Modified-Since"); ok && !mod.After(t) {
		return http.StatusNotModified, ""
	}
	return 0, ""
}

// header joins every line of a list-valued header.
func header(h http.Header, name string) string {
	return strings.Join(h.Values(name), ",")
}

func httpDate(h http.Header, name string) (time.Time, bool) {
	v := h.Get(name)
	if v == "" {
		return time.Time{}, false
	}
	t, err := http.ParseTime(v)
	return t, err == nil
}

// etagListMatches reports whether one entity tag of list names etag.
// Weak tags ("W/...") only match for If-None-Match (RFC 9110's weak
// comparison); If-Match compares strongly.
func etagListMatches(list, etag string, weak bool) bool {
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		if rest, ok := strings.CutPrefix(t, "W/"); ok {
			if !weak {
				continue
			}
			t = rest
		}
		if t = strings.Trim(t, `"`); t != "" && t == etag {
			return true
		}
	}
	return false
}

// ifRangeHolds reports whether a Range is to be honoured under If-Range
// (RFC 9110 13.1.5, which S3 follows): only while the validator still
// names the object, an entity tag compared strongly (with or without
// quotes) or exactly its Last-Modified date. Otherwise the whole object
// is sent, so a resumed download never splices bytes of two versions.
func ifRangeHolds(h http.Header, etag string, mtime time.Time) bool {
	v := strings.TrimSpace(h.Get("If-Range"))
	if v == "" {
		return true
	}
	if t, err := http.ParseTime(v); err == nil {
		return mtime.Truncate(time.Second).Equal(t)
	}
	if strings.HasPrefix(v, "W/") {
		return false
	}
	v = strings.Trim(v, `"`)
	return v != "" && v == etag
}
