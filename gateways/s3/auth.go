package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/acl"
)

// KeyLookup finds the principal and secret of an S3 access key.
// *acl.Store implements it. An unknown key must give an error wrapping
// acl.ErrNotFound.
type KeyLookup interface {
	LookupS3Key(accessKeyID string) (acl.Principal, string, error)
}

const (
	sigAlgorithm   = "AWS4-HMAC-SHA256"
	amzDateFormat  = "20060102T150405Z"
	unsignedBody   = "UNSIGNED-PAYLOAD"
	maxPresignSecs = 604800
)

// sigRequest is a parsed SigV4 signature, from the Authorization header or
// from presigned query parameters.
type sigRequest struct {
	accessKey, date, region, service string // from the credential scope
	signedHeaders                    []string
	signature                        string
	amzDate                          time.Time
	payloadHash                      string
	presigned                        bool
	expires                          time.Duration
}

// authenticate returns the principal of r: Anonymous when r is unsigned,
// otherwise the owner of the access key whose signature r carries. Only
// GET and HEAD reach it, whose bodies are empty, so the payload hash is
// taken as the client declared it and not checked against the body.
func (s *Server) authenticate(r *http.Request) (acl.Principal, error) {
	q := r.URL.Query()
	var sr *sigRequest
	var err error
	switch auth := r.Header.Get("Authorization"); {
	case q.Has("X-Amz-Algorithm"):
		sr, err = parsePresigned(q)
	case strings.HasPrefix(auth, sigAlgorithm+" "):
		sr, err = parseAuthHeader(auth, r)
	case auth != "" || q.Has("AWSAccessKeyId") || q.Has("Signature"):
		// Treating a SigV2 request as anonymous would answer with a
		// puzzling AccessDenied; say what to change instead.
		return acl.Principal{}, errSigV2
	default:
		return acl.Anonymous, nil
	}
	if err != nil {
		return acl.Principal{}, err
	}
	// An unsigned Host would let a signature be replayed against another
	// server sharing the key; an unsigned date would defeat the skew check.
	if !slices.Contains(sr.signedHeaders, "host") || (!sr.presigned && !slices.Contains(sr.signedHeaders, "x-amz-date")) {
		return acl.Principal{}, errMalformedAuth("the signature must cover the host and x-amz-date headers")
	}
	now := s.now()
	if sr.presigned {
		if now.Before(sr.amzDate.Add(-s.cfg.MaxSkew)) {
			return acl.Principal{}, errNotYetValid
		}
		if !now.Before(sr.amzDate.Add(sr.expires)) {
			return acl.Principal{}, errExpired
		}
	} else if d := now.Sub(sr.amzDate); d > s.cfg.MaxSkew || d < -s.cfg.MaxSkew {
		return acl.Principal{}, errSkew
	}
	p, secret, err := s.keys.LookupS3Key(sr.accessKey)
	if errors.Is(err, acl.ErrNotFound) || errors.Is(err, acl.ErrInvalid) {
		return acl.Principal{}, errAccessKey
	}
	if err != nil {
		return acl.Principal{}, fmt.Errorf("look up access key: %w", err)
	}
	want := sr.sign(secret, canonicalRequest(r, sr))
	got, err := hex.DecodeString(sr.signature)
	if err != nil || !hmac.Equal(want, got) {
		return acl.Principal{}, errSignature
	}
	return p, nil
}

// parseCredential parses "<key>/<date>/<region>/<service>/aws4_request".
func (sr *sigRequest) parseCredential(cred string) error {
	parts := strings.Split(cred, "/")
	if len(parts) != 5 || parts[4] != "aws4_request" || parts[3] != "s3" || parts[0] == "" {
		return errMalformedAuth("credential must be <access key>/<date>/<region>/s3/aws4_request")
	}
	sr.accessKey, sr.date, sr.region, sr.service = parts[0], parts[1], parts[2], parts[3]
	return nil
}

func (sr *sigRequest) parseDate(v string) error {
	t, err := time.Parse(amzDateFormat, v)
	if err != nil {
		return errMalformedAuth("X-Amz-Date must look like 20060102T150405Z")
	}
	if t.Format("20060102") != sr.date {
		return errMalformedAuth("the credential scope date does not match X-Amz-Date")
	}
	sr.amzDate = t
	return nil
}

func parseAuthHeader(auth string, r *http.Request) (*sigRequest, error) {
	sr := &sigRequest{}
	fields := map[string]string{}
	for _, f := range strings.Split(strings.TrimPrefix(auth, sigAlgorithm+" "), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(f), "=")
		if !ok {
			return nil, errMalformedAuth("malformed Authorization header")
		}
		fields[k] = v
	}
	if err := sr.parseCredential(fields["Credential"]); err != nil {
		return nil, err
	}
	sr.signature = fields["Signature"]
	sr.signedHeaders = strings.Split(fields["SignedHeaders"], ";")
	if sr.signature == "" || fields["SignedHeaders"] == "" {
		return nil, errMalformedAuth("Authorization header needs Credential, SignedHeaders and Signature")
	}
	date := r.Header.Get("X-Amz-Date")
	if date == "" {
		return nil, errMalformedAuth("signed requests need an X-Amz-Date header")
	}
	if err := sr.parseDate(date); err != nil {
		return nil, err
	}
	sr.payloadHash = r.Header.Get("X-Amz-Content-Sha256")
	if sr.payloadHash == "" {
		return nil, errMalformedAuth("signed requests need an X-Amz-Content-Sha256 header")
	}
	return sr, nil
}

// parsePresigned parses the SigV4 query parameters. S3 answers every
// problem with them as AuthorizationQueryParametersError, with the
// messages used here.
func parsePresigned(q url.Values) (*sigRequest, error) {
	sr := &sigRequest{presigned: true, payloadHash: unsignedBody}
	for _, k := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"} {
		if q.Get(k) == "" {
			return nil, errQueryParams("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	if q.Get("X-Amz-Algorithm") != sigAlgorithm {
		return nil, errQueryParams(`X-Amz-Algorithm only supports "` + sigAlgorithm + `"`)
	}
	if sr.parseCredential(q.Get("X-Amz-Credential")) != nil {
		return nil, errQueryParams(`Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
	}
	if err := sr.parseDate(q.Get("X-Amz-Date")); err != nil {
		return nil, errQueryParams("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\" and its date must match the credential scope")
	}
	secs, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	switch {
	case err != nil:
		return nil, errQueryParams("X-Amz-Expires should be a number")
	case secs < 0:
		return nil, errQueryParams("X-Amz-Expires must be non-negative")
	case secs > maxPresignSecs:
		return nil, errQueryParams("X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	sr.expires = time.Duration(secs) * time.Second
	sr.signature = q.Get("X-Amz-Signature")
	sr.signedHeaders = strings.Split(q.Get("X-Amz-SignedHeaders"), ";")
	return sr, nil
}

// canonicalRequest builds the SigV4 canonical request of r as the client
// must have signed it.
func canonicalRequest(r *http.Request, sr *sigRequest) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(awsEscape(r.URL.Path, false))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery))
	b.WriteByte('\n')
	for _, h := range sr.signedHeaders {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(sr.signedHeaders, ";"))
	b.WriteByte('\n')
	b.WriteString(sr.payloadHash)
	return b.String()
}

// headerValue is the canonical value of a signed header. Go moves Host and
// Content-Length out of r.Header, so those come from the request fields.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "content-length":
		vals = r.Header.Values("Content-Length")
		if len(vals) == 0 {
			vals = []string{strconv.FormatInt(max(r.ContentLength, 0), 10)}
		}
	default:
		vals = r.Header.Values(name)
	}
	for i, v := range vals {
		vals[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(vals, ",")
}

// canonicalQuery sorts the query by name and value and re-escapes it the
// SigV4 way, leaving out the signature itself. The raw query is parsed
// by hand because url.ParseQuery drops malformed pairs, which would make a
// tampered query look signed.
func canonicalQuery(raw string) string {
	type kv struct{ k, v string }
	var pairs []kv
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			k, v = part, "\x00invalid" // cannot match any signature
		}
		if k == "X-Amz-Signature" {
			continue
		}
		pairs = append(pairs, kv{awsEscape(k, true), awsEscape(v, true)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// awsEscape percent-encodes everything but the unreserved characters (and
// '/' unless slash is set), with uppercase hex, as SigV4 requires.
func awsEscape(s string, slash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLetter(c) || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' || (c == '/' && !slash) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// sign returns the signature of a canonical request under secret.
func (sr *sigRequest) sign(secret, canonical string) []byte {
	sum := sha256.Sum256([]byte(canonical))
	scope := sr.date + "/" + sr.region + "/" + sr.service + "/aws4_request"
	toSign := sigAlgorithm + "\n" + sr.amzDate.Format(amzDateFormat) + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	k := hmacSHA256([]byte("AWS4"+secret), sr.date)
	k = hmacSHA256(k, sr.region)
	k = hmacSHA256(k, sr.service)
	k = hmacSHA256(k, "aws4_request")
	return hmacSHA256(k, toSign)
}
