package webhdfs

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// answer is what HDFS 3.4's WebHDFS sends for a request, as seen against a
// MiniDFSCluster (conformance/hdfs/start.sh) holding the same tree, asked
// by a user who is not the HDFS superuser. message is a regexp; status
// alone is checked for answers that are not RemoteExceptions.
type answer struct {
	method, url string
	status      int
	exception   string
	class       string
	message     string
}

const (
	ioeClass      = "java.io.IOException"
	invalidPath   = "org.apache.hadoop.fs.InvalidPathException"
	unsupported   = "java.lang.UnsupportedOperationException"
	hadoopIAE     = "org.apache.hadoop.HadoopIllegalArgumentException"
	xattrNotFound = "org.apache.hadoop.hdfs.protocol.XAttrNotFoundException"
	authzClass    = "org.apache.hadoop.security.authorize.AuthorizationException"
)

// check sends a as alice and compares the answer.
func (e *testEnv) check(t *testing.T, a answer) []byte {
	t.Helper()
	method := a.method
	if method == "" {
		method = "GET"
	}
	resp, b := e.do(method, "alice", a.url, nil)
	if a.exception == "" {
		if resp.StatusCode != a.status {
			t.Fatalf("%s %s: %d %s, want %d", method, a.url, resp.StatusCode, b, a.status)
		}
		return b
	}
	wantRemote(t, resp, b, a.status, a.exception, a.class)
	var body struct{ RemoteException map[string]string }
	json.Unmarshal(b, &body)
	if msg := body.RemoteException["message"]; !regexp.MustCompile(a.message).MatchString(msg) {
		t.Fatalf("%s %s: message %q, want it to match %q", method, a.url, msg, a.message)
	}
	return b
}

func runAnswers(t *testing.T, cases map[string]answer) {
	e := newTestEnv(t, DefaultConfig())
	for name, a := range cases {
		t.Run(name, func(t *testing.T) { e.check(t, a) })
	}
}

const manifest = "/webhdfs/v1/acme/clicks/_manifest.json" // 39 bytes

// The NameNode refuses an OPEN at or past the end of a non-empty file
// before redirecting (chooseDatanode's range check), with IOException;
// only the DataNode, that is the data URL, reads at the very end.
func TestAnswersOpenRange(t *testing.T) {
	runAnswers(t, map[string]answer{
		"at the length": {url: manifest + "?op=OPEN&offset=39", status: 403, exception: "IOException", class: ioeClass,
			message: `^Offset=39 out of the range \[0, 39\); OPEN, path=/acme/clicks/_manifest.json$`},
		"past the end": {url: manifest + "?op=OPEN&offset=40&noredirect=true", status: 403, exception: "IOException", class: ioeClass,
			message: `^Offset=40 out of the range \[0, 39\); OPEN, path=/acme/clicks/_manifest.json$`},
		"path as sent": {url: manifest + "/?op=OPEN&offset=99", status: 403, exception: "IOException", class: ioeClass,
			message: `path=/acme/clicks/_manifest.json/$`},
		"last byte":        {url: manifest + "?op=OPEN&offset=38", status: 307},
		"a directory":      {url: "/webhdfs/v1/acme/clicks?op=OPEN&offset=7", status: 307},
		"missing":          {url: "/webhdfs/v1/acme/clicks/nope?op=OPEN&offset=7", status: 404, exception: "FileNotFoundException", class: fnfClass, message: `^File /acme/clicks/nope not found\.$`},
		"negative offset":  {url: manifest + "?op=OPEN&offset=-1", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: `^Invalid value for webhdfs parameter "offset": Invalid parameter range: offset = -1 < 0$`},
		"malformed offset": {url: manifest + "?op=OPEN&offset=abc", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: `^Invalid value for webhdfs parameter "offset": Failed to parse "abc" as a radix-10 long integer\.$`},
	})
}

// A path below a file: the NameNode's traversal check names the file. A
// missing path elsewhere gets each op's own FileNotFoundException text.
func TestAnswersPathBelowAFile(t *testing.T) {
	const notDir = `^/acme/clicks/_manifest.json \(is not a directory\)$`
	cases := map[string]answer{}
	for _, op := range []string{"GETFILESTATUS", "GETFILELINKSTATUS", "LISTSTATUS", "LISTSTATUS_BATCH", "OPEN", "GETCONTENTSUMMARY",
		"GETQUOTAUSAGE", "GETFILECHECKSUM", "GETFILEBLOCKLOCATIONS", "GET_BLOCK_LOCATIONS", "GETACLSTATUS",
		"GETXATTRS&encoding=TEXT", "LISTXATTRS", "CHECKACCESS&fsaction=r--"} {
		cases[op+" below a file"] = answer{url: manifest + "/child?op=" + op, status: 403, exception: "AccessControlException", class: aceClass, message: notDir}
		cases[op+" two below a file"] = answer{url: manifest + "/child/x?op=" + op, status: 403, exception: "AccessControlException", class: aceClass, message: notDir}
	}
	for op, msg := range map[string]string{
		"GETFILESTATUS":            `^File does not exist: /acme/nope/x$`,
		"LISTSTATUS":               `^File /acme/nope/x does not exist\.$`,
		"LISTSTATUS_BATCH":         `^File /acme/nope/x does not exist\.$`,
		"GETCONTENTSUMMARY":        `^File does not exist: /acme/nope/x$`,
		"GETQUOTAUSAGE":            `^File/Directory does not exist: /acme/nope/x$`,
		"OPEN":                     `^File /acme/nope/x not found\.$`,
		"GETFILECHECKSUM":          `^File /acme/nope/x not found\.$`,
		"GETFILEBLOCKLOCATIONS":    `^File does not exist: /acme/nope/x$`,
		"GETACLSTATUS":             `^cannot find /acme/nope/x$`,
		"GETXATTRS&encoding=TEXT":  `^cannot find /acme/nope/x$`,
		"LISTXATTRS":               `^cannot find /acme/nope/x$`,
		"CHECKACCESS&fsaction=r--": `^Path not found: /acme/nope/x$`,
	} {
		cases[op+" missing"] = answer{url: "/webhdfs/v1/acme/nope/x?op=" + op, status: 404, exception: "FileNotFoundException", class: fnfClass, message: msg}
	}
	// Tenants stay hidden: a path below a file of another tenant is denied
	// like any path there, before anything is looked up.
	cases["below a file of another tenant"] = answer{url: "/webhdfs/v1/other/logs/segment=1/000001.chunk/x?op=GETFILESTATUS", status: 403,
		exception: "AccessControlException", class: aceClass, message: `^Permission denied`}
	runAnswers(t, cases)
}

// HDFS resolves "//" and a trailing "/" for most ops, but the ops that
// redirect to a DataNode check the path first (DFSUtil.isValidName), which
// refuses "//", "." and ".." elements and ':'. Elsewhere "." and ".." are
// names like any other, which nothing has.
func TestAnswersPathSyntax(t *testing.T) {
	invalid := func(p string) string { return `^Invalid path name ` + regexp.QuoteMeta(p) + `$` }
	runAnswers(t, map[string]answer{
		"OPEN with //": {url: "/webhdfs/v1/acme//clicks/_manifest.json?op=OPEN", status: 400, exception: "InvalidPathException", class: invalidPath,
			message: invalid("/acme//clicks/_manifest.json")},
		"OPEN with a leading //": {url: "/webhdfs/v1//acme/clicks/_manifest.json?op=OPEN", status: 400, exception: "InvalidPathException", class: invalidPath,
			message: invalid("//acme/clicks/_manifest.json")},
		"GETFILECHECKSUM with //": {url: "/webhdfs/v1/acme//clicks/_manifest.json?op=GETFILECHECKSUM", status: 400, exception: "InvalidPathException", class: invalidPath,
			message: invalid("/acme//clicks/_manifest.json")},
		"OPEN with .": {url: "/webhdfs/v1/acme/./clicks/_manifest.json?op=OPEN", status: 400, exception: "InvalidPathException", class: invalidPath,
			message: invalid("/acme/./clicks/_manifest.json")},
		"OPEN with ..": {url: "/webhdfs/v1/acme/../acme/clicks/_manifest.json?op=OPEN", status: 400, exception: "InvalidPathException", class: invalidPath,
			message: invalid("/acme/../acme/clicks/_manifest.json")},
		"OPEN with a colon":            {url: "/webhdfs/v1/acme/a:b?op=OPEN", status: 400, exception: "InvalidPathException", class: invalidPath, message: invalid("/acme/a:b")},
		"OPEN with a trailing /":       {url: manifest + "/?op=OPEN", status: 307},
		"OPEN with a trailing //":      {url: manifest + "//?op=OPEN", status: 307},
		"GETFILESTATUS with //":        {url: "/webhdfs/v1/acme//clicks?op=GETFILESTATUS", status: 200},
		"LISTSTATUS with a leading //": {url: "/webhdfs/v1//acme?op=LISTSTATUS", status: 200},
		"GETFILESTATUS with a colon": {url: "/webhdfs/v1/acme/a:b?op=GETFILESTATUS", status: 404, exception: "FileNotFoundException", class: fnfClass,
			message: `^File does not exist: /acme/a:b$`},
		"GETFILESTATUS with .": {url: "/webhdfs/v1/acme/./clicks?op=GETFILESTATUS", status: 404, exception: "FileNotFoundException", class: fnfClass,
			message: `^File does not exist: /acme/\./clicks$`},
		"LISTSTATUS with ..": {url: "/webhdfs/v1/acme/../acme?op=LISTSTATUS", status: 404, exception: "FileNotFoundException", class: fnfClass,
			message: `^File /acme/\.\./acme does not exist\.$`},
		"GETCONTENTSUMMARY of ..": {url: "/webhdfs/v1/acme/..?op=GETCONTENTSUMMARY", status: 404, exception: "FileNotFoundException", class: fnfClass},
		".. below a file": {url: manifest + "/..?op=GETFILESTATUS", status: 403, exception: "AccessControlException", class: aceClass,
			message: `^/acme/clicks/_manifest.json \(is not a directory\)$`},
		"missing with //, as sent": {url: "/webhdfs/v1/acme//nope/?op=GETFILESTATUS", status: 404, exception: "FileNotFoundException", class: fnfClass,
			message: `^File does not exist: /acme//nope/$`},
		// Ops that do not look at the path answer whatever it is.
		"GETHOMEDIRECTORY with ..": {url: "/webhdfs/v1/acme/..?op=GETHOMEDIRECTORY", status: 200},
	})
}

// An op sent with a method it does not belong to is a bad op value, and a
// missing op is HttpOpParam's NULL; both are refused before anything else,
// with the request body left unread.
func TestAnswersMethodAndOp(t *testing.T) {
	notValid := func(op, method string) string {
		return `^Invalid value for webhdfs parameter "op": ` + regexp.QuoteMeta(op) + ` is not a valid ` + method + ` operation\.$`
	}
	e := newTestEnv(t, DefaultConfig())
	for name, a := range map[string]answer{
		"GET MKDIRS":          {method: "GET", url: "/webhdfs/v1/acme?op=MKDIRS", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("MKDIRS", "GET")},
		"GET create":          {method: "GET", url: "/webhdfs/v1/acme?op=create", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("create", "GET")},
		"HEAD DELETE":         {method: "HEAD", url: "/webhdfs/v1/acme?op=DELETE", status: 400},
		"PUT GETFILESTATUS":   {method: "PUT", url: "/webhdfs/v1/acme?op=GETFILESTATUS", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("GETFILESTATUS", "PUT")},
		"PUT OPEN":            {method: "PUT", url: "/webhdfs/v1/acme?op=OPEN", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("OPEN", "PUT")},
		"PUT DELETE":          {method: "PUT", url: "/webhdfs/v1/acme?op=DELETE", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("DELETE", "PUT")},
		"POST MKDIRS":         {method: "POST", url: "/webhdfs/v1/acme?op=MKDIRS", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("MKDIRS", "POST")},
		"DELETE OPEN":         {method: "DELETE", url: "/webhdfs/v1/acme?op=OPEN", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("OPEN", "DELETE")},
		"PUT unknown":         {method: "PUT", url: "/webhdfs/v1/acme?op=frobnicate", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("frobnicate", "PUT")},
		"GET unknown":         {method: "GET", url: "/webhdfs/v1/acme?op=frobnicate", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid("frobnicate", "GET")},
		"GET op with a space": {method: "GET", url: "/webhdfs/v1/acme?op=%20OPEN", status: 400, exception: "IllegalArgumentException", class: iaeClass, message: notValid(" OPEN", "GET")},
		"GET no op":           {method: "GET", url: "/webhdfs/v1/acme", status: 400, exception: "UnsupportedOperationException", class: unsupported, message: `^op=NULL is not supported$`},
		"GET empty op":        {method: "GET", url: "/webhdfs/v1/acme?op=", status: 400, exception: "UnsupportedOperationException", class: unsupported, message: `^op=NULL is not supported$`},
		"GET op=NULL":         {method: "GET", url: "/webhdfs/v1/acme?op=null", status: 400, exception: "UnsupportedOperationException", class: unsupported, message: `^op=NULL is not supported$`},
		"PUT no op":           {method: "PUT", url: "/webhdfs/v1/acme", status: 400, exception: "UnsupportedOperationException", class: unsupported, message: `^op=NULL is not supported$`},
		"POST no op":          {method: "POST", url: "/webhdfs/v1/acme", status: 400, exception: "UnsupportedOperationException", class: unsupported, message: `^op=NULL is not supported$`},
		"DELETE no op":        {method: "DELETE", url: "/webhdfs/v1/acme", status: 400, exception: "UnsupportedOperationException", class: unsupported, message: `^op=NULL is not supported$`},
		"PATCH":               {method: "PATCH", url: "/webhdfs/v1/acme?op=GETFILESTATUS", status: 405, exception: "UnsupportedOperationException", class: unsupported, message: `PATCH`},
		// The right method for a write op: the store is read-only.
		"PUT MKDIRS":         {method: "PUT", url: "/webhdfs/v1/acme?op=MKDIRS", status: 403, exception: "AccessControlException", class: aceClass, message: `read-only`},
		"POST APPEND":        {method: "POST", url: "/webhdfs/v1/acme?op=APPEND", status: 403, exception: "AccessControlException", class: aceClass, message: `read-only`},
		"DELETE DELETE":      {method: "DELETE", url: "/webhdfs/v1/acme?op=DELETE", status: 403, exception: "AccessControlException", class: aceClass, message: `read-only`},
		"POST UNSETECPOLICY": {method: "POST", url: "/webhdfs/v1/acme?op=UNSETECPOLICY", status: 403, exception: "AccessControlException", class: aceClass, message: `read-only`},
	} {
		t.Run(name, func(t *testing.T) {
			if a.method == "HEAD" {
				e.check(t, a)
				return
			}
			// A body the head must not read: closing the connection is
			// what lets it leave the body there.
			resp, b := e.do(a.method, "alice", a.url, strings.NewReader("data"))
			if a.method != "GET" && !resp.Close {
				t.Fatal("connection kept open after a refused body")
			}
			wantRemote(t, resp, b, a.status, a.exception, a.class)
			e.check(t, a)
		})
	}
}

// Where a parameter repeats, HDFS takes its first value, on the NameNode
// (Jersey's @QueryParam) and on the DataNode (QueryStringDecoder) alike;
// later values are not even parsed.
func TestAnswersRepeatedParameters(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	const p = "/acme/clicks/segment=1/big.chunk"
	want := e.files[p]
	var nr struct{ Location string }
	e.getJSON("alice", "/webhdfs/v1"+p+"?op=OPEN&offset=5&offset=9&noredirect=true", &nr)
	u, err := url.Parse(nr.Location)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Query()["offset"]; len(got) != 1 || got[0] != "5" {
		t.Fatalf("Location offset %v, want [5]", got)
	}
	loc := regexp.MustCompile(`&?offset=\d+`).ReplaceAllString(nr.Location, "")
	for name, c := range map[string]struct {
		query string
		want  []byte
	}{
		"offset":           {"&offset=3&offset=30", want[3:]},
		"length":           {"&offset=3&length=4&length=8", want[3:7]},
		"malformed second": {"&offset=3&offset=zz", want[3:]},
		"op":               {"&op=LISTSTATUS", want},
		"offset, any case": {"&offset=3&OFFSET=30", want[3:]},
	} {
		t.Run(name, func(t *testing.T) {
			resp, b := e.get("", loc+c.query)
			if resp.StatusCode != 200 || !bytes.Equal(b, c.want) || resp.ContentLength != int64(len(c.want)) {
				t.Fatalf("%s: %d, %d bytes (Content-Length %d), want %d", c.query, resp.StatusCode, len(b), resp.ContentLength, len(c.want))
			}
		})
	}
	// The first op decides, as in the query HDFS reads.
	e.getJSON("alice", "/webhdfs/v1"+p+"?op=OPEN&op=LISTSTATUS&noredirect=true", &nr)
	if !strings.Contains(nr.Location, "silt.sig=") {
		t.Fatalf("op=OPEN&op=LISTSTATUS: %+v", nr)
	}
	var l listing
	e.getJSON("alice", "/webhdfs/v1"+p+"?op=LISTSTATUS&op=OPEN", &l)
	if len(l.FileStatuses.FileStatus) != 1 {
		t.Fatalf("op=LISTSTATUS&op=OPEN: %+v", l)
	}
}

// GETXATTRS needs encoding; names are checked (namespace, then the
// caller's right to it) before the path is looked up; no silt entry has
// an attribute. Every known parameter is checked whatever the op.
func TestAnswersXAttrsAndParameters(t *testing.T) {
	const dir = "/webhdfs/v1/acme/clicks"
	prefixMsg := `^An XAttr name must be prefixed with user/trusted/security/system/raw, followed by a '\.'$`
	runAnswers(t, map[string]answer{
		"no encoding": {url: dir + "?op=GETXATTRS", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Required param encoding for op: GETXATTRS is null or empty$`},
		"empty encoding": {url: dir + "?op=GETXATTRS&encoding=", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Required param encoding for op: GETXATTRS is null or empty$`},
		"bogus encoding": {url: dir + "?op=GETXATTRS&encoding=bogus", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Invalid value for webhdfs parameter "encoding": No enum constant org\.apache\.hadoop\.fs\.XAttrCodec\.BOGUS$`},
		"bogus encoding, another op": {url: dir + "?op=LISTSTATUS&encoding=bogus", status: 400, exception: "IllegalArgumentException", class: iaeClass},
		"all, text":                  {url: dir + "?op=GETXATTRS&encoding=text", status: 200},
		"all, empty name":            {url: dir + "?op=GETXATTRS&encoding=BASE64&xattr.name=", status: 200},
		"user name not found": {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=user.a", status: 403, exception: "XAttrNotFoundException", class: xattrNotFound,
			message: `^At least one of the attributes provided was not found\.$`},
		"namespace in any case": {url: dir + "?op=GETXATTRS&encoding=HEX&xattr.name=USER.a", status: 403, exception: "XAttrNotFoundException", class: xattrNotFound},
		"unreadable-by-superuser marker": {url: dir + "?op=GETXATTRS&encoding=HEX&xattr.name=security.hdfs.unreadable.by.superuser", status: 403,
			exception: "XAttrNotFoundException", class: xattrNotFound},
		"bad namespace":               {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=bogus.a", status: 400, exception: "HadoopIllegalArgumentException", class: hadoopIAE, message: prefixMsg},
		"no namespace":                {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=a", status: 400, exception: "HadoopIllegalArgumentException", class: hadoopIAE, message: prefixMsg},
		"empty name":                  {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=user.", status: 400, exception: "HadoopIllegalArgumentException", class: hadoopIAE, message: `^XAttr name cannot be empty\.$`},
		"a bad name after a good one": {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=user.a&xattr.name=x", status: 400, exception: "HadoopIllegalArgumentException", class: hadoopIAE},
		"bad name, missing path":      {url: "/webhdfs/v1/acme/nope?op=GETXATTRS&encoding=TEXT&xattr.name=x", status: 400, exception: "HadoopIllegalArgumentException", class: hadoopIAE},
		"trusted":                     {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=trusted.a", status: 403, exception: "AccessControlException", class: aceClass, message: `^User doesn't have permission for xattr: trusted\.a$`},
		"security":                    {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=user.a&xattr.name=SECURITY.b", status: 403, exception: "AccessControlException", class: aceClass, message: `^User doesn't have permission for xattr: security\.b$`},
		"system, missing path": {url: "/webhdfs/v1/acme/nope?op=GETXATTRS&encoding=TEXT&xattr.name=system.a", status: 403, exception: "AccessControlException", class: aceClass,
			message: `^User doesn't have permission for xattr: system\.a$`},
		"raw": {url: dir + "?op=GETXATTRS&encoding=TEXT&xattr.name=raw.a", status: 403, exception: "AccessControlException", class: aceClass},
		"CHECKACCESS without fsaction": {url: dir + "?op=CHECKACCESS", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Required param fsaction for op: CHECKACCESS is null or empty$`},
		"CHECKACCESS with an empty fsaction": {url: dir + "?op=CHECKACCESS&fsaction=", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Required param fsaction for op: CHECKACCESS is null or empty$`},
		"CHECKACCESS without fsaction, missing path": {url: "/webhdfs/v1/acme/nope?op=CHECKACCESS", status: 400, exception: "IllegalArgumentException", class: iaeClass},
		"bad fsaction, another op": {url: dir + "?op=LISTSTATUS&fsaction=zzz", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Invalid value for webhdfs parameter "fsaction": Invalid value: "zzz" does not belong to the domain \[r-\]\[w-\]\[x-\]$`},
		"bad buffersize": {url: manifest + "?op=OPEN&buffersize=0", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Invalid value for webhdfs parameter "buffersize": Invalid parameter range: buffersize = 0 < 1$`},
		"bad noredirect": {url: manifest + "?op=OPEN&noredirect=maybe", status: 400, exception: "IllegalArgumentException", class: iaeClass,
			message: `^Invalid value for webhdfs parameter "noredirect": Failed to parse "maybe" to Boolean\.$`},
		"doas another user": {url: dir + "?op=GETFILESTATUS&doas=bob", status: 403, exception: "AuthorizationException", class: authzClass,
			message: `^User: alice is not allowed to impersonate bob$`},
		"doas oneself": {url: dir + "?op=GETFILESTATUS&doas=alice", status: 200},
	})
}

// OPEN of a directory is redirected like any OPEN (the NameNode checks
// nothing but the range of a non-empty file); the data URL then refuses it.
func TestAnswersOpenDirectory(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	var nr struct{ Location string }
	e.getJSON("alice", "/webhdfs/v1/acme/clicks?op=OPEN&noredirect=true", &nr)
	if !strings.HasPrefix(nr.Location, e.url+"/webhdfs/v1/acme/clicks?") {
		t.Fatalf("Location %q", nr.Location)
	}
	resp, b := e.get("", nr.Location)
	wantRemote(t, resp, b, 404, "FileNotFoundException", fnfClass)
	if !strings.Contains(string(b), "Path is not a file: /acme/clicks") {
		t.Fatalf("data URL of a directory: %s", b)
	}
	resp, _ = e.get("alice", "/webhdfs/v1/acme/clicks?op=OPEN")
	if resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("OPEN of a directory: %d", resp.StatusCode)
	}
}

// The root carries HDFS's namespace quota, Long.MAX_VALUE; nothing else
// has a quota. ContentSummary has HDFS's snapshot fields, all zero.
func TestAnswersQuotas(t *testing.T) {
	e := newTestEnv(t, DefaultConfig())
	for name, c := range map[string]struct{ url, want string }{
		"root summary":   {"/webhdfs/v1/?op=GETCONTENTSUMMARY", `"quota":9223372036854775807,"snapshotDirectoryCount":0,"snapshotFileCount":0,"snapshotLength":0,"snapshotSpaceConsumed":0,`},
		"root usage":     {"/webhdfs/v1/?op=GETQUOTAUSAGE", `"quota":9223372036854775807,`},
		"tenant summary": {"/webhdfs/v1/acme?op=GETCONTENTSUMMARY", `"quota":-1,"snapshotDirectoryCount":0,`},
		"tenant usage":   {"/webhdfs/v1/acme?op=GETQUOTAUSAGE", `"quota":-1,`},
	} {
		t.Run(name, func(t *testing.T) {
			resp, b := e.get("alice", c.url)
			if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), `"spaceQuota":-1`) {
				t.Fatalf("%d %s, want it to hold %s", resp.StatusCode, b, c.want)
			}
		})
	}
}
