package s3

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view/viewtest"
)

// benchServer serves a tenant of 20 streams × 50 segments × 4 chunks to
// anonymous readers, without a network in between.
func benchServer(b *testing.B) http.Handler {
	files := map[string][]byte{}
	for s := range 20 {
		for g := range 50 {
			for c := range 4 {
				files[fmt.Sprintf("/bench/s%02d/segment=%03d/%06d.chunk", s, g, c)] = []byte("chunk")
			}
		}
	}
	mem := viewtest.NewMemView(viewtest.Fixture{Files: files}, time.Unix(1e9, 0))
	srv, err := New(DefaultConfig(), mem, noKeys{}, acl.AllowAll{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return srv.Handler()
}

type noKeys struct{}

func (noKeys) LookupS3Key(string) (acl.Principal, string, error) {
	return acl.Principal{}, "", acl.ErrNotFound
}

func benchGet(b *testing.B, h http.Handler, target string) {
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
		if w.Code != 200 {
			b.Fatalf("%s: %d %s", target, w.Code, w.Body)
		}
		io.Copy(io.Discard, w.Body)
	}
}

func BenchmarkListObjectsV2Page(b *testing.B) {
	benchGet(b, benchServer(b), "/bench?list-type=2&max-keys=100&start-after=s10/segment%3D025/")
}

func BenchmarkListObjectsV2Delimiter(b *testing.B) {
	benchGet(b, benchServer(b), "/bench?list-type=2&prefix=s05/&delimiter=/")
}

func BenchmarkGetObject(b *testing.B) {
	benchGet(b, benchServer(b), "/bench/s03/segment=007/000002.chunk")
}
