package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

const (
	bigKey   = "/acme/clicks/segment=1/big.chunk"
	emptyKey = "/acme/clicks/segment=2/empty.chunk"
)

func etagOf(b []byte) string {
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:])
}

// objCase is one GetObject/HeadObject request and what S3 answers.
type objCase struct {
	key    string // default bigKey
	as     string // default "alice"; "-" sends the request unsigned
	query  string
	hdr    map[string]string
	status int
	code   string // S3 error code of an error status
	// from and to (exclusive) select the body of a 200 or 206.
	from, to int
	// contentRange is the Content-Range of a 206 or 416.
	contentRange string
	// header lists other headers the answer must carry.
	header map[string]string
}

// objectCases are S3's GetObject semantics against the 5000-byte big.chunk
// (and the empty empty.chunk): one range of three forms, anything else
// ignored; If-* in S3's precedence; response-* overrides that keep the
// length.
func objectCases(etag string) map[string]objCase {
	const size = 5000
	old := mtime.Add(-time.Hour).Format(http.TimeFormat)
	at := mtime.Format(http.TimeFormat)
	later := mtime.Add(time.Hour).Format(http.TimeFormat)
	ok := func(from, to int) objCase { return objCase{status: 200, from: from, to: to} }
	part := func(from, to int) objCase {
		return objCase{status: 206, from: from, to: to, contentRange: "bytes " + strconv.Itoa(from) + "-" + strconv.Itoa(to-1) + "/5000"}
	}
	unsat := func(size int) objCase {
		return objCase{status: 416, code: "InvalidRange", contentRange: "bytes */" + strconv.Itoa(size)}
	}
	with := func(c objCase, hdr map[string]string) objCase { c.hdr = hdr; return c }
	rng := func(c objCase, r string) objCase { return with(c, map[string]string{"Range": r}) }
	failed := objCase{status: 412, code: "PreconditionFailed"}
	notMod := objCase{status: 304}
	return map[string]objCase{
		"whole":                 ok(0, size),
		"closed range":          rng(part(10, 20), "bytes=10-19"),
		"open range":            rng(part(4990, size), "bytes=4990-"),
		"suffix range":          rng(part(4993, size), "bytes=-7"),
		"suffix beyond size":    rng(part(0, size), "bytes=-6000"),
		"last beyond size":      rng(part(4990, size), "bytes=4990-9999"),
		"last beyond int64":     rng(part(4990, size), "bytes=4990-99999999999999999999"),
		"one byte":              rng(part(0, 1), "bytes=0-0"),
		"first at size":         rng(unsat(size), "bytes=5000-5001"),
		"open first at size":    rng(unsat(size), "bytes=5000-"),
		"first beyond int64":    rng(unsat(size), "bytes=99999999999999999999-"),
		"suffix of zero":        rng(unsat(size), "bytes=-0"),
		"reversed":              rng(ok(0, size), "bytes=3-1"),
		"not a number":          rng(ok(0, size), "bytes=abc"),
		"other unit":            rng(ok(0, size), "items=0-1"),
		"two ranges":            rng(ok(0, size), "bytes=0-1,3-4"),
		"no spec":               rng(ok(0, size), "bytes="),
		"dash only":             rng(ok(0, size), "bytes=-"),
		"negative suffix":       rng(ok(0, size), "bytes=--1"),
		"signed first":          rng(ok(0, size), "bytes=+1-2"),
		"empty object":          {key: emptyKey, status: 200},
		"empty object, range":   {key: emptyKey, hdr: map[string]string{"Range": "bytes=0-"}, status: 416, code: "InvalidRange", contentRange: "bytes */0"},
		"empty object, suffix":  {key: emptyKey, hdr: map[string]string{"Range": "bytes=-1"}, status: 416, code: "InvalidRange", contentRange: "bytes */0"},
		"empty object, ignored": {key: emptyKey, hdr: map[string]string{"Range": "bytes=1-0"}, status: 200},

		"If-Match quoted":              with(ok(0, size), map[string]string{"If-Match": `"` + etag + `"`}),
		"If-Match unquoted":            with(ok(0, size), map[string]string{"If-Match": etag}),
		"If-Match star":                with(ok(0, size), map[string]string{"If-Match": "*"}),
		"If-Match in a list":           with(ok(0, size), map[string]string{"If-Match": `"0123", "` + etag + `"`}),
		"If-Match other":               with(failed, map[string]string{"If-Match": `"0123"`}),
		"If-Match weak":                with(failed, map[string]string{"If-Match": `W/"` + etag + `"`}),
		"If-Match with range":          with(part(10, 20), map[string]string{"If-Match": etag, "Range": "bytes=10-19"}),
		"If-Match fails before range":  with(failed, map[string]string{"If-Match": "0123", "Range": "bytes=9000-"}),
		"If-Unmodified-Since before":   with(failed, map[string]string{"If-Unmodified-Since": old}),
		"If-Unmodified-Since at":       with(ok(0, size), map[string]string{"If-Unmodified-Since": at}),
		"If-Unmodified-Since bad date": with(ok(0, size), map[string]string{"If-Unmodified-Since": "yesterday"}),
		"If-Match wins over If-Unmodified-Since": with(ok(0, size),
			map[string]string{"If-Match": etag, "If-Unmodified-Since": old}),
		"If-None-Match quoted":            with(notMod, map[string]string{"If-None-Match": `"` + etag + `"`}),
		"If-None-Match unquoted":          with(notMod, map[string]string{"If-None-Match": etag}),
		"If-None-Match weak":              with(notMod, map[string]string{"If-None-Match": `W/"` + etag + `"`}),
		"If-None-Match star":              with(notMod, map[string]string{"If-None-Match": "*"}),
		"If-None-Match other":             with(ok(0, size), map[string]string{"If-None-Match": `"0123"`}),
		"If-None-Match with range":        with(notMod, map[string]string{"If-None-Match": etag, "Range": "bytes=0-1"}),
		"If-Modified-Since at":            with(notMod, map[string]string{"If-Modified-Since": at}),
		"If-Modified-Since later":         with(notMod, map[string]string{"If-Modified-Since": later}),
		"If-Modified-Since before":        with(ok(0, size), map[string]string{"If-Modified-Since": old}),
		"If-Modified-Since bad date":      with(ok(0, size), map[string]string{"If-Modified-Since": "tomorrow"}),
		"If-None-Match decides over IMS":  with(notMod, map[string]string{"If-None-Match": etag, "If-Modified-Since": old}),
		"If-None-Match other, IMS later":  with(ok(0, size), map[string]string{"If-None-Match": "0123", "If-Modified-Since": later}),
		"If-Range quoted":                 with(part(10, 20), map[string]string{"If-Range": `"` + etag + `"`, "Range": "bytes=10-19"}),
		"If-Range unquoted":               with(part(10, 20), map[string]string{"If-Range": etag, "Range": "bytes=10-19"}),
		"If-Range at mtime":               with(part(10, 20), map[string]string{"If-Range": at, "Range": "bytes=10-19"}),
		"If-Range other":                  with(ok(0, size), map[string]string{"If-Range": `"0123"`, "Range": "bytes=10-19"}),
		"If-Range weak":                   with(ok(0, size), map[string]string{"If-Range": `W/"` + etag + `"`, "Range": "bytes=10-19"}),
		"If-Range older date":             with(ok(0, size), map[string]string{"If-Range": old, "Range": "bytes=10-19"}),
		"If-Range other, unsatisfiable":   with(ok(0, size), map[string]string{"If-Range": "0123", "Range": "bytes=-0"}),
		"If-Range matches, unsatisfiable": with(unsat(size), map[string]string{"If-Range": etag, "Range": "bytes=-0"}),
		"If-Range without Range":          with(ok(0, size), map[string]string{"If-Range": "0123"}),
		"412 before 304": with(failed,
			map[string]string{"If-Match": "0123", "If-None-Match": etag}),

		"response-content-encoding": {query: "response-content-encoding=gzip", status: 200, to: size,
			header: map[string]string{"Content-Encoding": "gzip"}},
		"response-content-encoding, range": {query: "response-content-encoding=gzip", hdr: map[string]string{"Range": "bytes=0-9"},
			status: 206, to: 10, contentRange: "bytes 0-9/5000", header: map[string]string{"Content-Encoding": "gzip"}},
		"response-content-type": {query: "response-content-type=text%2Fplain&response-cache-control=no-cache", status: 200, to: size,
			header: map[string]string{"Content-Type": "text/plain", "Cache-Control": "no-cache"}},
		"response-* anonymous": {key: "/pub/open/segment=1/000001.chunk", as: "-", query: "response-content-type=text%2Fplain",
			status: 400, code: "InvalidRequest"},
		"anonymous": {key: "/pub/open/segment=1/000001.chunk", as: "-", status: 200, to: -1},
	}
}

// TestObjectRaw checks every case with raw signed GET and HEAD requests:
// status, error code, body and the headers S3 sends with each status.
func TestObjectRaw(t *testing.T) {
	e := newTestEnv(t)
	big := e.files[bigKey]
	etag := etagOf(big)
	for name, c := range objectCases(etag) {
		for _, method := range []string{"GET", "HEAD"} {
			t.Run(name+"/"+method, func(t *testing.T) {
				key := c.key
				if key == "" {
					key = bigKey
				}
				as := c.as
				switch as {
				case "":
					as = "alice"
				case "-":
					as = ""
				}
				target := key
				if c.query != "" {
					target += "?" + c.query
				}
				r := e.raw(as, method, target, c.hdr)
				checkObject(t, method, r, c, e.files[key])
			})
		}
	}
}

func checkObject(t *testing.T, method string, r rawResp, c objCase, content []byte) {
	t.Helper()
	if r.status != c.status {
		t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
	}
	hd := func(k string) string { return r.header.Get(k) }
	if method == "GET" && c.code != "" && r.errCode() != c.code {
		t.Fatalf("code %q, want %s: %s", r.errCode(), c.code, r.body)
	}
	if method == "HEAD" && len(r.body) != 0 {
		t.Fatalf("HEAD answered with a body: %q", r.body)
	}
	if hd("Content-Range") != c.contentRange {
		t.Errorf("Content-Range %q, want %q", hd("Content-Range"), c.contentRange)
	}
	for k, v := range c.header {
		if hd(k) != v {
			t.Errorf("%s %q, want %q", k, hd(k), v)
		}
	}
	etag := `"` + etagOf(content) + `"`
	switch c.status {
	case 200, 206:
		to := c.to
		if to < 0 || c.to == 0 && c.from == 0 {
			to = len(content)
		}
		want := content[c.from:to]
		// A length the client can rely on, never a chunked body: GET and
		// HEAD both carry Content-Length, whatever Content-Encoding says.
		if r.length != int64(len(want)) || r.chunked {
			t.Errorf("Content-Length %d (chunked %v), want %d", r.length, r.chunked, len(want))
		}
		if method == "GET" && !bytes.Equal(r.body, want) {
			t.Errorf("body of %d bytes, want bytes %d-%d", len(r.body), c.from, to)
		}
		if hd("ETag") != etag || hd("Last-Modified") != mtime.Format(http.TimeFormat) || hd("Accept-Ranges") != "bytes" {
			t.Errorf("ETag %q Last-Modified %q Accept-Ranges %q", hd("ETag"), hd("Last-Modified"), hd("Accept-Ranges"))
		}
	case 304, 412:
		// The validators tell a cache what it holds.
		if hd("ETag") != etag || hd("Last-Modified") != mtime.Format(http.TimeFormat) {
			t.Errorf("ETag %q Last-Modified %q, want %s and the mtime", hd("ETag"), hd("Last-Modified"), etag)
		}
		if c.status == 304 && (len(r.body) != 0 || hd("Content-Type") != "") {
			t.Errorf("304 with a body or Content-Type %q: %q", hd("Content-Type"), r.body)
		}
	case 416:
		if method == "GET" {
			var e struct{ RangeRequested, ActualObjectSize string }
			xml.Unmarshal(r.body, &e)
			if e.RangeRequested != c.hdr["Range"] || e.ActualObjectSize != strconv.Itoa(len(content)) {
				t.Errorf("RangeRequested %q ActualObjectSize %q: %s", e.RangeRequested, e.ActualObjectSize, r.body)
			}
		}
	}
}

// TestObjectSDK checks the causes of the S3 differences with
// aws-sdk-go-v2, which is how most Go programs read S3.
func TestObjectSDK(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	c := e.as("alice")
	big := e.files[bigKey]
	etag := etagOf(big)
	in := func() *awss3.GetObjectInput {
		return &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/segment=1/big.chunk")}
	}
	get := func(in *awss3.GetObjectInput) ([]byte, *awss3.GetObjectOutput, error) {
		out, err := c.GetObject(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return b, out, err
	}
	for name, rng := range map[string]string{
		"reversed range":  "bytes=3-1",
		"not a number":    "bytes=abc",
		"other unit":      "items=0-1",
		"multiple ranges": "bytes=0-1,3-4",
	} {
		i := in()
		i.Range = aws.String(rng)
		b, out, err := get(i)
		if err != nil || !bytes.Equal(b, big) || aws.ToString(out.ContentRange) != "" {
			t.Errorf("%s: %d bytes, Content-Range %q, %v; want the whole object", name, len(b), aws.ToString(out.ContentRange), err)
		}
	}
	i := in()
	i.Range = aws.String("bytes=-0")
	_, _, err := get(i)
	wantCode(t, err, "InvalidRange")

	i = in()
	i.IfMatch = aws.String(etag) // unquoted
	if b, _, err := get(i); err != nil || !bytes.Equal(b, big) {
		t.Errorf("If-Match unquoted: %d bytes, %v", len(b), err)
	}
	i = in()
	i.IfNoneMatch = aws.String(etag)
	_, _, err = get(i)
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotModified {
		t.Errorf("If-None-Match unquoted: %v, want 304", err)
	}

	i = in()
	i.ResponseContentEncoding = aws.String("gzip")
	b, out, err := get(i)
	if err != nil || !bytes.Equal(b, big) || aws.ToInt64(out.ContentLength) != int64(len(big)) || aws.ToString(out.ContentEncoding) != "gzip" {
		t.Errorf("response-content-encoding GET: %d bytes, length %d, encoding %q, %v",
			len(b), aws.ToInt64(out.ContentLength), aws.ToString(out.ContentEncoding), err)
	}
	head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/segment=1/big.chunk"),
		ResponseContentEncoding: aws.String("gzip")})
	if err != nil || aws.ToInt64(head.ContentLength) != int64(len(big)) {
		t.Errorf("response-content-encoding HEAD: %+v, %v", head, err)
	}

	head, err = c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/segment=1/big.chunk"),
		Range: aws.String("bytes=10-19")})
	if err != nil || aws.ToInt64(head.ContentLength) != 10 || aws.ToString(head.ContentRange) != "bytes 10-19/5000" {
		t.Errorf("HeadObject with a range: %+v, %v", head, err)
	}
	_, err = c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/segment=1/big.chunk"),
		IfMatch: aws.String("0123")})
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusPreconditionFailed {
		t.Errorf("HeadObject If-Match other: %v, want 412", err)
	}
}
