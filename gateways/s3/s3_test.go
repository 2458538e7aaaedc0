package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/view/viewtest"
)

var mtime = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// fixtureFiles has names that make byte order of keys differ from
// depth-first order of names: "clicks.v2/" and "clicks-x" sort before
// "clicks/".
func fixtureFiles() map[string][]byte {
	files := map[string][]byte{}
	big := make([]byte, 5000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, p := range []string{
		"/acme/clicks/_manifest.json",
		"/acme/clicks/segment=1/000001.chunk",
		"/acme/clicks/segment=1/000002.chunk",
		"/acme/clicks/segment=2/000001.chunk",
		"/acme/clicks/segment=2/000001.chunk-old",
		"/acme/clicks.v2/segment=1/000001.chunk",
		"/acme/clicks-x/segment=1/a",
		"/acme/views/segment=1/000001.chunk",
		"/other/logs/segment=1/000001.chunk",
		"/pub/open/segment=1/000001.chunk",
	} {
		files[p] = []byte("content of " + p)
	}
	files["/acme/clicks/segment=1/big.chunk"] = big
	files["/acme/clicks/segment=2/empty.chunk"] = []byte{}
	return files
}

// fixtureDirs are directories with no key under them: an empty segment, a
// stream with no objects, and one whose only segment is empty. S3 has no
// folders, so none of them may show up in a listing.
var fixtureDirs = []string{
	"/acme/clicks/segment=3",
	"/acme/empty",
	"/acme/hollow/segment=1",
}

type testEnv struct {
	t     *testing.T
	url   string
	srv   *Server
	store *acl.Store
	files map[string][]byte
	skew  atomic.Int64 // added to the server clock
	keys  map[string][2]string
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	cat, err := catalog.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	store, err := acl.Open(cat)
	if err != nil {
		t.Fatal(err)
	}
	e := &testEnv{t: t, store: store, files: fixtureFiles(), keys: map[string][2]string{}}
	for name, grants := range map[string][]string{
		"alice": {"acme"},
		"carol": {"other/logs"},
		"bob":   nil,
		"dave":  {"ghost/logs"}, // a grant in a tenant that does not exist
	} {
		if _, err := store.CreatePrincipal(name); err != nil {
			t.Fatal(err)
		}
		for _, g := range grants {
			if _, err := store.AddGrant(name, acl.Read, g); err != nil {
				t.Fatal(err)
			}
		}
		id, secret, err := store.IssueS3Key(name)
		if err != nil {
			t.Fatal(err)
		}
		e.keys[name] = [2]string{id, secret}
	}
	if _, err := store.AddGrant(acl.Anonymous.Name, acl.Read, "pub"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.CreatePrincipal("root"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.AddGrant("root", acl.Admin, "*"); err != nil {
		t.Fatal(err)
	}
	id, secret, err := store.IssueS3Key("root")
	if err != nil {
		t.Fatal(err)
	}
	e.keys["root"] = [2]string{id, secret}
	mem := viewtest.NewMemView(viewtest.Fixture{Files: e.files, Dirs: fixtureDirs}, mtime)
	e.srv, err = New(DefaultConfig(), mem, store, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.now = func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) }
	hs := httptest.NewServer(e.srv.Handler())
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

func (e *testEnv) client(id, secret string) *awss3.Client {
	return awss3.New(awss3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(e.url),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(id, secret, ""),
		RetryMaxAttempts:           1,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

func (e *testEnv) as(name string) *awss3.Client {
	k := e.keys[name]
	return e.client(k[0], k[1])
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("err = %v, want S3 error %s", err, code)
	}
}

func TestListBuckets(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for name, want := range map[string][]string{
		"alice": {"acme"}, "carol": {"other"}, "bob": nil,
	} {
		out, err := e.as(name).ListBuckets(ctx, &awss3.ListBucketsInput{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, b := range out.Buckets {
			got = append(got, *b.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s sees %v, want %v", name, got, want)
		}
	}
	c := e.as("alice")
	if _, err := c.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: aws.String("acme")}); err != nil {
		t.Errorf("HeadBucket: %v", err)
	}
	loc, err := c.GetBucketLocation(ctx, &awss3.GetBucketLocationInput{Bucket: aws.String("acme")})
	if err != nil || loc.LocationConstraint != "" {
		t.Errorf("GetBucketLocation = %v, %v", loc, err)
	}
	_, err = c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("other")})
	wantCode(t, err, "AccessDenied")
	_, err = e.as("bob").GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/_manifest.json")})
	wantCode(t, err, "AccessDenied")
	_, err = e.as("bob").ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("acme")})
	wantCode(t, err, "AccessDenied")
}

// reference lists keys the slow way, for comparison with the walker.
func reference(keys []string, prefix, delim, start string) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range keys {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		item := k
		if delim != "" {
			if i := strings.Index(k[len(prefix):], delim); i >= 0 {
				item = k[:len(prefix)+i+len(delim)]
			}
		}
		if item <= start || seen[item] {
			continue
		}
		seen[item] = true
		out = append(out, item)
	}
	sort.Strings(out)
	return out
}

func TestListObjectsV2(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	c := e.as("alice")
	var keys []string
	for p := range e.files {
		if k, ok := strings.CutPrefix(p, "/acme/"); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	prefixes := []string{"", "c", "clicks", "clicks/", "clicks/segment=1/", "clicks/segment=2/000001.chunk", "nope/", "views/s"}
	// Some starts are common prefixes of some delimiter, as the marker of
	// a page that ended on one is.
	starts := []string{"", "clicks-x/segment=1/a", "clicks/", "clicks/segment=1/000002.chunk", "clicks.v2/", "clicks/segment=", "clicks/segment=1/0"}
	for _, prefix := range prefixes {
		// S3 takes any delimiter string; "/" is the one the walker can
		// answer from directories alone, the others roll keys up.
		for _, delim := range []string{"", "/", "=", ".", "-", "seg", "1/0", "/s", "chunk"} {
			for _, start := range starts {
				for _, page := range []int32{1, 2, 1000} {
					name := fmt.Sprintf("prefix=%q delim=%q start=%q page=%d", prefix, delim, start, page)
					in := &awss3.ListObjectsV2Input{Bucket: aws.String("acme"), Prefix: aws.String(prefix), MaxKeys: aws.Int32(page)}
					if delim != "" {
						in.Delimiter = aws.String(delim)
					}
					if start != "" {
						in.StartAfter = aws.String(start)
					}
					var got []string
					for pg := awss3.NewListObjectsV2Paginator(c, in); pg.HasMorePages(); {
						out, err := pg.NextPage(ctx)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						if int(*out.KeyCount) > int(page) {
							t.Fatalf("%s: page of %d", name, *out.KeyCount)
						}
						var pageItems []string
						for _, o := range out.Contents {
							pageItems = append(pageItems, *o.Key)
							if want := e.files["/acme/"+*o.Key]; *o.Size != int64(len(want)) {
								t.Fatalf("%s: %s size %d", name, *o.Key, *o.Size)
							}
						}
						for _, p := range out.CommonPrefixes {
							pageItems = append(pageItems, *p.Prefix)
						}
						sort.Strings(pageItems)
						got = append(got, pageItems...)
					}
					if want := reference(keys, prefix, delim, start); !slices.Equal(got, want) {
						t.Errorf("%s:\n got %q\nwant %q", name, got, want)
					}
				}
			}
		}
	}
}

func TestListObjectsV1(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	out, err := e.as("alice").ListObjects(ctx, &awss3.ListObjectsInput{
		Bucket: aws.String("acme"), Prefix: aws.String("clicks/"), Delimiter: aws.String("/"),
		MaxKeys: aws.Int32(2), EncodingType: "url",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !*out.IsTruncated || len(out.Contents) != 1 || *out.Contents[0].Key != "clicks/_manifest.json" ||
		len(out.CommonPrefixes) != 1 || *out.CommonPrefixes[0].Prefix != "clicks/segment%3D1/" {
		t.Fatalf("page 1: %+v", out)
	}
	out, err = e.as("alice").ListObjects(ctx, &awss3.ListObjectsInput{
		Bucket: aws.String("acme"), Prefix: aws.String("clicks/"), Delimiter: aws.String("/"),
		Marker: aws.String("clicks/segment=1/"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 0 || len(out.CommonPrefixes) != 1 || *out.CommonPrefixes[0].Prefix != "clicks/segment=2/" || *out.IsTruncated {
		t.Fatalf("page 2: %+v", out)
	}
}

func TestGetObject(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	c := e.as("alice")
	key := "clicks/segment=1/big.chunk"
	want := e.files["/acme/"+key]
	sum := md5.Sum(want)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`

	head, err := c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String("acme"), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if *head.ETag != etag || *head.ContentLength != int64(len(want)) || !head.LastModified.Equal(mtime) {
		t.Fatalf("HeadObject = etag %s len %d mtime %v", *head.ETag, *head.ContentLength, head.LastModified)
	}
	get := func(in *awss3.GetObjectInput) ([]byte, *awss3.GetObjectOutput, error) {
		in.Bucket, in.Key = aws.String("acme"), aws.String(key)
		out, err := c.GetObject(ctx, in)
		if err != nil {
			return nil, nil, err
		}
		defer out.Body.Close()
		b, err := io.ReadAll(out.Body)
		return b, out, err
	}
	b, out, err := get(&awss3.GetObjectInput{})
	if err != nil || !bytes.Equal(b, want) || *out.ETag != etag {
		t.Fatalf("full GET: %d bytes, %v", len(b), err)
	}
	for rng, w := range map[string][]byte{
		"bytes=10-19": want[10:20],
		"bytes=4990-": want[4990:],
		"bytes=-7":    want[len(want)-7:],
	} {
		b, out, err := get(&awss3.GetObjectInput{Range: aws.String(rng), IfMatch: aws.String(etag)})
		if err != nil || !bytes.Equal(b, w) || *out.ContentLength != int64(len(w)) {
			t.Errorf("%s: got %d bytes, %v", rng, len(b), err)
		}
	}
	_, _, err = get(&awss3.GetObjectInput{Range: aws.String("bytes=6000-7000")})
	wantCode(t, err, "InvalidRange")
	_, _, err = get(&awss3.GetObjectInput{IfMatch: aws.String(`"0123"`)})
	wantCode(t, err, "PreconditionFailed")
	_, _, err = get(&awss3.GetObjectInput{IfUnmodifiedSince: aws.Time(mtime.Add(-time.Hour))})
	wantCode(t, err, "PreconditionFailed")
	_, _, err = get(&awss3.GetObjectInput{IfNoneMatch: aws.String(etag)})
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusNotModified {
		t.Errorf("If-None-Match: %v, want 304", err)
	}
	_, err = c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/nope")})
	wantCode(t, err, "NoSuchKey")
	_, err = c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/segment=1")})
	wantCode(t, err, "NoSuchKey")
	_, err = c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("nosuchbucket")})
	wantCode(t, err, "AccessDenied") // acl decides before existence is known
}

func TestAuth(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	in := &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/_manifest.json")}
	_, err := e.client(e.keys["alice"][0], "wrong-secret").GetObject(ctx, in)
	wantCode(t, err, "SignatureDoesNotMatch")
	_, err = e.client("SILTNOSUCHKEY0000000", "x").GetObject(ctx, in)
	wantCode(t, err, "InvalidAccessKeyId")

	e.skew.Store(int64(time.Hour))
	_, err = e.as("alice").GetObject(ctx, in)
	wantCode(t, err, "RequestTimeTooSkewed")
	e.skew.Store(0)

	_, err = e.as("alice").PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("acme"), Key: aws.String("x"), Body: strings.NewReader("data")})
	wantCode(t, err, "AccessDenied")
	_, err = e.as("alice").DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/_manifest.json")})
	wantCode(t, err, "AccessDenied")

	ps := awss3.NewPresignClient(e.as("alice"))
	req, err := ps.PresignGetObject(ctx, in, awss3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(req.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != string(e.files["/acme/clicks/_manifest.json"]) {
		t.Fatalf("presigned GET: %d %s", resp.StatusCode, b)
	}
	e.skew.Store(int64(2 * time.Minute))
	resp, err = http.Get(req.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "<Code>AccessDenied</Code>") {
		t.Fatalf("expired presigned GET: %d %s", resp.StatusCode, b)
	}
	if id := resp.Header.Get("x-amz-request-id"); id == "" || !strings.Contains(string(b), "<RequestId>"+id+"</RequestId>") {
		t.Errorf("RequestId in body differs from header %q: %s", id, b)
	}
	e.skew.Store(0)
	resp, err = http.Get(strings.Replace(req.URL, "_manifest.json", "segment%3D1/000001.chunk", 1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("presigned URL for another key: %d", resp.StatusCode)
	}
}

func TestAnonymousAndRaw(t *testing.T) {
	e := newTestEnv(t)
	get := func(method, path string, body io.Reader) (*http.Response, string) {
		req, _ := http.NewRequest(method, e.url+path, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, b := get("GET", "/pub/open/segment=1/000001.chunk", nil); resp.StatusCode != 200 || b != "content of /pub/open/segment=1/000001.chunk" {
		t.Errorf("anonymous GET of public object: %d %s", resp.StatusCode, b)
	}
	if resp, b := get("GET", "/", nil); resp.StatusCode != 200 || !strings.Contains(b, "<Name>pub</Name>") || strings.Contains(b, "acme") {
		t.Errorf("anonymous ListBuckets: %d %s", resp.StatusCode, b)
	}
	if resp, b := get("GET", "/acme/clicks/_manifest.json", nil); resp.StatusCode != 403 || !strings.Contains(b, "AccessDenied") {
		t.Errorf("anonymous GET of private object: %d %s", resp.StatusCode, b)
	}
	if resp, b := get("GET", "/pub/open/segment=1/000001.chunk?AWSAccessKeyId=X&Signature=Y&Expires=1", nil); resp.StatusCode != 400 || !strings.Contains(b, "InvalidRequest") {
		t.Errorf("SigV2 presigned GET: %d %s", resp.StatusCode, b)
	}
	for _, sub := range []string{"?acl", "?tagging", "?versions"} {
		if resp, b := get("GET", "/pub"+sub, nil); resp.StatusCode != 501 || !strings.Contains(b, "NotImplemented") {
			t.Errorf("GET %s: %d %s", sub, resp.StatusCode, b)
		}
	}
	resp, b := get("PUT", "/pub/open/x", strings.NewReader(strings.Repeat("x", 1<<20)))
	if resp.StatusCode != 403 || !strings.Contains(b, "AccessDenied") || !resp.Close {
		t.Errorf("PUT: %d close=%v %s", resp.StatusCode, resp.Close, b)
	}
	if resp, _ := get("POST", "/pub?delete", nil); resp.StatusCode != 403 {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

func TestVirtualHost(t *testing.T) {
	e := newTestEnv(t)
	e.srv.cfg.Domain = "s3.test"
	addr := strings.TrimPrefix(e.url, "http://")
	_, port, _ := net.SplitHostPort(addr)
	k := e.keys["alice"]
	c := awss3.New(awss3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String("http://s3.test:" + port),
		Credentials:                credentials.NewStaticCredentialsProvider(k[0], k[1], ""),
		RetryMaxAttempts:           1,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		HTTPClient: &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
		}},
	})
	out, err := c.GetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("clicks/_manifest.json")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "content of /acme/clicks/_manifest.json" {
		t.Fatalf("virtual-host GET: %q", b)
	}
	lo, err := c.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("acme"), Prefix: aws.String("views/")})
	if err != nil || len(lo.Contents) != 1 {
		t.Fatalf("virtual-host list: %v %v", lo, err)
	}
}

func TestConfig(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{
		"listen": {Listen: "nope", Region: "x", MaxSkew: time.Minute},
		"region": {Listen: ":1", MaxSkew: time.Minute},
		"skew":   {Listen: ":1", Region: "x"},
		"domain": {Listen: ":1", Region: "x", MaxSkew: time.Minute, Domain: ".s3.example.com"},
	} {
		if c.Validate() == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}
