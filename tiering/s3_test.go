package tiering

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/internal/mototest"
)

// moto is a real, independent S3 server (moto_server, from PyPI) run for
// one test, and an SDK client to it that does not go through S3Backend.
type moto struct {
	endpoint string
	client   *s3.Client
}

// startMoto starts moto_server on a free loopback port and stops it when
// the test ends. moto comes from the conformance suites' private
// virtualenv (conformance/venv.sh installs it there once, never into the
// user's Python). Without it (and no way to install it) the test is
// skipped; conformance/suites/tier-s3.sh then fails in CI instead.
func startMoto(t *testing.T) *moto {
	t.Helper()
	s := mototest.Start(t)
	return &moto{endpoint: s.Endpoint, client: s.Client}
}

func (m *moto) config(bucket, prefix string) S3Config {
	c := DefaultConfig().S3
	c.Endpoint, c.Bucket, c.Prefix, c.PathStyle = m.endpoint, bucket, prefix, true
	c.AccessKeyID, c.SecretAccessKey = "test", "test"
	c.PartSize = minS3PartSize
	return c
}

// backend creates bucket and returns a backend on it.
func (m *moto) backend(t *testing.T, bucket, prefix string) *S3Backend {
	t.Helper()
	if _, err := m.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	b, err := OpenS3(m.config(bucket, prefix))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// get reads an object with the independent client.
func (m *moto) get(t *testing.T, bucket, key string) []byte {
	t.Helper()
	out, err := m.client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("get s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// keys lists a bucket with the independent client.
func (m *moto) keys(t *testing.T, bucket string) []string {
	t.Helper()
	var keys []string
	p := s3.NewListObjectsV2Paginator(m.client, &s3.ListObjectsV2Input{Bucket: &bucket})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, *o.Key)
		}
	}
	return keys
}

func (m *moto) uploads(t *testing.T, bucket string) int {
	t.Helper()
	out, err := m.client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Uploads)
}

func put(t *testing.T, b Backend, key string, data []byte) {
	t.Helper()
	w, err := b.Create(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	// Uneven writes, so part boundaries fall inside them.
	for len(data) > 0 {
		n := min(len(data), 1+rand.IntN(3<<20))
		if _, err := w.Write(data[:n]); err != nil {
			t.Fatal(err)
		}
		data = data[n:]
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.IntN(256))
	}
	return b
}

func TestS3Backend(t *testing.T) {
	m := startMoto(t)
	b := m.backend(t, "tier", "silt/t2/")
	ctx := context.Background()

	small := []byte("hello\nworld\n")
	put(t, b, "t/s/segment=0/a", []byte("first"))
	put(t, b, "t/s/segment=0/a", small) // a re-upload replaces
	put(t, b, "t/s/segment=1/b", []byte("x"))
	put(t, b, "t/s2/segment=0/c", []byte("y"))
	put(t, b, "t/s/segment=0/empty", nil)
	exact := randomBytes(minS3PartSize)
	put(t, b, "t/big/segment=0/exact", exact) // one PutObject
	big := randomBytes(2*minS3PartSize + 12345)
	put(t, b, "t/big/segment=0/multi", big) // three parts

	// The layout is <prefix>/<key>, readable by any S3 client.
	if got := m.get(t, "tier", "silt/t2/t/s/segment=0/a"); !bytes.Equal(got, small) {
		t.Fatalf("raw object = %q", got)
	}
	if got := m.get(t, "tier", "silt/t2/t/big/segment=0/multi"); !bytes.Equal(got, big) {
		t.Fatalf("raw multipart object differs (%d bytes, want %d)", len(got), len(big))
	}

	// Aborted uploads leave nothing, multipart ones included; an
	// unfinished one is invisible.
	for _, n := range []int{3, minS3PartSize + 1} {
		w, err := b.Create(ctx, "t/s/segment=0/aborted")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(randomBytes(n)); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("second abort: %v", err)
		}
		if _, err := b.Stat(ctx, "t/s/segment=0/aborted"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("aborted upload of %d bytes visible: %v", n, err)
		}
		if u := m.uploads(t, "tier"); u != 0 {
			t.Fatalf("%d multipart uploads left after abort", u)
		}
	}
	w, _ := b.Create(ctx, "t/s/segment=0/unfinished")
	w.Write(randomBytes(minS3PartSize + 1)) // one part sent, not completed

	t.Run("list", func(t *testing.T) {
		tests := []struct {
			prefix string
			want   []string
		}{
			{"t/s/", []string{"t/s/segment=0/a", "t/s/segment=0/empty", "t/s/segment=1/b"}},
			{"t/s", []string{"t/s/segment=0/a", "t/s/segment=0/empty", "t/s/segment=1/b", "t/s2/segment=0/c"}},
			{"t/s/segment=0/", []string{"t/s/segment=0/a", "t/s/segment=0/empty"}},
			{"nothing/", nil},
		}
		for _, tc := range tests {
			got, err := b.List(ctx, tc.prefix)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("List(%q) = %v, want %v", tc.prefix, got, tc.want)
			}
		}
	})

	t.Run("read", func(t *testing.T) {
		tests := []struct {
			name      string
			key       string
			want      []byte
			off, n    int
			wantN     int
			wantErrIs error
		}{
			{"whole", "t/s/segment=0/a", small, 0, len(small), len(small), nil},
			{"middle", "t/s/segment=0/a", small, 3, 5, 5, nil},
			{"past the end", "t/s/segment=0/a", small, 8, 10, len(small) - 8, io.EOF},
			{"at the end", "t/s/segment=0/a", small, len(small), 1, 0, io.EOF},
			{"empty object", "t/s/segment=0/empty", nil, 0, 4, 0, io.EOF},
			{"across parts", "t/big/segment=0/multi", big, minS3PartSize - 10, 20, 20, nil},
			{"last part", "t/big/segment=0/multi", big, len(big) - 100, 100, 100, nil},
			{"exact part size", "t/big/segment=0/exact", exact, 0, len(exact), len(exact), nil},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				o, err := b.Open(ctx, tc.key)
				if err != nil {
					t.Fatal(err)
				}
				defer o.Close()
				if o.Size() != int64(len(tc.want)) {
					t.Fatalf("Size() = %d, want %d", o.Size(), len(tc.want))
				}
				p := make([]byte, tc.n)
				n, err := o.ReadAt(p, int64(tc.off))
				if n != tc.wantN || !errors.Is(err, tc.wantErrIs) && !(err == nil && tc.wantErrIs == nil) {
					t.Fatalf("ReadAt(%d, %d) = %d, %v; want %d, %v", tc.n, tc.off, n, err, tc.wantN, tc.wantErrIs)
				}
				if !bytes.Equal(p[:n], tc.want[tc.off:tc.off+n]) {
					t.Fatalf("ReadAt(%d, %d) returned the wrong bytes", tc.n, tc.off)
				}
			})
		}
	})

	t.Run("stat", func(t *testing.T) {
		before := time.Now().Add(-time.Minute)
		info, err := b.Stat(ctx, "t/big/segment=0/multi")
		if err != nil || info.Key != "t/big/segment=0/multi" || info.Size != int64(len(big)) || info.ModTime.Before(before) {
			t.Fatalf("Stat = %+v, %v", info, err)
		}
		for _, k := range []string{"t/s/segment=0/nope", "t/s/segment=0/unfinished", "t/s"} {
			if _, err := b.Stat(ctx, k); !errors.Is(err, ErrNotExist) {
				t.Errorf("Stat(%s) = %v, want ErrNotExist", k, err)
			}
			if _, err := b.Open(ctx, k); !errors.Is(err, ErrNotExist) {
				t.Errorf("Open(%s) = %v, want ErrNotExist", k, err)
			}
		}
		for _, k := range []string{"", "/abs", "t/../x", "t//x", "dir/"} {
			if _, err := b.Stat(ctx, k); err == nil || errors.Is(err, ErrNotExist) {
				t.Errorf("Stat(%q) = %v, want an invalid-key error", k, err)
			}
		}
	})

	t.Run("replaced while open", func(t *testing.T) {
		put(t, b, "t/r/segment=0/x", []byte("one"))
		o, err := b.Open(ctx, "t/r/segment=0/x")
		if err != nil {
			t.Fatal(err)
		}
		put(t, b, "t/r/segment=0/x", []byte("two"))
		if _, err := o.ReadAt(make([]byte, 3), 0); err == nil || !strings.Contains(err.Error(), "replaced") {
			t.Fatalf("read of a replaced object = %v, want an error", err)
		}
	})

	t.Run("delete", func(t *testing.T) {
		for _, k := range []string{"t/s/segment=0/a", "t/s/segment=0/unfinished", "t/s/segment=0/never"} {
			if err := b.Delete(ctx, k); err != nil {
				t.Fatalf("Delete(%s): %v", k, err)
			}
		}
		if _, err := b.Stat(ctx, "t/s/segment=0/a"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("deleted object still there: %v", err)
		}
		if u := m.uploads(t, "tier"); u != 0 {
			t.Fatalf("Delete left %d multipart uploads", u)
		}
		got, _ := b.List(ctx, "t/s/segment=0/")
		if fmt.Sprint(got) != "[t/s/segment=0/empty]" {
			t.Fatalf("after delete: %v", got)
		}
	})
}

func TestS3ListPages(t *testing.T) {
	m := startMoto(t)
	b := m.backend(t, "pages", "")
	b.listPageSize = 7
	ctx := context.Background()
	var want []string
	for i := 0; i < 45; i++ {
		k := fmt.Sprintf("t/s/segment=%d/%05d", i%2, i)
		put(t, b, k, []byte{byte(i)})
		if i%2 == 1 {
			want = append(want, k)
		}
	}
	put(t, b, "t/s2/segment=1/x", []byte("not listed"))
	got, err := b.List(ctx, "t/s/segment=1/")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("List over pages of 7 = %v, want %v", got, want)
	}
}

// corruptingTransport checks that every PUT carries the Content-MD5 of
// its body, then flips a byte of the body, as a faulty network or proxy
// would after the client computed the digest.
type corruptingTransport struct {
	http.RoundTripper
	t *testing.T
}

func (c corruptingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut && req.Body != nil {
		data, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		sum := md5.Sum(data)
		if got, want := req.Header.Get("Content-MD5"), base64.StdEncoding.EncodeToString(sum[:]); got != want {
			c.t.Errorf("PUT %s: Content-MD5 %q, want %q", req.URL.Path, got, want)
		}
		if len(data) > 0 {
			data[len(data)/2] ^= 0xff
		}
		req.Body = io.NopCloser(bytes.NewReader(data))
	}
	return c.RoundTripper.RoundTrip(req)
}

// TestS3CorruptionInTransit: AWS answers a body that does not match its
// Content-MD5 with BadDigest; moto does not check the header, so there
// the ETag check has to catch it. Either way the upload fails and
// nothing is visible.
func TestS3CorruptionInTransit(t *testing.T) {
	m := startMoto(t)
	m.backend(t, "corrupt", "")
	cfg := m.config("corrupt", "")
	client := s3.New(s3.Options{
		Region: cfg.Region, BaseEndpoint: aws.String(cfg.Endpoint), UsePathStyle: true,
		Credentials:                credentials.NewStaticCredentialsProvider("test", "test", ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		HTTPClient:                 &http.Client{Transport: corruptingTransport{http.DefaultTransport, t}},
		RetryMaxAttempts:           1,
	})
	b := newS3Backend(client, cfg)
	for _, n := range []int{100, minS3PartSize + 100} {
		w, err := b.Create(context.Background(), "t/s/segment=0/x")
		if err != nil {
			t.Fatal(err)
		}
		_, werr := w.Write(randomBytes(n))
		if werr == nil {
			werr = w.Finish()
		}
		if werr == nil {
			t.Fatalf("%d bytes: a corrupted upload was accepted", n)
		}
		if !strings.Contains(werr.Error(), "Digest") && !strings.Contains(werr.Error(), "ETag") {
			t.Fatalf("%d bytes: upload failed, but not for its digest: %v", n, werr)
		}
		w.Abort()
		// A failed part is never completed: nothing is visible and no
		// upload is left. (A corrupt single PutObject moto keeps, where
		// AWS would not have stored it; the Tierer never commits it and
		// deletes it with its upload intent.)
		if n > minS3PartSize {
			if _, err := b.Stat(context.Background(), "t/s/segment=0/x"); !errors.Is(err, ErrNotExist) {
				t.Fatalf("%d bytes: corrupt multipart object visible: %v", n, err)
			}
			if u := m.uploads(t, "corrupt"); u != 0 {
				t.Fatalf("%d bytes: %d multipart uploads left behind", n, u)
			}
		}
		b.Delete(context.Background(), "t/s/segment=0/x")
	}
}

// newS3Env is env (helpers_test.go) with an s3 backend in moto.
func newS3Env(t *testing.T, cfg Config, be Backend) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: &clock{}, cfg: cfg, be: be}
	e.open()
	t.Cleanup(e.close)
	return e
}

// TestS3Tierer seals chunks into moto and checks that the objects, read
// by an independent client, are byte-identical to the events read back
// from tier 1, and that an interrupted upload leaves no orphan.
func TestS3Tierer(t *testing.T) {
	m := startMoto(t)
	b := m.backend(t, "lake", "prod")
	cfg := testConfig()
	cfg.Backend, cfg.S3 = "s3", m.config("lake", "prod")
	e := newS3Env(t, cfg, b)
	for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
		e.createStream("acme", "s-"+string(enc), enc, 2)
	}
	want := map[string][]byte{}
	readFrom := map[string]uint64{}
	for round := 0; round < 4; round++ {
		for _, enc := range []core.Encoding{core.EncodingLines, core.EncodingFramed} {
			stream := "s-" + string(enc)
			for seg := 0; seg < 2; seg++ {
				id := fmt.Sprint(seg)
				e.append("acme", stream, id, events(fmt.Sprintf("r%d", round), 9+seg*4, 20+seg*90+round*13)...)
				k := stream + "/" + id
				var enc2 []byte
				enc2, readFrom[k] = e.readEncoded("acme", stream, id, enc, readFrom[k])
				want[k] = append(want[k], enc2...)
			}
		}
		if round == 2 {
			// Upload, then fail before the commit; the next start must
			// delete the object again.
			e.tr.hooks.beforeCommit = func() error { return errInjected }
			e.clock.Advance(time.Hour)
			e.scan()
			e.restart()
		}
		e.scan()
		e.clock.Advance(time.Second)
	}
	e.clock.Advance(time.Hour)
	e.scan()

	committed := map[string]ChunkRecord{}
	for k, w := range want {
		stream, seg, _ := strings.Cut(k, "/")
		if got := e.tier2Bytes("acme", stream, seg); !bytes.Equal(got, w) {
			t.Fatalf("%s: backend holds %d bytes, tier 1 encoded %d", k, len(got), len(w))
		}
		var raw []byte
		for _, c := range e.chunks("acme", stream, seg) {
			obj := m.get(t, "lake", "prod/"+c.Key)
			sum := md5.Sum(obj)
			if int64(len(obj)) != c.Size || hex.EncodeToString(sum[:]) != c.MD5 {
				t.Fatalf("s3://lake/prod/%s: %d bytes md5 %x; chunk record %+v", c.Key, len(obj), sum, c)
			}
			raw = append(raw, obj...)
			committed["prod/"+c.Key] = c
		}
		if !bytes.Equal(raw, w) {
			t.Fatalf("%s: objects in moto hold %d bytes, tier 1 encoded %d", k, len(raw), len(w))
		}
	}
	keys := m.keys(t, "lake")
	chunkKeys, manifests := 0, 0
	for _, k := range keys {
		if isManifest(k) {
			manifests++
			continue
		}
		chunkKeys++
		if _, ok := committed[k]; !ok {
			t.Errorf("moto holds %s, which no chunk record names", k)
		}
	}
	if chunkKeys != len(committed) || chunkKeys < 8 || manifests != 2 {
		t.Fatalf("moto holds %d chunk objects and %d manifests, the catalog %d chunks of 2 streams", chunkKeys, manifests, len(committed))
	}

	// Deleting the stream removes its objects from the bucket.
	if err := e.store.DeleteStream(context.Background(), "acme", "s-lines"); err != nil {
		t.Fatal(err)
	}
	e.scan()
	for _, k := range m.keys(t, "lake") {
		if strings.HasPrefix(k, "prod/acme/s-lines/") {
			t.Fatalf("%s survived the deletion of its stream", k)
		}
	}
}

// TestS3Unreachable: an endpoint nobody listens on must not stop the
// backend from opening or the Tierer from starting; the failure shows in
// the segment's status and tier 1 keeps the events.
func TestS3Unreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testConfig()
	cfg.Backend = "s3"
	cfg.S3.Bucket, cfg.S3.Endpoint, cfg.S3.PathStyle = "b", "http://"+addr, true
	cfg.S3.AccessKeyID, cfg.S3.SecretAccessKey = "k", "s"
	dir := t.TempDir()
	be, err := OpenBackend(cfg, dir)
	if err != nil {
		t.Fatalf("OpenBackend with an unreachable endpoint: %v", err)
	}
	e := newS3Env(t, cfg, be)
	e.createStream("acme", "s", core.EncodingLines, 1)
	e.append("acme", "s", "0", "x")
	e.clock.Advance(time.Hour)
	e.scan()
	st, err := e.tr.Status("acme", "s")
	if err != nil {
		t.Fatal(err)
	}
	s := st.Segments[0]
	if s.Chunks != 0 || s.TieredOffset != 0 || !strings.Contains(s.LastError, addr) || s.RetryAt.IsZero() {
		t.Fatalf("status with tier 2 down: %+v", s)
	}
	if info := e.segInfo("acme", "s", "0"); info.FirstOffset != 0 || info.NextOffset != 1 {
		t.Fatalf("tier 1 touched while tier 2 is down: %+v", info)
	}
}

func TestS3ConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		modify  func(*Config)
		wantErr string // "" = valid
	}{
		{"fs ignores the s3 section", func(c *Config) { c.S3.Bucket = "" }, ""},
		{"s3 with a bucket", func(c *Config) { c.Backend = "s3" }, ""},
		{"s3 on a custom endpoint", func(c *Config) { c.Backend, c.S3.Endpoint = "s3", "https://minio.local:9000" }, ""},
		{"s3 without a bucket", func(c *Config) { c.Backend, c.S3.Bucket = "s3", "" }, "tiering.s3.bucket"},
		{"s3 without a region", func(c *Config) { c.Backend, c.S3.Region = "s3", "" }, "tiering.s3.region"},
		{"endpoint without scheme", func(c *Config) { c.Backend, c.S3.Endpoint = "s3", "minio:9000" }, "tiering.s3.endpoint"},
		{"endpoint with another scheme", func(c *Config) { c.Backend, c.S3.Endpoint = "s3", "ftp://x" }, "tiering.s3.endpoint"},
		{"access key without secret", func(c *Config) { c.Backend, c.S3.AccessKeyID = "s3", "AK" }, "tiering.s3.secret_access_key"},
		{"prefix with ..", func(c *Config) { c.Backend, c.S3.Prefix = "s3", "a/../b" }, "tiering.s3.prefix"},
		{"prefix with an empty element", func(c *Config) { c.Backend, c.S3.Prefix = "s3", "a//b" }, "tiering.s3.prefix"},
		{"part too small", func(c *Config) { c.Backend, c.S3.PartSize = "s3", 1<<20 }, "tiering.s3.part_size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.S3.Bucket = "lake"
			tc.modify(&c)
			err := c.Validate()
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Validate() = %v, want an error naming %q", err, tc.wantErr)
			}
		})
	}
	if c := DefaultConfig(); c.S3.Region != "us-east-1" || c.S3.Endpoint != "" || c.S3.AccessKeyID != "" {
		t.Fatalf("s3 defaults %+v", c.S3)
	}
}
