package s3

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestPresignedQueryErrors: a presigned URL S3 cannot parse, or valid for
// more than 7 days, is 400 AuthorizationQueryParametersError.
func TestPresignedQueryErrors(t *testing.T) {
	e := newTestEnv(t)
	const obj = "/acme/views/segment=1/000001.chunk"
	for name, c := range map[string]struct {
		url    func() string
		status int
		code   string
	}{
		"a week":            {func() string { return e.presign("alice", obj, "604800") }, 200, ""},
		"a week and 1s":     {func() string { return e.presign("alice", obj, "604801") }, 400, "AuthorizationQueryParametersError"},
		"expires zero":      {func() string { return e.presign("alice", obj, "0") }, 403, "AccessDenied"},
		"expires negative":  {func() string { return e.presign("alice", obj, "-5") }, 400, "AuthorizationQueryParametersError"},
		"expires no number": {func() string { return e.presign("alice", obj, "soon") }, 400, "AuthorizationQueryParametersError"},
		"other algorithm": {func() string {
			return strings.Replace(e.presign("alice", obj, "60"), "X-Amz-Algorithm=AWS4-HMAC-SHA256", "X-Amz-Algorithm=AWS4-HMAC-SHA1", 1)
		}, 400, "AuthorizationQueryParametersError"},
		"credential malformed": {func() string {
			return strings.Replace(e.presign("alice", obj, "60"), "%2Fs3%2Faws4_request", "%2Fs3", 1)
		}, 400, "AuthorizationQueryParametersError"},
		"no signature": {func() string {
			u := e.presign("alice", obj, "60")
			return u[:strings.Index(u, "&X-Amz-Signature=")]
		}, 400, "AuthorizationQueryParametersError"},
	} {
		t.Run(name, func(t *testing.T) {
			req, err := http.NewRequest("GET", c.url(), nil)
			if err != nil {
				t.Fatal(err)
			}
			r := e.do(req)
			if r.status != c.status || r.errCode() != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
		})
	}

	ps := awss3.NewPresignClient(e.as("alice"))
	req, err := ps.PresignGetObject(context.Background(), &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String("views/segment=1/000001.chunk")},
		awss3.WithPresignExpires(8*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	hr, _ := http.NewRequest("GET", req.URL, nil)
	if r := e.do(hr); r.status != 400 || r.errCode() != "AuthorizationQueryParametersError" {
		t.Errorf("SDK URL presigned for 8 days: %d %s", r.status, r.body)
	}
}

// TestMissingBucket: a bucket that does not exist is NoSuchBucket to a
// principal who may see a tenant of that name (an admin, or a grant inside
// it), and AccessDenied to everyone else, so that tenant names do not leak.
func TestMissingBucket(t *testing.T) {
	e := newTestEnv(t)
	type want struct {
		status int
		code   string
	}
	denied, missing := want{403, "AccessDenied"}, want{404, "NoSuchBucket"}
	for name, c := range map[string]struct {
		as, method, target string
		want               want
	}{
		"admin lists":                 {"root", "GET", "/ghost?list-type=2", missing},
		"admin heads bucket":          {"root", "HEAD", "/ghost", missing},
		"admin gets object":           {"root", "GET", "/ghost/logs/x", missing},
		"admin asks location":         {"root", "GET", "/ghost?location", missing},
		"grant inside lists":          {"dave", "GET", "/ghost", missing},
		"grant inside gets object":    {"dave", "GET", "/ghost/logs/segment=1/x", missing},
		"grant elsewhere lists":       {"alice", "GET", "/ghost?list-type=2", denied},
		"grant elsewhere gets object": {"alice", "GET", "/ghost/logs/x", denied},
		"no grant heads bucket":       {"bob", "HEAD", "/ghost", denied},
		"anonymous lists":             {"", "GET", "/ghost", denied},
		"admin, existing bucket":      {"root", "GET", "/acme/nope", want{404, "NoSuchKey"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := e.raw(c.as, c.method, c.target, nil)
			code := r.errCode()
			if c.method == "HEAD" {
				code = c.want.code // HEAD has no body to carry the code
			}
			if r.status != c.want.status || code != c.want.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.want.status, c.want.code)
			}
		})
	}
	ctx := context.Background()
	_, err := e.as("root").ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("ghost")})
	wantCode(t, err, "NoSuchBucket")
	_, err = e.as("dave").GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("ghost"), Key: aws.String("logs/x")})
	wantCode(t, err, "NoSuchBucket")
	_, err = e.as("alice").ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("ghost")})
	wantCode(t, err, "AccessDenied")
}
