package webhdfs

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
)

// params holds the query parameters of one request. HDFS matches parameter
// names and op values case-insensitively (the npm webhdfs client sends
// lowercase ops), so names are folded to lower case. Where a parameter
// repeats, the last value wins: Hadoop re-requests a data URL with its own
// "&offset=" appended, and that must override any offset already there.
type params struct {
	op         string // upper case
	offset     int64
	length     int64 // -1: to the end
	noRedirect bool
	startAfter string
	fsAction   string
	userName   string
	delegation string
	doAs       string
	token      string // the delegation token to renew or cancel
	renewer    string // GETDELEGATIONTOKEN: who may renew the token
	service    string // GETDELEGATIONTOKEN: the token's service field
	kind       string // GETDELEGATIONTOKEN: the token's kind field
	signature  string // silt's signed data-URL parameter
	values     url.Values
}

// sigParam carries the signature of a data URL. The name is silt's, so it
// cannot clash with a Hadoop parameter.
const sigParam = "silt.sig"

func parseQuery(raw string) (params, error) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return params{}, errArgument(fmt.Sprintf("malformed query string: %v", err))
	}
	q := url.Values{}
	for k, vs := range vals {
		k = strings.ToLower(k)
		q[k] = append(q[k], vs...)
	}
	last := func(k string) string {
		if vs := q[k]; len(vs) > 0 {
			return vs[len(vs)-1]
		}
		return ""
	}
	p := params{
		op:         strings.ToUpper(strings.TrimSpace(last("op"))),
		length:     -1,
		startAfter: last("startafter"),
		fsAction:   last("fsaction"),
		userName:   last("user.name"),
		delegation: last("delegation"),
		doAs:       last("doas"),
		token:      last("token"),
		renewer:    last("renewer"),
		service:    last("service"),
		kind:       last("kind"),
		signature:  last(sigParam),
		values:     q,
	}
	if p.op == "" {
		return params{}, errArgument(`missing parameter "op"`)
	}
	if p.offset, err = nonNegative(q, "offset", last("offset"), 0); err != nil {
		return params{}, err
	}
	if p.length, err = nonNegative(q, "length", last("length"), -1); err != nil {
		return params{}, err
	}
	// buffersize only tunes the server's copy buffer in HDFS; it is
	// checked so that a typo is reported, not silently ignored.
	if bs := last("buffersize"); bs != "" {
		if n, err := strconv.ParseInt(bs, 10, 32); err != nil || n <= 0 {
			return params{}, errArgument(fmt.Sprintf("Invalid value for webhdfs parameter \"buffersize\": %q is not a positive integer", bs))
		}
	}
	switch nr := strings.ToLower(last("noredirect")); nr {
	case "", "false":
	case "true":
		p.noRedirect = true
	default:
		return params{}, errArgument(fmt.Sprintf("Invalid value for webhdfs parameter \"noredirect\": %q; want true or false", nr))
	}
	return p, nil
}

// nonNegative parses an optional long parameter; def is used when absent.
func nonNegative(q url.Values, name, s string, def int64) (int64, error) {
	if _, ok := q[name]; !ok || s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errArgument(fmt.Sprintf("Invalid value for webhdfs parameter %q: %q is not a non-negative integer", name, s))
	}
	return n, nil
}

// prefix is where WebHDFS lives on a NameNode's HTTP server.
const prefix = "/webhdfs/v1"

// viewPath turns a request path into a clean view path. ".." cannot climb
// above the root because path.Clean stops there.
func viewPath(urlPath string) (string, bool) {
	rest, ok := strings.CutPrefix(urlPath, prefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	return path.Clean("/" + rest), true
}
