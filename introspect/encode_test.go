package introspect

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// TestAppendEventMatchesEncodingJSON checks that the writer's encoder
// gives encoding/json's bytes for events of every kind, including strings
// that need escaping and invalid UTF-8.
func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 12, 6, 5, 13, 21, 606678439, time.UTC)
	cases := map[string]Event{
		"request": {Time: at, Kind: KindRequest, Head: "s3", Node: "db5", Principal: "etl", Tenant: "acme", Stream: "clicks",
			Operation: "GetObject", Status: 200, Class: "ok", Bytes: 1 << 20, LatencyMS: 3.412, Client: "10.0.0.7:53506"},
		"nfs ok, status 0": {Time: at, Kind: KindRequest, Head: "nfs", Operation: "nfs.READ", Class: "ok", Bytes: 120, LatencyMS: 0.021},
		"denial": {Time: at, Kind: KindDenial, Head: "api", Principal: "bob", Tenant: "acme", Stream: "clicks", Action: "read",
			Reason: `acl: access denied: principal "bob" may not read stream acme/clicks; it needs a grant of read (or admin) on "acme/clicks" or wider`},
		"tiering": {Time: at, Kind: KindTiering, Tenant: "acme", Stream: "clicks", Segment: "0", Outcome: "uploaded",
			FirstOffset: 1 << 40, Events: 3, Bytes: 14, LagMS: 1234.567},
		"failure": {Time: at, Kind: KindTiering, Tenant: "acme", Stream: "clicks", Segment: "0", Outcome: "failed", Error: "put: \"503\"\n\tslow down"},
		"escapes": {Time: at, Kind: KindRequest, Tenant: "a\x00b\x1f<>&\\\"\u2028\u2029é😀", Stream: "bad\xff\xfeutf8",
			Client: "[::1]:80", LatencyMS: 1e-7, Bytes: -1, Status: -5},
		"huge latency": {Time: at, Kind: KindRequest, LatencyMS: 3e21},
		"zero":         {Time: time.Unix(0, 0).UTC(), Kind: KindRequest},
		"snapshot":     {Time: at, Kind: KindMetrics, Node: "db5", Metrics: map[string]float64{`silt_head_requests_total{head="s3"}`: 2}},
	}
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(&e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encode(nil, &e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encode:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func FuzzAppendEvent(f *testing.F) {
	f.Add("acme", "clicks", "GetObject", 3.5, int64(10))
	f.Add("a\"\\\n", "\xff", "<&>", 1e-9, int64(-1))
	f.Fuzz(func(t *testing.T, tenant, stream, op string, lat float64, n int64) {
		if lat != lat || lat > 1e300 || lat < -1e300 {
			return // durations are finite
		}
		e := Event{Time: time.Unix(n, 0).UTC(), Kind: KindRequest, Tenant: tenant, Stream: stream, Operation: op, LatencyMS: lat, Bytes: n}
		want, err := json.Marshal(&e)
		if err != nil {
			return
		}
		if got := appendEvent(nil, &e); !bytes.Equal(got, want) {
			t.Fatalf("appendEvent:\n got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	e := Event{Time: time.Now().UTC(), Kind: KindRequest, Head: "s3", Node: "vm", Principal: "etl", Tenant: "acme", Stream: "clicks", Operation: "GetObject", Status: 200, Class: "ok", Bytes: 1 << 20, LatencyMS: 3.2, Client: "10.0.0.7:53506"}
	b.Run("appendEvent", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for i := 0; i < b.N; i++ {
			buf = appendEvent(buf[:0], &e)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			json.Marshal(&e)
		}
	})
}
