package webhdfs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/view"
	"github.com/silt-io/silt/view/viewtest"
)

var mtime = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

const wideEntries = 2500

type testEnv struct {
	t      *testing.T
	url    string
	srv    *Server
	files  map[string][]byte
	tokens map[string]string
	skew   time.Duration
	cat    *catalog.Catalog
	acl    *acl.Store
}

func fixtureFiles() map[string][]byte {
	files := map[string][]byte{}
	big := make([]byte, 5000)
	for i := range big {
		big[i] = byte(i * 7)
	}
	for _, p := range []string{
		"/acme/clicks/_manifest.json",
		"/acme/clicks/segment=1/000001.chunk",
		"/acme/clicks/segment=2/000001.chunk",
		"/other/logs/segment=1/000001.chunk",
		"/pub/open/segment=1/000001.chunk",
	} {
		files[p] = []byte("content of " + p + "\n")
	}
	files["/acme/clicks/segment=1/big.chunk"] = big
	for i := range wideEntries {
		files[fmt.Sprintf("/acme/wide/segment=1/%06d.chunk", i)] = []byte("x")
	}
	return files
}

func newTestEnv(t *testing.T, cfg Config) *testEnv {
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
	e := &testEnv{t: t, files: fixtureFiles(), tokens: map[string]string{}, cat: cat, acl: store}
	for name, grants := range map[string][]string{"alice": {"acme"}, "bob": nil} {
		if _, err := store.CreatePrincipal(name); err != nil {
			t.Fatal(err)
		}
		for _, g := range grants {
			if _, err := store.AddGrant(name, acl.Read, g); err != nil {
				t.Fatal(err)
			}
		}
		secret, _, err := store.IssueToken(name, "test", 0)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[name] = secret
	}
	if _, err := store.AddGrant(acl.Anonymous.Name, acl.Read, "pub"); err != nil {
		t.Fatal(err)
	}
	mem := viewtest.NewMemView(viewtest.Fixture{Files: e.files}, mtime)
	e.srv, err = New(cfg, mem, store.Authenticate, store.IssueToken, store, []byte("0123456789abcdef0123"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.now = func() time.Time { return time.Now().Add(e.skew) }
	dt, err := OpenTokenStore(cat, store.GetPrincipal)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.UseDelegationTokens(dt)
	hs := httptest.NewServer(e.srv.Handler())
	t.Cleanup(hs.Close)
	e.url = hs.URL
	return e
}

var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request as who ("" for no credential) and checks what every
// response must satisfy.
func (e *testEnv) do(method, who, rawURL string, body io.Reader) (*http.Response, []byte) {
	e.t.Helper()
	if !strings.HasPrefix(rawURL, "http") {
		rawURL = e.url + rawURL
	}
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+e.tokens[who])
	}
	resp, err := noFollow.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, ok := resp.Header["X-Hadoop-Feinfo"]; ok {
		e.t.Fatalf("%s %s: X-Hadoop-feInfo sent", method, rawURL)
	}
	return resp, b
}

func (e *testEnv) get(who, rawURL string) (*http.Response, []byte) {
	e.t.Helper()
	return e.do("GET", who, rawURL, nil)
}

// getJSON GETs and decodes a 200 JSON answer.
func (e *testEnv) getJSON(who, rawURL string, v any) {
	e.t.Helper()
	resp, b := e.get(who, rawURL)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		e.t.Fatalf("GET %s: %d %q %s", rawURL, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("GET %s: %v in %s", rawURL, err, b)
	}
}

// wantRemote checks a RemoteException answer.
func wantRemote(t *testing.T, resp *http.Response, b []byte, status int, exception, class string) {
	t.Helper()
	var body struct{ RemoteException map[string]string }
	if err := json.Unmarshal(b, &body); err != nil {
		t.Fatalf("%d %s: %v", resp.StatusCode, b, err)
	}
	re := body.RemoteException
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" ||
		re["exception"] != exception || re["javaClassName"] != class || re["message"] == "" {
		t.Fatalf("got %d %q %s, want %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b, status, exception, class)
	}
}

const (
	aceClass = "org.apache.hadoop.security.AccessControlException"
	fnfClass = "java.io.FileNotFoundException"
	iaeClass = "java.lang.IllegalArgumentException"
	secClass = "java.lang.SecurityException"
)

func TestGetFileStatus(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	p := "/acme/clicks/segment=1/000001.chunk"
	resp, b := e.get("alice", "/webhdfs/v1"+p+"?op=GETFILESTATUS")
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	// The exact text Hadoop's JsonUtil would emit, keys sorted.
	want := fmt.Sprintf(`{"FileStatus":{"accessTime":%d,"blockSize":134217728,"childrenNum":0,"fileId":%d,"group":"silt","length":%d,"modificationTime":%d,"owner":"silt","pathSuffix":"","permission":"444","replication":1,"storagePolicy":0,"type":"FILE"}}`,
		mtime.UnixMilli(), int64(view.PathID(p)&^(1<<63)), len(e.files[p]), mtime.UnixMilli())
	if got := strings.TrimSpace(string(b)); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var dir struct{ FileStatus map[string]any }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks/?op=getfilestatus", &dir)
	if fs := dir.FileStatus; fs["type"] != "DIRECTORY" || fs["permission"] != "555" || fs["length"] != 0.0 || len(fs) != 13 {
		t.Fatalf("dir status %v", fs)
	}
	resp, b = e.get("alice", "/webhdfs/v1/acme/nope?op=GETFILESTATUS")
	wantRemote(t, resp, b, 404, "FileNotFoundException", fnfClass)
}

type listing struct {
	FileStatuses struct{ FileStatus []fileStatus }
}

func TestListStatus(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	var l listing
	e.getJSON("alice", "/webhdfs/v1/acme/clicks/segment=1?op=LISTSTATUS", &l)
	var names []string
	for _, fs := range l.FileStatuses.FileStatus {
		names = append(names, fs.PathSuffix)
	}
	if strings.Join(names, ",") != "000001.chunk,big.chunk" || l.FileStatuses.FileStatus[1].Length != 5000 {
		t.Fatalf("listing %+v", l)
	}
	// A whole large directory, streamed over several view pages.
	l = listing{}
	e.getJSON("alice", "/webhdfs/v1/acme/wide/segment=1?op=LISTSTATUS", &l)
	if len(l.FileStatuses.FileStatus) != wideEntries {
		t.Fatalf("wide listing has %d entries", len(l.FileStatuses.FileStatus))
	}
	// The root shows only what the principal may see.
	l = listing{}
	e.getJSON("alice", "/webhdfs/v1/?op=LISTSTATUS", &l)
	if len(l.FileStatuses.FileStatus) != 1 || l.FileStatuses.FileStatus[0].PathSuffix != "acme" {
		t.Fatalf("root for alice: %+v", l)
	}
	// A file lists as itself.
	l = listing{}
	e.getJSON("alice", "/webhdfs/v1/acme/clicks/_manifest.json?op=LISTSTATUS", &l)
	if len(l.FileStatuses.FileStatus) != 1 || l.FileStatuses.FileStatus[0].Type != "FILE" {
		t.Fatalf("file listing: %+v", l)
	}
}

func TestListStatusBatchPaging(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	var got []string
	after, pages := "", 0
	for {
		var b struct {
			DirectoryListing struct {
				PartialListing   listing
				RemainingEntries int
			}
		}
		e.getJSON("alice", "/webhdfs/v1/acme/wide/segment=1?op=LISTSTATUS_BATCH&startAfter="+url.QueryEscape(after), &b)
		pages++
		page := b.DirectoryListing.PartialListing.FileStatuses.FileStatus
		for _, fs := range page {
			got = append(got, fs.PathSuffix)
		}
		if b.DirectoryListing.RemainingEntries == 0 {
			break
		}
		after = page[len(page)-1].PathSuffix
		if pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if pages != 3 || len(got) != wideEntries {
		t.Fatalf("%d pages, %d entries", pages, len(got))
	}
	for i, name := range got {
		if name != fmt.Sprintf("%06d.chunk", i) {
			t.Fatalf("entry %d = %s", i, name)
		}
	}
}

func TestOpenRedirect(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	p := "/acme/clicks/segment=1/big.chunk"
	want := e.files[p]
	resp, b := e.get("alice", "/webhdfs/v1"+p+"?op=OPEN&buffersize=4096")
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("OPEN: %d %s", resp.StatusCode, b)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, e.url+"/webhdfs/v1/acme/clicks/segment=1/big.chunk?") {
		t.Fatalf("Location %s", loc)
	}
	// The data URL works without any credential.
	resp, b = e.get("", loc)
	if resp.StatusCode != 200 || !bytes.Equal(b, want) || resp.ContentLength != int64(len(want)) ||
		resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("data URL: %d %d bytes, Content-Length %d", resp.StatusCode, len(b), resp.ContentLength)
	}
	// Hadoop strips offset and appends its own on every seek.
	stripped := regexp.MustCompile(`&?offset=\d+`).ReplaceAllString(loc, "")
	resp, b = e.get("", stripped+"&offset=4000")
	if resp.StatusCode != 200 || !bytes.Equal(b, want[4000:]) || resp.ContentLength != 1000 {
		t.Fatalf("offset re-request: %d %d bytes", resp.StatusCode, len(b))
	}
	// The first offset wins when another is appended, as in HDFS.
	resp, b = e.get("", loc+"&offset=4990")
	if resp.StatusCode != 200 || !bytes.Equal(b, want) {
		t.Fatalf("appended offset: %d, %d bytes", resp.StatusCode, len(b))
	}
	// offset and length as fsspec sends them are carried over the redirect.
	resp, _ = e.get("alice", "/webhdfs/v1"+p+"?op=OPEN&offset=10&length=20")
	resp, b = e.get("", resp.Header.Get("Location"))
	if !bytes.Equal(b, want[10:30]) || resp.ContentLength != 20 {
		t.Fatalf("offset+length: %d bytes", len(b))
	}
	// noredirect gives the Location as JSON.
	var nr struct{ Location string }
	e.getJSON("alice", "/webhdfs/v1"+p+"?op=OPEN&noredirect=true", &nr)
	if resp, b = e.get("", nr.Location); !bytes.Equal(b, want) {
		t.Fatalf("noredirect Location: %d", resp.StatusCode)
	}
	// The signature is bound to the path.
	other := strings.Replace(loc, "big.chunk", "000001.chunk", 1)
	resp, b = e.get("", other)
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	tampered := strings.Replace(loc, "~alice~", "~bob~", 1)
	resp, b = e.get("", tampered)
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	// Expired URLs are refused.
	e.skew = 2 * time.Hour
	resp, b = e.get("", loc)
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
}

func TestOpenErrors(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	for name, c := range map[string]struct {
		url           string
		status        int
		exception, jc string
	}{
		"bad offset":      {"/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&offset=abc", 400, "IllegalArgumentException", iaeClass},
		"negative offset": {"/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&offset=-1", 400, "IllegalArgumentException", iaeClass},
		"past the end":    {"/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&offset=99999", 403, "IOException", "java.io.IOException"},
		"bad buffersize":  {"/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&buffersize=0", 400, "IllegalArgumentException", iaeClass},
		"missing":         {"/webhdfs/v1/acme/clicks/nope?op=OPEN", 404, "FileNotFoundException", fnfClass},
		"unknown op":      {"/webhdfs/v1/acme?op=FROBNICATE", 400, "IllegalArgumentException", iaeClass},
		"no op":           {"/webhdfs/v1/acme", 400, "UnsupportedOperationException", "java.lang.UnsupportedOperationException"},
		"bad query":       {"/webhdfs/v1/acme?op=LISTSTATUS&x=%zz", 400, "IllegalArgumentException", iaeClass},
		"bad fsaction":    {"/webhdfs/v1/acme?op=CHECKACCESS&fsaction=rwz", 400, "IllegalArgumentException", iaeClass},
	} {
		t.Run(name, func(t *testing.T) {
			resp, b := e.get("alice", c.url)
			wantRemote(t, resp, b, c.status, c.exception, c.jc)
		})
	}
}

func TestWritesRefused(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	for name, c := range map[string]struct{ method, query string }{
		"create":         {"PUT", "op=CREATE&overwrite=true"},
		"mkdirs":         {"PUT", "op=MKDIRS"},
		"rename":         {"PUT", "op=RENAME&destination=/acme/x"},
		"setperm":        {"PUT", "op=SETPERMISSION&permission=777"},
		"setowner":       {"PUT", "op=SETOWNER&owner=x"},
		"setrepl":        {"PUT", "op=SETREPLICATION&replication=3"},
		"settimes":       {"PUT", "op=SETTIMES&modificationtime=1"},
		"symlink":        {"PUT", "op=CREATESYMLINK&destination=/x"},
		"setxattr":       {"PUT", "op=SETXATTR&xattr.name=user.a"},
		"append":         {"POST", "op=APPEND"},
		"concat":         {"POST", "op=CONCAT&sources=/a"},
		"truncate":       {"POST", "op=TRUNCATE&newlength=0"},
		"delete":         {"DELETE", "op=DELETE&recursive=true"},
		"lowercase":      {"PUT", "op=mkdirs"},
		"unsetecpolicy":  {"POST", "op=UNSETECPOLICY"},
		"deletesnapshot": {"DELETE", "op=DELETESNAPSHOT"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, who := range []string{"alice", "bob", ""} {
				resp, b := e.do(c.method, who, "/webhdfs/v1/acme/clicks/f?"+c.query, strings.NewReader("data"))
				wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
				// Closing is what lets the server leave the body unread.
				if c.method != "GET" && !resp.Close {
					t.Fatal("connection kept open after a refused body")
				}
			}
		})
	}
}

func TestAccess(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	const st = "?op=GETFILESTATUS"
	resp, b := e.get("bob", "/webhdfs/v1/acme/clicks"+st)
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	resp, b = e.get("bob", "/webhdfs/v1/acme/nope"+st) // no existence leak
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	resp, b = e.get("alice", "/webhdfs/v1/other/logs"+st)
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	resp, b = e.get("", "/webhdfs/v1/acme/clicks"+st)
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	if resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatal("401 without WWW-Authenticate")
	}
	if resp, b = e.get("", "/webhdfs/v1/pub/open/segment=1/000001.chunk"+st); resp.StatusCode != 200 {
		t.Fatalf("anonymous on pub: %d %s", resp.StatusCode, b)
	}
	// user.name is ignored unless the operator enables it.
	resp, b = e.get("", "/webhdfs/v1/acme/clicks"+st+"&user.name=alice")
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	// Bad credentials.
	req, _ := http.NewRequest("GET", e.url+"/webhdfs/v1/acme/clicks"+st, nil)
	req.Header.Set("Authorization", "Bearer silt_nope")
	r2, _ := http.DefaultClient.Do(req)
	b, _ = io.ReadAll(r2.Body)
	r2.Body.Close()
	wantRemote(t, r2, b, 401, "SecurityException", secClass)
	resp, b = e.get("", "/webhdfs/v1/acme/clicks"+st+"&delegation=silt_nope")
	wantRemote(t, resp, b, 401, "SecurityException", secClass)
	// The delegation parameter carries a bearer secret.
	if resp, b = e.get("", "/webhdfs/v1/acme/clicks"+st+"&delegation="+e.tokens["alice"]); resp.StatusCode != 200 {
		t.Fatalf("delegation=: %d %s", resp.StatusCode, b)
	}
	// Impersonation is refused.
	resp, b = e.get("alice", "/webhdfs/v1/acme/clicks"+st+"&doas=bob")
	wantRemote(t, resp, b, 403, "AuthorizationException", "org.apache.hadoop.security.authorize.AuthorizationException")
}

func TestInsecureUserName(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InsecureUserName = true
	e := newTestEnv(t, cfg)
	if resp, b := e.get("", "/webhdfs/v1/acme/clicks?op=GETFILESTATUS&user.name=alice"); resp.StatusCode != 200 {
		t.Fatalf("user.name=alice: %d %s", resp.StatusCode, b)
	}
	resp, b := e.get("", "/webhdfs/v1/acme/clicks?op=GETFILESTATUS&user.name=bob")
	wantRemote(t, resp, b, 403, "AccessControlException", aceClass)
	var home struct{ Path string }
	e.getJSON("", "/webhdfs/v1/?op=GETHOMEDIRECTORY&user.name=alice", &home)
	if home.Path != "/user/alice" {
		t.Fatalf("home %q", home.Path)
	}
	// The redirect carries the user.name principal.
	resp, _ = e.get("", "/webhdfs/v1/acme/clicks/_manifest.json?op=OPEN&user.name=alice")
	if resp, b = e.get("", resp.Header.Get("Location")); resp.StatusCode != 200 {
		t.Fatalf("data URL: %d %s", resp.StatusCode, b)
	}
}

// hdfsChecksum recomputes HDFS's MD5-of-MD5-of-CRC32C independently of
// md5MD5CRC32C, chunk by chunk over the whole content.
func hdfsChecksum(data []byte, blockSize int) string {
	tab := crc32.MakeTable(crc32.Castagnoli)
	var blockMD5s []byte
	nblocks := 0
	for b := 0; b < len(data) || (b == 0 && len(data) == 0); b += blockSize {
		blk := data[b:min(b+blockSize, len(data))]
		var crcs []byte
		for i := 0; i < len(blk); i += 512 {
			crcs = binary.BigEndian.AppendUint32(crcs, crc32.Checksum(blk[i:min(i+512, len(blk))], tab))
		}
		s := md5.Sum(crcs)
		blockMD5s = append(blockMD5s, s[:]...)
		nblocks++
		if len(data) == 0 {
			break
		}
	}
	crcPerBlock := 0
	if nblocks > 1 {
		crcPerBlock = blockSize / 512
	}
	// HDFS hashes the whole backing array of the DataOutputBuffer the block
	// MD5s were written to, one 16-byte write at a time: 32 bytes at first,
	// grown to max(twice, needed) whenever a write does not fit.
	grow := func(buf []byte, capacity, add int) ([]byte, int) {
		if len(buf)+add > capacity {
			capacity = max(2*capacity, len(buf)+add)
		}
		return buf, capacity
	}
	var written []byte
	capacity := 32
	for i := 0; i < len(blockMD5s); i += 16 {
		written, capacity = grow(written, capacity, 16)
		written = append(written, blockMD5s[i:i+16]...)
	}
	file := md5.Sum(append(written, make([]byte, capacity-len(written))...))
	out := binary.BigEndian.AppendUint32(nil, 512)
	out = binary.BigEndian.AppendUint64(out, uint64(crcPerBlock))
	out = append(out, file[:]...)
	// The serialized checksum (28 bytes) is sent as its 32-byte buffer.
	return hex.EncodeToString(append(out, make([]byte, 32-len(out))...))
}

// A known answer from a real HDFS (Hadoop 3.4.1 MiniDFSCluster, 1 MiB
// blocks): the file of lines {"n":1,...} to {"n":1110,...} that
// conformance/suites/tier-hdfs.sh tiers, 65,493 bytes in one block.
func TestFileChecksumMatchesRealHDFS(t *testing.T) {
	var data []byte
	for i := 1; i <= 1110; i++ {
		data = fmt.Appendf(data, "{\"n\":%d,\"pad\":\"%s\"}\n", i, strings.Repeat("x", 40))
	}
	if len(data) != 65493 {
		t.Fatalf("fixture is %d bytes, want 65493", len(data))
	}
	got, err := md5MD5CRC32C(context.Background(), bytes.NewReader(data), int64(len(data)), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	const want = "000002000000000000000000c58d0423e6eada98ce2bb50780f2e5f500000000"
	if got.Bytes != want || got.Length != 28 || got.Algorithm != "MD5-of-0MD5-of-512CRC32C" {
		t.Fatalf("checksum %+v, want HDFS's %s", got, want)
	}
}

func TestFileChecksum(t *testing.T) {
	for name, blockSize := range map[string]int64{"one block": 134217728, "many blocks": 1024} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.BlockSize = blockSize
			e := newTestEnv(t, cfg)
			p := "/acme/clicks/segment=1/big.chunk"
			var got struct{ FileChecksum fileChecksumJSON }
			e.getJSON("alice", "/webhdfs/v1"+p+"?op=GETFILECHECKSUM", &got)
			wantAlg := "MD5-of-0MD5-of-512CRC32C"
			if blockSize == 1024 {
				wantAlg = "MD5-of-2MD5-of-512CRC32C"
			}
			if c := got.FileChecksum; c.Algorithm != wantAlg || c.Length != 28 || c.Bytes != hdfsChecksum(e.files[p], int(blockSize)) {
				t.Fatalf("checksum %+v, want %s %s", c, wantAlg, hdfsChecksum(e.files[p], int(blockSize)))
			}
		})
	}
}

func TestMiscOps(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	var cs struct{ ContentSummary map[string]any }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks?op=GETCONTENTSUMMARY", &cs)
	var wantLen int
	for p, d := range e.files {
		if strings.HasPrefix(p, "/acme/clicks/") {
			wantLen += len(d)
		}
	}
	if c := cs.ContentSummary; c["directoryCount"] != 3.0 || c["fileCount"] != 4.0 || c["length"] != float64(wantLen) ||
		c["quota"] != -1.0 || c["spaceQuota"] != -1.0 {
		t.Fatalf("content summary %v", c)
	}
	var path struct{ Path string }
	e.getJSON("alice", "/webhdfs/v1/?op=GETHOMEDIRECTORY", &path)
	if path.Path != "/user/alice" {
		t.Fatalf("home %q", path.Path)
	}
	e.getJSON("alice", "/webhdfs/v1/acme?op=GETTRASHROOT", &path)
	if path.Path != "/user/alice/.Trash" {
		t.Fatalf("trash %q", path.Path)
	}
	var sd struct{ FsServerDefaults map[string]any }
	e.getJSON("alice", "/webhdfs/v1/?op=GETSERVERDEFAULTS", &sd)
	if sd.FsServerDefaults["blockSize"] != 134217728.0 || sd.FsServerDefaults["keyProviderUri"] != "" {
		t.Fatalf("server defaults %v", sd)
	}
	var as struct{ AclStatus map[string]any }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks?op=GETACLSTATUS", &as)
	if as.AclStatus["permission"] != "555" || as.AclStatus["owner"] != "silt" {
		t.Fatalf("acl status %v", as)
	}
	for q, want := range map[string]int{
		"/acme/clicks?op=CHECKACCESS&fsaction=r-x":                200,
		"/acme/clicks/_manifest.json?op=CHECKACCESS&fsaction=r--": 200,
		"/acme/clicks/_manifest.json?op=CHECKACCESS&fsaction=r-x": 403,
		"/acme/clicks?op=CHECKACCESS&fsaction=rw-":                403,
		"/other/logs?op=CHECKACCESS&fsaction=r--":                 403,
	} {
		if resp, b := e.get("alice", "/webhdfs/v1"+q); resp.StatusCode != want {
			t.Fatalf("%s: %d %s", q, resp.StatusCode, b)
		}
	}
	var x struct{ XAttrs []any }
	e.getJSON("alice", "/webhdfs/v1/acme?op=GETXATTRS&encoding=HEX", &x)
}

func TestBlockLocations(t *testing.T) {
	cfg := DefaultConfig()
	cfg.BlockSize = 2048
	e := newTestEnv(t, cfg)
	p := "/webhdfs/v1/acme/clicks/segment=1/big.chunk"
	var bl struct {
		BlockLocations struct{ BlockLocation []map[string]any }
	}
	e.getJSON("alice", p+"?op=GETFILEBLOCKLOCATIONS", &bl)
	locs := bl.BlockLocations.BlockLocation
	if len(locs) != 3 || locs[2]["offset"] != 4096.0 || locs[2]["length"] != 904.0 || len(locs[0]["hosts"].([]any)) != 1 {
		t.Fatalf("block locations %v", locs)
	}
	bl.BlockLocations.BlockLocation = nil
	e.getJSON("alice", p+"?op=GETFILEBLOCKLOCATIONS&offset=2100&length=10", &bl)
	if locs := bl.BlockLocations.BlockLocation; len(locs) != 1 || locs[0]["offset"] != 2048.0 {
		t.Fatalf("ranged block locations %v", locs)
	}
	var lb struct{ LocatedBlocks map[string]any }
	e.getJSON("alice", p+"?op=GET_BLOCK_LOCATIONS", &lb)
	if lb.LocatedBlocks["fileLength"] != 5000.0 || len(lb.LocatedBlocks["locatedBlocks"].([]any)) != 3 {
		t.Fatalf("located blocks %v", lb)
	}
	resp, b := e.get("alice", "/webhdfs/v1/acme?op=GETFILEBLOCKLOCATIONS")
	wantRemote(t, resp, b, 404, "FileNotFoundException", fnfClass)
}

// TestSummaryOps covers what hadoop fs -count -e/-u, -ls -e and -df ask
// for: Hadoop shows any ecPolicy but "Replicated" as "EC:<value>", and
// GETQUOTAUSAGE and GETSTATUS used to be refused as unknown ops.
func TestSummaryOps(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	var wantLen int64
	for p, d := range e.files {
		if strings.HasPrefix(p, "/acme/clicks/") {
			wantLen += int64(len(d))
		}
	}
	var cs struct{ ContentSummary map[string]any }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks?op=GETCONTENTSUMMARY", &cs)
	if cs.ContentSummary["ecPolicy"] != "Replicated" {
		t.Fatalf("ecPolicy %v", cs.ContentSummary["ecPolicy"])
	}
	var qu struct{ QuotaUsage map[string]any }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks?op=GETQUOTAUSAGE", &qu)
	if q := qu.QuotaUsage; q["fileAndDirectoryCount"] != 7.0 || q["spaceConsumed"] != float64(wantLen) ||
		q["quota"] != -1.0 || q["spaceQuota"] != -1.0 || q["typeQuota"] == nil {
		t.Fatalf("quota usage %v", q)
	}
	var st struct{ FsStatus map[string]any }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks?op=getstatus", &st)
	if s := st.FsStatus; s["capacity"] != float64(wantLen) || s["used"] != float64(wantLen) || s["remaining"] != 0.0 {
		t.Fatalf("fs status %v", s)
	}
	// Both go through the principal's view.
	for _, op := range []string{"GETQUOTAUSAGE", "GETSTATUS"} {
		resp, b := e.get("alice", "/webhdfs/v1/other/logs?op="+op)
		wantRemote(t, resp, b, 403, "AccessControlException", "org.apache.hadoop.security.AccessControlException")
		resp, b = e.get("alice", "/webhdfs/v1/acme/nope?op="+op)
		wantRemote(t, resp, b, 404, "FileNotFoundException", "java.io.FileNotFoundException")
	}
}

// TestOpenPastEOF: a data URL re-requested past the end (Hadoop after a
// seek beyond the length) gets EOFException, as from a DataNode; at
// exactly the end the body is empty.
func TestOpenPastEOF(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	const p = "/acme/clicks/_manifest.json"
	resp, _ := e.get("alice", "/webhdfs/v1"+p+"?op=OPEN")
	// Hadoop strips offset from the Location before appending its own.
	loc := regexp.MustCompile(`&?offset=\d+`).ReplaceAllString(resp.Header.Get("Location"), "")
	n := len(e.files[p])
	resp, b := e.get("", fmt.Sprintf("%s&offset=%d", loc, n+1))
	wantRemote(t, resp, b, 403, "EOFException", "java.io.EOFException")
	resp, b = e.get("", fmt.Sprintf("%s&offset=%d", loc, n))
	if resp.StatusCode != 200 || len(b) != 0 || resp.Header.Get("Content-Length") != "0" {
		t.Fatalf("offset = length: %d %q %q", resp.StatusCode, b, resp.Header.Get("Content-Length"))
	}
}
