package s3

import (
	"context"
	"encoding/xml"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

// listXML is the part of a ListBucketResult the raw tests look at.
type listXML struct {
	MaxKeys     int
	IsTruncated bool
	NextMarker  *string
	Delimiter   string
	Contents    []struct {
		Key   string
		Owner *struct{ ID, DisplayName string }
	}
	CommonPrefixes []struct{ Prefix string }
}

func (e *testEnv) rawList(as, query string) (rawResp, listXML) {
	e.t.Helper()
	r := e.raw(as, "GET", "/acme?"+query, nil)
	var l listXML
	if r.status == 200 {
		if err := xml.Unmarshal(r.body, &l); err != nil {
			e.t.Fatalf("%s: %v: %s", query, err, r.body)
		}
	}
	return r, l
}

func (l listXML) prefixes() []string {
	var out []string
	for _, p := range l.CommonPrefixes {
		out = append(out, p.Prefix)
	}
	return out
}

func (l listXML) keys() []string {
	var out []string
	for _, c := range l.Contents {
		out = append(out, c.Key)
	}
	return out
}

// TestListOwner: ListObjects (V1) always names each object's owner, as S3
// does; V2 only with fetch-owner=true.
func TestListOwner(t *testing.T) {
	e := newTestEnv(t)
	for name, c := range map[string]struct {
		query     string
		wantOwner bool
	}{
		"v1":                   {"prefix=views/", true},
		"v2":                   {"list-type=2&prefix=views/", false},
		"v2 fetch-owner=true":  {"list-type=2&prefix=views/&fetch-owner=true", true},
		"v2 fetch-owner=false": {"list-type=2&prefix=views/&fetch-owner=false", false},
	} {
		t.Run(name, func(t *testing.T) {
			r, l := e.rawList("alice", c.query)
			if r.status != 200 || len(l.Contents) != 1 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			o := l.Contents[0].Owner
			if got := o != nil && o.ID != ""; got != c.wantOwner {
				t.Fatalf("owner %+v, want one: %v", o, c.wantOwner)
			}
		})
	}

	ctx := context.Background()
	c := e.as("alice")
	v1, err := c.ListObjects(ctx, &awss3.ListObjectsInput{Bucket: aws.String("acme"), Prefix: aws.String("views/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(v1.Contents) != 1 || v1.Contents[0].Owner == nil || aws.ToString(v1.Contents[0].Owner.ID) == "" {
		t.Errorf("SDK ListObjects: no owner in %+v", v1.Contents)
	}
	v2, err := c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("acme"), Prefix: aws.String("views/"), FetchOwner: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Contents) != 1 || v2.Contents[0].Owner == nil || aws.ToString(v2.Contents[0].Owner.ID) == "" {
		t.Errorf("SDK ListObjectsV2 FetchOwner: no owner in %+v", v2.Contents)
	}
	v2, err = c.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("acme"), Prefix: aws.String("views/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(v2.Contents) != 1 || v2.Contents[0].Owner != nil {
		t.Errorf("SDK ListObjectsV2 without FetchOwner: owner in %+v", v2.Contents)
	}
}

// TestListEmptyFolders: a directory of the view with no key under it (an
// empty stream or segment) is no common prefix, because S3 has no folders.
func TestListEmptyFolders(t *testing.T) {
	e := newTestEnv(t)
	for name, c := range map[string]struct {
		query string
		want  []string
	}{
		"streams":            {"list-type=2&delimiter=/", []string{"clicks-x/", "clicks.v2/", "clicks/", "views/"}},
		"segments":           {"list-type=2&delimiter=/&prefix=clicks/", []string{"clicks/segment=1/", "clicks/segment=2/"}},
		"segments of hollow": {"list-type=2&delimiter=/&prefix=hollow/", nil},
		"v1 after a marker":  {"delimiter=/&prefix=clicks/&marker=clicks/segment=1/", []string{"clicks/segment=2/"}},
		"other delimiter":    {"list-type=2&delimiter=%3D&prefix=hollow", nil},
	} {
		t.Run(name, func(t *testing.T) {
			r, l := e.rawList("alice", c.query)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := l.prefixes(); !slices.Equal(got, c.want) {
				t.Fatalf("common prefixes %q, want %q", got, c.want)
			}
		})
	}
	out, err := e.as("alice").ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{
		Bucket: aws.String("acme"), Prefix: aws.String("clicks/"), Delimiter: aws.String("/"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range out.CommonPrefixes {
		got = append(got, *p.Prefix)
	}
	if want := []string{"clicks/segment=1/", "clicks/segment=2/"}; !slices.Equal(got, want) {
		t.Errorf("SDK: common prefixes %q, want %q", got, want)
	}
}

// TestListDelimiters: any delimiter string rolls keys up, not only "/".
// TestListObjectsV2 compares every combination with a reference listing;
// this shows the answers themselves.
func TestListDelimiters(t *testing.T) {
	e := newTestEnv(t)
	for name, c := range map[string]struct {
		query      string
		keys       []string
		prefixes   []string
		truncated  bool
		nextMarker string
	}{
		"equals sign": {
			query:    "list-type=2&prefix=clicks/&delimiter=%3D",
			keys:     []string{"clicks/_manifest.json"},
			prefixes: []string{"clicks/segment="},
		},
		"dot": {
			query:    "list-type=2&prefix=clicks&delimiter=.",
			keys:     []string{"clicks-x/segment=1/a"},
			prefixes: []string{"clicks.", "clicks/_manifest.", "clicks/segment=1/000001.", "clicks/segment=1/000002.", "clicks/segment=1/big.", "clicks/segment=2/000001.", "clicks/segment=2/empty."},
		},
		"across a folder boundary": {
			query:    "list-type=2&prefix=clicks/&delimiter=1/0",
			keys:     []string{"clicks/_manifest.json", "clicks/segment=1/big.chunk", "clicks/segment=2/000001.chunk", "clicks/segment=2/000001.chunk-old", "clicks/segment=2/empty.chunk"},
			prefixes: []string{"clicks/segment=1/0"},
		},
		"v1 page ends on a prefix": {
			query:      "prefix=clicks/&delimiter=.&max-keys=2",
			keys:       []string{},
			prefixes:   []string{"clicks/_manifest.", "clicks/segment=1/000001."},
			truncated:  true,
			nextMarker: "clicks/segment=1/000001.",
		},
		"v1 next page": {
			query:    "prefix=clicks/&delimiter=.&max-keys=2&marker=clicks/segment=1/000001.",
			prefixes: []string{"clicks/segment=1/000002.", "clicks/segment=1/big."},
			keys:     []string{}, truncated: true, nextMarker: "clicks/segment=1/big.",
		},
	} {
		t.Run(name, func(t *testing.T) {
			r, l := e.rawList("alice", c.query)
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if got := l.keys(); !slices.Equal(got, c.keys) && len(got)+len(c.keys) > 0 {
				t.Errorf("keys %q, want %q", got, c.keys)
			}
			if got := l.prefixes(); !slices.Equal(got, c.prefixes) {
				t.Errorf("common prefixes %q, want %q", got, c.prefixes)
			}
			if l.IsTruncated != c.truncated || (c.nextMarker != "" && (l.NextMarker == nil || *l.NextMarker != c.nextMarker)) {
				t.Errorf("truncated %v next marker %v, want %v %q", l.IsTruncated, l.NextMarker, c.truncated, c.nextMarker)
			}
		})
	}
	out, err := e.as("alice").ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{
		Bucket: aws.String("acme"), Prefix: aws.String("clicks/"), Delimiter: aws.String("="),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CommonPrefixes) != 1 || *out.CommonPrefixes[0].Prefix != "clicks/segment=" || aws.ToString(out.Delimiter) != "=" {
		t.Errorf("SDK: delimiter %q, common prefixes %+v", aws.ToString(out.Delimiter), out.CommonPrefixes)
	}
}

// TestListMaxKeys: MaxKeys echoes what was asked, though a page holds at
// most 1000 keys; V1's NextMarker comes only with a delimiter, as in S3.
func TestListMaxKeys(t *testing.T) {
	e := newTestEnv(t)
	for name, c := range map[string]struct {
		query   string
		status  int
		code    string
		maxKeys int
	}{
		"default":           {query: "list-type=2", status: 200, maxKeys: 1000},
		"1001":              {query: "list-type=2&max-keys=1001", status: 200, maxKeys: 1001},
		"5000 v1":           {query: "max-keys=5000", status: 200, maxKeys: 5000},
		"zero":              {query: "list-type=2&max-keys=0", status: 200, maxKeys: 0},
		"largest int32":     {query: "list-type=2&max-keys=2147483647", status: 200, maxKeys: 2147483647},
		"negative":          {query: "list-type=2&max-keys=-1", status: 400, code: "InvalidArgument"},
		"not a number":      {query: "list-type=2&max-keys=ten", status: 400, code: "InvalidArgument"},
		"beyond int32":      {query: "list-type=2&max-keys=2147483648", status: 400, code: "InvalidArgument"},
		"encoding-type bad": {query: "list-type=2&encoding-type=base64", status: 400, code: "InvalidArgument"},
	} {
		t.Run(name, func(t *testing.T) {
			r, l := e.rawList("alice", c.query)
			if r.status != c.status || r.errCode() != c.code {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, c.status, c.code)
			}
			if c.status == 200 && l.MaxKeys != c.maxKeys {
				t.Fatalf("MaxKeys %d, want %d", l.MaxKeys, c.maxKeys)
			}
		})
	}
	_, l := e.rawList("alice", "max-keys=1")
	if !l.IsTruncated || l.NextMarker != nil {
		t.Errorf("V1 without delimiter: truncated %v, NextMarker %v; S3 sends none", l.IsTruncated, l.NextMarker)
	}
	for _, n := range []int32{1001, 5000} {
		out, err := e.as("alice").ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("acme"), MaxKeys: aws.Int32(n)})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToInt32(out.MaxKeys) != n || aws.ToBool(out.IsTruncated) {
			t.Errorf("SDK max-keys %d: MaxKeys %d truncated %v", n, aws.ToInt32(out.MaxKeys), aws.ToBool(out.IsTruncated))
		}
	}
}

// countingView counts ReadDir calls per directory and notes the entries
// they returned.
type countingView struct {
	view.View
	mu    sync.Mutex
	reads map[string]int
	seen  map[string]bool
}

func (c *countingView) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	page, err := c.View.ReadDir(ctx, dir, after, limit)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[dir]++
	for _, fi := range page {
		c.seen[view.Join(dir, fi.Name)] = true
	}
	return page, err
}

// TestListReadsOnlyWhatItShows: a directory that rolls up whole is not
// walked (only asked whether it holds a key), and a page that starts after
// a common prefix does not read the keys under it.
func TestListReadsOnlyWhatItShows(t *testing.T) {
	for name, c := range map[string]struct {
		query   string
		read    []string // directories that must be read
		notRead []string // directories that must not be
		notSeen []string // entries no ReadDir may return
	}{
		"streams with /": {
			query:   "list-type=2&delimiter=/",
			read:    []string{"/acme", "/acme/clicks", "/acme/empty", "/acme/hollow", "/acme/hollow/segment=1"},
			notRead: []string{"/acme/clicks/segment=1", "/acme/clicks/segment=2"},
		},
		"after a prefix of =": {
			query:   "list-type=2&prefix=clicks/&delimiter=%3D&start-after=clicks/segment%3D",
			read:    []string{"/acme/clicks"},
			notRead: []string{"/acme/clicks/segment=1", "/acme/clicks/segment=2", "/acme/clicks/segment=3"},
		},
		"v1 after a segment": {
			query:   "prefix=clicks/&delimiter=/&marker=clicks/segment%3D1/",
			read:    []string{"/acme/clicks", "/acme/clicks/segment=2", "/acme/clicks/segment=3"},
			notRead: []string{"/acme/clicks/segment=1"},
		},
		"after a prefix across folders": {
			query:   "list-type=2&prefix=clicks/&delimiter=1/0&start-after=clicks/segment%3D1/0",
			read:    []string{"/acme/clicks/segment=1"},
			notSeen: []string{"/acme/clicks/segment=1/000001.chunk", "/acme/clicks/segment=1/000002.chunk"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cv := &countingView{View: viewtest.NewMemView(viewtest.Fixture{Files: fixtureFiles(), Dirs: fixtureDirs}, mtime), reads: map[string]int{}, seen: map[string]bool{}}
			srv, err := New(DefaultConfig(), cv, noKeys{}, acl.AllowAll{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/acme?"+c.query, nil))
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			for _, d := range c.read {
				if cv.reads[d] == 0 {
					t.Errorf("%s not read; reads: %v", d, cv.reads)
				}
			}
			for _, d := range c.notRead {
				if cv.reads[d] != 0 {
					t.Errorf("%s read %d times; reads: %v", d, cv.reads[d], cv.reads)
				}
			}
			for _, p := range c.notSeen {
				if cv.seen[p] {
					t.Errorf("%s was read", p)
				}
			}
		})
	}
}

// FuzzListObjects compares paginated ListObjectsV2 answers with the
// reference listing for any prefix, delimiter, start-after and page size.
func FuzzListObjects(f *testing.F) {
	f.Add("clicks/", "/", "", uint8(1))
	f.Add("clicks", ".", "clicks/segment=1/000001.", uint8(2))
	f.Add("", "1/0", "clicks/segment=", uint8(3))
	f.Add("c", "seg", "", uint8(7))
	srv, err := New(DefaultConfig(), viewtest.NewMemView(viewtest.Fixture{Files: fixtureFiles(), Dirs: fixtureDirs}, mtime), noKeys{}, acl.AllowAll{}, nil)
	if err != nil {
		f.Fatal(err)
	}
	var keys []string
	for p := range fixtureFiles() {
		if k, ok := strings.CutPrefix(p, "/acme/"); ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	f.Fuzz(func(t *testing.T, prefix, delim, start string, page uint8) {
		q := url.Values{"list-type": {"2"}, "encoding-type": {"url"}, "max-keys": {strconv.Itoa(int(page%8) + 1)}}
		for k, v := range map[string]string{"prefix": prefix, "delimiter": delim, "start-after": start} {
			if v != "" {
				q.Set(k, v)
			}
		}
		var got []string
		for n := 0; ; n++ {
			if n > len(keys)+1 {
				t.Fatalf("no end after %d pages", n)
			}
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/acme?"+q.Encode(), nil))
			if w.Code != 200 {
				t.Fatalf("%d %s", w.Code, w.Body)
			}
			var res struct {
				IsTruncated           bool
				NextContinuationToken string
				Contents              []struct{ Key string }
				CommonPrefixes        []struct{ Prefix string }
			}
			if err := xml.Unmarshal(w.Body.Bytes(), &res); err != nil {
				t.Fatal(err)
			}
			var items []string
			for _, c := range res.Contents {
				items = append(items, c.Key)
			}
			for _, p := range res.CommonPrefixes {
				items = append(items, p.Prefix)
			}
			for _, it := range items {
				k, err := url.QueryUnescape(it)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, k)
			}
			if !res.IsTruncated {
				break
			}
			q.Set("continuation-token", res.NextContinuationToken)
		}
		sort.Strings(got)
		if want := reference(keys, prefix, delim, start); !slices.Equal(got, want) {
			t.Fatalf("\n got %q\nwant %q", got, want)
		}
	})
}
