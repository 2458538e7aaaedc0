package webhdfs

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// params holds the query parameters of one request. HDFS matches parameter
// names and op values case-insensitively (the npm webhdfs client sends
// lowercase ops), so names are folded to lower case. Where a parameter
// repeats, the first value wins and later ones are not even parsed, as on
// a NameNode (Jersey's @QueryParam) and a DataNode (QueryStringDecoder):
// "offset=5&offset=9" reads from 5. Hadoop's client strips offset from a
// data URL before appending its own, so it never repeats one.
type params struct {
	op         string // upper case
	offset     int64
	length     int64 // -1: to the end
	noRedirect bool
	startAfter string
	fsAction   string
	encoding   string // GETXATTRS: upper case, "" when absent
	userName   string
	delegation string
	doAs       string
	token      string // the delegation token to renew or cancel
	renewer    string // GETDELEGATIONTOKEN: who may renew the token
	service    string // GETDELEGATIONTOKEN: the token's service field
	kind       string // GETDELEGATIONTOKEN: the token's kind field
	signature  string // silt's signed data-URL parameter
	// values holds every value of every parameter, in query order, for
	// the one parameter that legitimately repeats (xattr.name).
	values url.Values
}

// sigParam carries the signature of a data URL. The name is silt's, so it
// cannot clash with a Hadoop parameter.
const sigParam = "silt.sig"

// pair is one name=value of a query string, name folded to lower case.
type pair struct{ name, value string }

// queryPairs splits a raw query in order, as url.ParseQuery would but
// keeping the order across names, which a map loses. It returns every
// pair it could decode and the first error, so that a caller may still
// find the op of a malformed query.
func queryPairs(raw string) ([]pair, error) {
	var (
		out      []pair
		firstErr error
	)
	for raw != "" {
		var kv string
		kv, raw, _ = strings.Cut(raw, "&")
		if kv == "" {
			continue
		}
		if strings.Contains(kv, ";") {
			if firstErr == nil {
				firstErr = fmt.Errorf("invalid semicolon separator in query")
			}
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err := firstOf(err1, err2); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		out = append(out, pair{strings.ToLower(k), v})
	}
	return out, firstErr
}

func firstOf(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// firstOp is the first op= value as sent, or "" without one.
func firstOp(raw string) string {
	pairs, _ := queryPairs(raw)
	for _, p := range pairs {
		if p.name == "op" {
			return p.value
		}
	}
	return ""
}

func parseQuery(raw string) (params, error) {
	pairs, err := queryPairs(raw)
	if err != nil {
		return params{}, errArgument(fmt.Sprintf("malformed query string: %v", err))
	}
	q := url.Values{}
	for _, p := range pairs {
		q[p.name] = append(q[p.name], p.value)
	}
	first := func(k string) string {
		if vs := q[k]; len(vs) > 0 {
			return vs[0]
		}
		return ""
	}
	p := params{
		op:         strings.ToUpper(first("op")),
		length:     -1,
		startAfter: first("startafter"),
		fsAction:   first("fsaction"),
		userName:   first("user.name"),
		delegation: first("delegation"),
		doAs:       first("doas"),
		token:      first("token"),
		renewer:    first("renewer"),
		service:    first("service"),
		kind:       first("kind"),
		signature:  first(sigParam),
		values:     q,
	}
	if p.op == "" || p.op == "NULL" {
		return params{}, errNoOp
	}
	// Every parameter HDFS knows is parsed whatever the op, so a bad
	// value is refused even where the op would not use it.
	if p.offset, err = longParam("offset", first("offset"), 0); err != nil {
		return params{}, err
	}
	if p.length, err = longParam("length", first("length"), -1); err != nil {
		return params{}, err
	}
	// buffersize only tunes the server's copy buffer in HDFS; it is
	// checked so that a typo is reported, not silently ignored.
	if bs := first("buffersize"); bs != "" {
		n, err := strconv.ParseInt(bs, 10, 32)
		if err != nil {
			return params{}, badParam("buffersize", fmt.Sprintf("Failed to parse %q as a radix-10 integer.", bs))
		}
		if n < 1 {
			return params{}, badParam("buffersize", fmt.Sprintf("Invalid parameter range: buffersize = %d < 1", n))
		}
	}
	switch nr := first("noredirect"); strings.ToLower(nr) {
	case "", "false":
	case "true":
		p.noRedirect = true
	default:
		return params{}, badParam("noredirect", fmt.Sprintf("Failed to parse %q to Boolean.", nr))
	}
	if a := p.fsAction; a != "" && !validFsAction(a) {
		return params{}, badParam("fsaction", fmt.Sprintf("Invalid value: %q does not belong to the domain [r-][w-][x-]", a))
	}
	// XAttrCodec's names; Hadoop's client sends HEX.
	switch enc := strings.ToUpper(first("encoding")); enc {
	case "", "TEXT", "HEX", "BASE64":
		p.encoding = enc
	default:
		return params{}, badParam("encoding", "No enum constant org.apache.hadoop.fs.XAttrCodec."+enc)
	}
	return p, nil
}

// badParam is HDFS's answer to a value its parameter class refuses.
func badParam(name, why string) *remoteError {
	return errArgument(fmt.Sprintf("Invalid value for webhdfs parameter %q: %s", name, why))
}

// longParam parses an optional non-negative long (OffsetParam,
// LengthParam); def is used when it is absent or empty.
func longParam(name, s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, badParam(name, fmt.Sprintf("Failed to parse %q as a radix-10 long integer.", s))
	}
	if n < 0 {
		return 0, badParam(name, fmt.Sprintf("Invalid parameter range: %s = %d < 0", name, n))
	}
	return n, nil
}

// validFsAction matches FsActionParam's domain, [r-][w-][x-].
func validFsAction(a string) bool {
	return len(a) == 3 && (a[0] == 'r' || a[0] == '-') && (a[1] == 'w' || a[1] == '-') && (a[2] == 'x' || a[2] == '-')
}
