package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/silt-io/silt/client"
	"github.com/silt-io/silt/introspect"
)

// introServer is a silt serve child with introspection flushed often and
// chunks tiered within a second, and helpers for its API.
type introServer struct {
	*scaleServer
	t *testing.T
}

func startIntroServer(t *testing.T, extra ...string) *introServer {
	if testing.Short() {
		t.Skip("starts a server child and reads through every head; skipped with -short")
	}
	s := newScaleServer(t, 4096)
	s.extra = append([]string{"--introspect.flush_interval", "20ms", "--tiering.max_lag", "1s", "--tiering.interval", "100ms"}, extra...)
	s.start()
	return &introServer{scaleServer: s, t: t}
}

func (s *introServer) call(token, method, path, body string) (int, string) {
	s.t.Helper()
	req, err := http.NewRequest(method, "http://"+s.api+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if method == "POST" && strings.HasSuffix(req.URL.Path, "/events") {
		req.Header.Set("Content-Type", "application/x-ndjson") // one event a line
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *introServer) must(want int, token, method, path, body string) string {
	s.t.Helper()
	code, b := s.call(token, method, path, body)
	if code != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, code, b, want)
	}
	return b
}

// user creates a principal with grants ("admin acme") and returns a token.
func (s *introServer) user(name string, grants ...string) string {
	s.t.Helper()
	s.must(201, s.token, "POST", "/v1/principals", `{"name":"`+name+`"}`)
	for _, g := range grants {
		action, res, _ := strings.Cut(g, " ")
		s.must(201, s.token, "POST", "/v1/grants", `{"principal":"`+name+`","action":"`+action+`","resource":"`+res+`"}`)
	}
	var tok struct {
		Secret string `json:"token"`
	}
	json.Unmarshal([]byte(s.must(201, s.token, "POST", "/v1/principals/"+name+"/tokens", `{"label":"t"}`)), &tok)
	if tok.Secret == "" {
		s.t.Fatalf("no token issued for %s", name)
	}
	return tok.Secret
}

// events reads a system stream through the native API.
func (s *introServer) events(stream string) []introspect.Event {
	s.t.Helper()
	code, b := s.call(s.token, "GET", "/v1/tenants/silt-system/streams/"+stream+"/events?format=raw&max=10000", "")
	if code == http.StatusNotFound {
		return nil
	}
	if code != http.StatusOK {
		s.t.Fatalf("read %s: %d %s", stream, code, b)
	}
	return decodeEvents(s.t, []byte(b))
}

func decodeEvents(t *testing.T, b []byte) []introspect.Event {
	t.Helper()
	var out []introspect.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e introspect.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("event %q: %v", sc.Bytes(), err)
		}
		out = append(out, e)
	}
	return out
}

// waitEvent waits until stream holds an event that match accepts (events
// are written in batches, every 20ms here) and returns it.
func (s *introServer) waitEvent(stream, what string, match func(introspect.Event) bool) introspect.Event {
	s.t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		evs := s.events(stream)
		for i := len(evs) - 1; i >= 0; i-- {
			if match(evs[i]) {
				return evs[i]
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no %s in %s; it holds %d events: %+v", what, stream, len(evs), evs)
		}
	}
}

// TestIntrospectionEvents makes known requests on every head and checks
// the events they leave, field by field; then the denial, the tiering
// event, the access rules on the system streams and the reservation.
func TestIntrospectionEvents(t *testing.T) {
	s := startIntroServer(t)
	ctx := context.Background()
	s.must(201, s.token, "POST", "/v1/tenants", `{"name":"acme"}`)
	s.must(201, s.token, "POST", "/v1/tenants", `{"name":"other"}`)
	s.must(201, s.token, "POST", "/v1/tenants/acme/streams", `{"name":"clicks","segments":1}`)
	s.must(201, s.token, "POST", "/v1/tenants/other/streams", `{"name":"logs","segments":1}`)
	s.must(200, s.token, "POST", "/v1/tenants/acme/streams/clicks/events?segment=0", "one\ntwo\nthree\n")

	api := s.waitEvent("acme.requests", "append event", func(e introspect.Event) bool {
		return e.Operation == "POST /v1/tenants/{tenant}/streams/{stream}/events"
	})
	if api.Head != "api" || api.Principal != "root" || api.Tenant != "acme" || api.Stream != "clicks" || api.Status != 200 || api.Class != "ok" ||
		!strings.HasPrefix(api.Client, "127.0.0.1:") || api.Node == "" || api.Kind != introspect.KindRequest || api.Bytes == 0 {
		t.Errorf("append event = %+v", api)
	}

	// S3: a GET of the chunk object, whose size the listing gives.
	s3read, err := s.s3Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		b, err := s3read(ctx, "acme", "clicks", "0")
		if err == nil && string(b) == "one\ntwo\nthree\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the events in tier 2: %q, %v", b, err)
		}
	}
	code, keys := s.call(s.token, "POST", "/v1/principals/root/s3-keys", "")
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if json.Unmarshal([]byte(keys), &key); code != 201 || key.ID == "" {
		t.Fatalf("issue an S3 key: %d %s", code, keys)
	}
	c3 := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.s3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key.ID, key.Secret, "")})
	list, err := c3.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("acme"), Prefix: aws.String("clicks/segment=0/")})
	if err != nil {
		t.Fatal(err)
	}
	var chunk string
	var size int64
	for _, o := range list.Contents {
		if strings.HasSuffix(aws.ToString(o.Key), ".txt") {
			chunk, size = aws.ToString(o.Key), aws.ToInt64(o.Size)
		}
	}
	if chunk == "" {
		t.Fatalf("no chunk listed: %+v", list.Contents)
	}
	out, err := c3.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("acme"), Key: aws.String(chunk)})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out.Body)
	out.Body.Close()
	get := s.waitEvent("acme.requests", "S3 GetObject event", func(e introspect.Event) bool {
		return e.Head == "s3" && e.Operation == "GetObject"
	})
	if get.Bytes != size || get.Status != 200 || get.Class != "ok" || get.Principal != "root" || get.Tenant != "acme" || get.Stream != "clicks" || !strings.HasPrefix(get.Client, "127.0.0.1:") {
		t.Errorf("S3 GetObject of %s (%d bytes) = %+v; want bytes=%d, status 200, principal root, tenant acme, stream clicks", chunk, size, get, size)
	}

	// NFS and WebHDFS reads of the same segment.
	nfsRead, closeNFS, err := s.nfsReader()
	if err != nil {
		t.Fatal(err)
	}
	if b, err := nfsRead(ctx, "acme", "clicks", "0"); err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("NFS read: %q, %v", b, err)
	}
	closeNFS()
	nfsEv := s.waitEvent("acme.requests", "NFS READ event", func(e introspect.Event) bool { return e.Head == "nfs" && e.Operation == "nfs.READ" })
	if nfsEv.Principal != "root" || nfsEv.Tenant != "acme" || nfsEv.Stream != "clicks" || nfsEv.Class != "ok" || nfsEv.Status != 0 || nfsEv.Bytes <= size || !strings.HasPrefix(nfsEv.Client, "127.0.0.1:") {
		t.Errorf("NFS READ event = %+v; want root, acme/clicks, ok, a reply larger than the %d bytes read", nfsEv, size)
	}
	if b, err := s.webhdfsReader()(ctx, "acme", "clicks", "0"); err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Fatalf("WebHDFS read: %q, %v", b, err)
	}
	hdfsEv := s.waitEvent("acme.requests", "WebHDFS OPEN event", func(e introspect.Event) bool {
		return e.Head == "webhdfs" && e.Operation == "OPEN" && e.Status == 200
	})
	if hdfsEv.Principal != "root" || hdfsEv.Tenant != "acme" || hdfsEv.Stream != "clicks" || hdfsEv.Bytes != size {
		t.Errorf("WebHDFS OPEN event = %+v; want root, acme/clicks, %d bytes", hdfsEv, size)
	}

	// A denial: bob holds nothing in acme.
	bob := s.user("bob", "read other")
	s.must(403, bob, "GET", "/v1/tenants/acme/streams/clicks/events", "")
	deny := s.waitEvent("acme.denials", "denial of bob", func(e introspect.Event) bool { return e.Principal == "bob" })
	if deny.Head != "api" || deny.Action != "read" || deny.Tenant != "acme" || deny.Stream != "clicks" || !strings.Contains(deny.Reason, "may not read") {
		t.Errorf("denial event = %+v", deny)
	}

	// The chunk's upload left a tiering event with its lag.
	up := s.waitEvent("acme.tiering", "upload of clicks", func(e introspect.Event) bool { return e.Stream == "clicks" && e.Outcome == "uploaded" })
	if up.Events != 3 || up.Bytes != size || up.Segment != "0" || up.LagMS <= 0 {
		t.Errorf("tiering event = %+v; want 3 events, %d bytes, segment 0, a lag", up, size)
	}

	// Access: a tenant admin reads its own tenant's events only; an
	// admin reads all; the system tenant takes no writes from anyone.
	s.must(200, s.token, "GET", "/v1/tenants/other/streams/logs", "") // makes other.requests
	s.waitEvent("other.requests", "request on other", func(introspect.Event) bool { return true })
	acmeAdmin := s.user("acmeadm", "admin acme")
	if evs := decodeEvents(t, []byte(s.must(200, acmeAdmin, "GET", "/v1/tenants/silt-system/streams/acme.requests/events?format=raw", ""))); len(evs) == 0 {
		t.Error("the tenant admin read no events of its own tenant")
	}
	s.must(403, acmeAdmin, "GET", "/v1/tenants/silt-system/streams/other.requests/events?format=raw", "")
	s.must(403, acmeAdmin, "GET", "/v1/tenants/silt-system/streams/server_wide.requests/events?format=raw", "")
	s.must(403, bob, "GET", "/v1/tenants/silt-system/streams/acme.requests/events?format=raw", "")
	s.must(200, s.token, "GET", "/v1/tenants/silt-system/streams/other.requests/events?format=raw", "")
	var listed struct {
		Streams []struct{ Name string } `json:"streams"`
	}
	json.Unmarshal([]byte(s.must(200, acmeAdmin, "GET", "/v1/tenants/silt-system/streams", "")), &listed)
	for _, st := range listed.Streams {
		if !strings.HasPrefix(st.Name, "acme.") {
			t.Errorf("the tenant admin's listing of silt-system shows %s", st.Name)
		}
	}
	if len(listed.Streams) == 0 {
		t.Error("the tenant admin's listing of silt-system is empty")
	}
	s.must(200, acmeAdmin, "GET", "/v1/health?tenant=acme", "")
	s.must(403, acmeAdmin, "GET", "/v1/health?tenant=other", "")
	s.must(403, acmeAdmin, "GET", "/v1/health", "")
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/tenants", `{"name":"silt-system"}`},
		{"POST", "/v1/tenants/silt-system/streams", `{"name":"mine"}`},
		{"POST", "/v1/tenants/silt-system/streams/acme.requests/events", "{\"forged\":true}\n"},
		{"DELETE", "/v1/tenants/silt-system/streams/acme.requests", ""},
		{"DELETE", "/v1/tenants/silt-system", ""},
	} {
		if code, b := s.call(s.token, r.method, r.path, r.body); code != 403 || !strings.Contains(b, `"reserved"`) {
			t.Errorf("%s %s as root: %d %s, want 403 reserved", r.method, r.path, code, b)
		}
	}

	// The system streams are streams like any other: acme.requests is
	// read through S3 once tiered, as JSON lines.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		b, err := s3read(ctx, "silt-system", "acme.requests", "0")
		if err == nil && len(b) > 0 {
			if evs := decodeEvents(t, b); evs[0].Tenant != "acme" || evs[0].Kind != introspect.KindRequest {
				t.Errorf("first event read over S3 = %+v", evs[0])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acme.requests never readable over S3: %v", err)
		}
	}
	// Over S3 the tenant admin lists its own system streams only, and
	// another tenant's is refused as S3 refuses.
	code, keys = s.call(s.token, "POST", "/v1/principals/acmeadm/s3-keys", "")
	var akey struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	if json.Unmarshal([]byte(keys), &akey); code != 201 || akey.ID == "" {
		t.Fatalf("issue an S3 key for acmeadm: %d %s", code, keys)
	}
	a3 := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + s.s3), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(akey.ID, akey.Secret, "")})
	objs, err := a3.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: aws.String("silt-system")})
	if err != nil {
		t.Fatalf("tenant admin's listing of silt-system over S3: %v", err)
	}
	if len(objs.Contents) == 0 {
		t.Error("tenant admin's S3 listing of silt-system is empty")
	}
	for _, o := range objs.Contents {
		if !strings.HasPrefix(aws.ToString(o.Key), "acme.") {
			t.Errorf("tenant admin's S3 listing of silt-system shows %s", aws.ToString(o.Key))
		}
	}
	// Root reads other.requests' manifest; acmeadm is refused it.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		out, err := c3.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("silt-system"), Key: aws.String("other.requests/_manifest.json")})
		if err == nil {
			out.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("root never read other.requests/_manifest.json over S3: %v", err)
		}
	}
	if out, err := a3.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String("silt-system"), Key: aws.String("other.requests/_manifest.json")}); err == nil {
		out.Body.Close()
		t.Error("the tenant admin read another tenant's system stream over S3")
	} else if !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("another tenant's system stream over S3: %v, want AccessDenied", err)
	}
}

// TestIntrospectionOff checks the off switch: no system tenant, no
// events, and silt health says why it has nothing.
func TestIntrospectionOff(t *testing.T) {
	s := startIntroServer(t, "--introspect.enabled=false")
	s.must(201, s.token, "POST", "/v1/tenants", `{"name":"acme"}`)
	var tenants struct {
		Tenants []struct{ Name string } `json:"tenants"`
	}
	json.Unmarshal([]byte(s.must(200, s.token, "GET", "/v1/tenants", "")), &tenants)
	if len(tenants.Tenants) != 1 || tenants.Tenants[0].Name != "acme" {
		t.Errorf("tenants = %+v, want acme alone", tenants.Tenants)
	}
	s.must(404, s.token, "GET", "/v1/tenants/silt-system", "")
	if b := s.must(501, s.token, "GET", "/v1/health", ""); !strings.Contains(b, "introspect.enabled=false") {
		t.Errorf("/v1/health with introspection off: %s", b)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"health", "--server", "http://" + s.api, "--token", s.token}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "introspection is off") {
		t.Errorf("silt health with introspection off: exit %d, %q", code, errb.String())
	}
}

// TestHealthCounts makes a known mix of requests on tenant acme and checks
// that silt health reports exactly their error counts.
func TestHealthCounts(t *testing.T) {
	s := startIntroServer(t)
	s.must(201, s.token, "POST", "/v1/tenants", `{"name":"acme"}`)
	s.must(201, s.token, "POST", "/v1/tenants/acme/streams", `{"name":"clicks","segments":1}`) // api ok
	for range 3 {
		s.must(200, s.token, "POST", "/v1/tenants/acme/streams/clicks/events", "x\n") // api ok
	}
	for range 4 {
		s.must(404, s.token, "GET", "/v1/tenants/acme/streams/nope", "") // api 4xx
	}
	s.must(400, s.token, "GET", "/v1/tenants/acme/streams/clicks/events?max=-1", "") // api 4xx
	for range 2 {
		resp, err := http.Get("http://" + s.s3 + "/acme/clicks/x") // s3 4xx, and a denial of anonymous
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Fatalf("anonymous S3 GET: %d, want 403", resp.StatusCode)
		}
	}
	want := map[string][3]int{"api": {9, 5, 0}, "s3": {2, 2, 0}} // requests, 4xx, 5xx
	var h client.HealthSummary
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var out, errb bytes.Buffer
		if code := run([]string{"health", "--server", "http://" + s.api, "--token", s.token, "--tenant", "acme", "-o", "json"}, nil, &out, &errb); code != 0 {
			t.Fatalf("silt health: exit %d: %s", code, errb.String())
		}
		h = client.HealthSummary{}
		if err := json.Unmarshal(out.Bytes(), &h); err != nil {
			t.Fatalf("silt health -o json: %v: %s", err, out.String())
		}
		got := map[string][3]int{}
		for _, x := range h.Heads {
			got[x.Head] = [3]int{x.Requests, x.ClientErrors, x.ServerErrors}
		}
		if got["api"] == want["api"] && got["s3"] == want["s3"] && len(got) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("silt health counts %v, want %v:\n%s", got, want, out.String())
		}
	}
	for _, x := range h.Heads {
		if x.Head == "api" && (x.ClientErrorRate != 5.0/9 || x.ServerErrorRate != 0) {
			t.Errorf("api rates = %v, %v; want 5/9, 0", x.ClientErrorRate, x.ServerErrorRate)
		}
		if x.Head == "s3" && x.Denials != 2 {
			t.Errorf("s3 denials = %d, want 2", x.Denials)
		}
	}
	if len(h.Denials) != 1 || h.Denials[0].Principal != "anonymous" || h.Denials[0].Count != 2 {
		t.Errorf("denials = %+v, want anonymous twice", h.Denials)
	}
	ops := map[string]client.OpLatency{}
	for _, o := range h.Slowest {
		ops[o.Head+" "+o.Operation] = o
	}
	if o := ops["api GET /v1/tenants/{tenant}/streams/{stream}"]; o.Count != 4 || o.MaxMS <= 0 || o.P99MS > o.MaxMS {
		t.Errorf("slowest entry of the 404s = %+v", o)
	}
	// The table says the same.
	var out, errb bytes.Buffer
	if code := run([]string{"health", "--server", "http://" + s.api, "--token", s.token, "--tenant", "acme"}, nil, &out, &errb); code != 0 {
		t.Fatalf("silt health: exit %d: %s", code, errb.String())
	}
	table := out.String()
	for _, line := range []string{"api", "s3"} {
		found := false
		for _, l := range strings.Split(table, "\n") {
			f := strings.Fields(l)
			if len(f) >= 6 && f[0] == line {
				w := want[line]
				found = f[2] == strconv.Itoa(w[0]) && f[3] == strconv.Itoa(w[1]) && f[5] == strconv.Itoa(w[2])
				break // the first row of the head is the heads table's
			}
		}
		if !found {
			t.Errorf("table has no row for %s with %v:\n%s", line, want[line], table)
		}
	}
}
