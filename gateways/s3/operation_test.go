package s3

import (
	"net/http/httptest"
	"testing"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/view/viewtest"
)

func TestOperation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Domain = "s3.example"
	srv, err := New(cfg, viewtest.NewMemView(viewtest.Fixture{}, mtime), noKeys{}, acl.AllowAll{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		method, host, target, want string
	}{
		"list buckets":       {"GET", "localhost", "/", "ListBuckets"},
		"get object":         {"GET", "localhost", "/acme/s/segment=0/x.ndjson", "GetObject"},
		"head object":        {"HEAD", "localhost", "/acme/s/segment=0/x.ndjson", "HeadObject"},
		"virtual host get":   {"GET", "acme.s3.example", "/s/segment=0/x.ndjson", "GetObject"},
		"virtual host list":  {"GET", "acme.s3.example", "/?list-type=2", "ListObjectsV2"},
		"list v1":            {"GET", "localhost", "/acme?prefix=s/", "ListObjects"},
		"list v2":            {"GET", "localhost", "/acme?list-type=2", "ListObjectsV2"},
		"head bucket":        {"HEAD", "localhost", "/acme", "HeadBucket"},
		"location":           {"GET", "localhost", "/acme?location", "GetBucketLocation"},
		"put refused":        {"PUT", "localhost", "/acme/k", "Write"},
		"delete refused":     {"DELETE", "localhost", "/acme", "Write"},
		"unsupported subres": {"GET", "localhost", "/acme?versioning", "Unsupported"},
	} {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.target, nil)
			r.Host = tc.host
			if got := srv.Operation(r); got != tc.want {
				t.Fatalf("Operation = %q, want %q", got, tc.want)
			}
		})
	}
}
