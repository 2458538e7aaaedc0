package s3

import (
	"context"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

// Listings over a bucket of 10,000 streams and a node of 2,500 tenants,
// through the SDK's paginators, counting the entries the view hands the
// head for each request: a request that materialized the bucket or the
// tenant list would read at least 10,000 (or 2,500).
const (
	manyStreams = 10_000
	manyTenants = 2_500
)

// entryCounter counts the directory entries ReadDir returns.
type entryCounter struct {
	view.View
	mu   sync.Mutex
	read int
}

func (c *entryCounter) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	page, err := c.View.ReadDir(ctx, dir, after, limit)
	c.mu.Lock()
	c.read += len(page)
	c.mu.Unlock()
	return page, err
}

// oneKey authenticates one access key as root.
type oneKey struct{ id, secret string }

func (k oneKey) LookupS3Key(id string) (acl.Principal, string, error) {
	if id != k.id {
		return acl.Principal{}, "", acl.ErrNotFound
	}
	return acl.Principal{Name: "root"}, k.secret, nil
}

var manyView = sync.OnceValue(func() *viewtest.MemView {
	files := make(map[string][]byte, manyStreams+manyTenants)
	for i := range manyStreams {
		files[fmt.Sprintf("/big/s%05d/segment=0/00000000000000000000.chunk", i)] = []byte("x\n")
	}
	for i := range manyTenants - 1 {
		files[fmt.Sprintf("/t%04d/s/segment=0/00000000000000000000.chunk", i)] = []byte("x\n")
	}
	return viewtest.NewMemView(viewtest.Fixture{Files: files}, mtime)
})

// requestCounts serves h and records, per request, the entries counted
// while it ran (requests of one paginator come one at a time).
type requestCounts struct {
	c    *entryCounter
	h    http.Handler
	mu   sync.Mutex
	each []int
}

func (rc *requestCounts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.c.mu.Lock()
	rc.c.read = 0
	rc.c.mu.Unlock()
	rc.h.ServeHTTP(w, r)
	rc.c.mu.Lock()
	n := rc.c.read
	rc.c.mu.Unlock()
	rc.mu.Lock()
	rc.each = append(rc.each, n)
	rc.mu.Unlock()
}

func TestListingsCostThePage(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		run func(c *awss3.Client) (items, pages int, err error)
		// each request may read this many entries: three per item
		// shown (a stream, its segment, its chunk) and a few more to
		// find where the page ends, never the bucket.
		maxRead   int
		wantItems int
		wantPages int
	}{
		"ListObjectsV2 with / by 500": {
			run: func(c *awss3.Client) (int, int, error) {
				p := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{Bucket: aws.String("big"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(500)})
				items, pages := 0, 0
				for p.HasMorePages() {
					out, err := p.NextPage(ctx)
					if err != nil {
						return 0, 0, err
					}
					items += len(out.CommonPrefixes) + len(out.Contents)
					pages++
				}
				return items, pages, nil
			},
			maxRead: 3*501 + 16, wantItems: manyStreams, wantPages: manyStreams / 500,
		},
		"ListObjectsV2, every key, by 1000": {
			run: func(c *awss3.Client) (int, int, error) {
				p := awss3.NewListObjectsV2Paginator(c, &awss3.ListObjectsV2Input{Bucket: aws.String("big")})
				items, pages := 0, 0
				for p.HasMorePages() {
					out, err := p.NextPage(ctx)
					if err != nil {
						return 0, 0, err
					}
					items += len(out.Contents)
					pages++
				}
				return items, pages, nil
			},
			maxRead: 3*1001 + 16, wantItems: manyStreams, wantPages: manyStreams / 1000,
		},
		"ListObjects v1 with / by 700, from NextMarker": {
			run: func(c *awss3.Client) (int, int, error) {
				in := &awss3.ListObjectsInput{Bucket: aws.String("big"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(700)}
				items, pages := 0, 0
				for {
					out, err := c.ListObjects(ctx, in)
					if err != nil {
						return 0, 0, err
					}
					items += len(out.CommonPrefixes)
					pages++
					if !aws.ToBool(out.IsTruncated) {
						return items, pages, nil
					}
					in.Marker = out.NextMarker
				}
			},
			maxRead: 3*701 + 16, wantItems: manyStreams, wantPages: (manyStreams + 699) / 700,
		},
		"ListBuckets by 1000": {
			run: func(c *awss3.Client) (int, int, error) {
				p := awss3.NewListBucketsPaginator(c, &awss3.ListBucketsInput{MaxBuckets: aws.Int32(1000)})
				items, pages := 0, 0
				for p.HasMorePages() {
					out, err := p.NextPage(ctx)
					if err != nil {
						return 0, 0, err
					}
					items += len(out.Buckets)
					pages++
				}
				return items, pages, nil
			},
			maxRead: 1001, wantItems: manyTenants, wantPages: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ec := &entryCounter{View: manyView()}
			key := oneKey{id: "AKIAROOT", secret: "root-secret"}
			srv, err := New(DefaultConfig(), ec, key, acl.AllowAll{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rc := &requestCounts{c: ec, h: srv.Handler()}
			hs := httptest.NewServer(rc)
			defer hs.Close()
			e := &testEnv{t: t, url: hs.URL}
			items, pages, err := tc.run(e.client(key.id, key.secret))
			if err != nil {
				t.Fatal(err)
			}
			if items != tc.wantItems || pages != tc.wantPages {
				t.Fatalf("%d items in %d pages, want %d in %d", items, pages, tc.wantItems, tc.wantPages)
			}
			for i, n := range rc.each {
				if n > tc.maxRead {
					t.Fatalf("request %d read %d entries, want at most %d (requests: %v)", i, n, tc.maxRead, rc.each)
				}
			}
		})
	}
}

func TestListBucketsParams(t *testing.T) {
	srv, err := New(DefaultConfig(), manyView(), noKeys{}, acl.AllowAll{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tok := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	cases := map[string]struct {
		query     string
		status    int
		first     string
		n         int
		wantToken string
	}{
		"every tenant, one page":   {query: "", status: 200, first: "big", n: manyTenants},
		"max-buckets":              {query: "max-buckets=2", status: 200, first: "big", n: 2, wantToken: tok("t0000")},
		"token":                    {query: "max-buckets=2&continuation-token=" + tok("t0000"), status: 200, first: "t0001", n: 2, wantToken: tok("t0002")},
		"prefix":                   {query: "prefix=t001", status: 200, first: "t0010", n: 10},
		"prefix, paged":            {query: "prefix=t001&max-buckets=5", status: 200, first: "t0010", n: 5, wantToken: tok("t0014")},
		"prefix, last page":        {query: "prefix=t001&max-buckets=5&continuation-token=" + tok("t0014"), status: 200, first: "t0015", n: 5},
		"prefix matching nothing":  {query: "prefix=zz", status: 200, n: 0},
		"our region":               {query: "bucket-region=us-east-1&max-buckets=1", status: 200, first: "big", n: 1, wantToken: tok("big")},
		"another region":           {query: "bucket-region=eu-west-1", status: 200, n: 0},
		"max-buckets 0":            {query: "max-buckets=0", status: 400},
		"max-buckets too large":    {query: "max-buckets=10001", status: 400},
		"max-buckets not a number": {query: "max-buckets=x", status: 400},
		"token not base64":         {query: "continuation-token=%21", status: 400},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/?"+tc.query, nil))
			if w.Code != tc.status {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			if tc.status != 200 {
				if !strings.Contains(w.Body.String(), "<Code>InvalidArgument</Code>") {
					t.Fatalf("body %s", w.Body)
				}
				return
			}
			var res struct {
				Buckets           []struct{ Name string } `xml:"Buckets>Bucket"`
				ContinuationToken string
			}
			if err := xml.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Buckets) != tc.n || tc.n > 0 && res.Buckets[0].Name != tc.first || res.ContinuationToken != tc.wantToken {
				t.Fatalf("%d buckets from %+v, token %q; want %d from %q, token %q", len(res.Buckets), res.Buckets[:min(1, len(res.Buckets))], res.ContinuationToken, tc.n, tc.first, tc.wantToken)
			}
		})
	}
}
