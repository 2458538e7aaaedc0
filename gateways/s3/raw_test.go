package s3

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// rawResp is a response read whole, for checks on status, headers and the
// exact bytes, which the SDK hides or interprets.
type rawResp struct {
	status int
	header http.Header
	body   []byte
	// length and chunked are what the client saw on the wire: the
	// Content-Length (-1 when absent) and whether the body was chunked.
	length  int64
	chunked bool
}

// errCode is the <Code> of an S3 error body ("" when there is none).
func (r rawResp) errCode() string {
	var e struct{ Code string }
	xml.Unmarshal(r.body, &e)
	return e.Code
}

// rawClient neither decompresses nor follows redirects: the test must see
// exactly what the server sent.
var rawClient = &http.Client{
	Transport:     &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// raw sends method target (a path with an optional query) with hdr, signed
// with SigV4 as principal as, or unsigned when as is "".
func (e *testEnv) raw(as, method, target string, hdr map[string]string) rawResp {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+target, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if as != "" {
		e.sign(req, as)
	}
	return e.do(req)
}

func (e *testEnv) sign(req *http.Request, as string) {
	e.t.Helper()
	k, ok := e.keys[as]
	if !ok {
		e.t.Fatalf("no S3 key for %q", as)
	}
	sum := sha256.Sum256(nil)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payload)
	creds := aws.Credentials{AccessKeyID: k[0], SecretAccessKey: k[1]}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, payload, "s3", "us-east-1", time.Now()); err != nil {
		e.t.Fatal(err)
	}
}

// presign returns a presigned URL for GET target, valid for expires
// seconds as the URL says (the signer does not check the value).
func (e *testEnv) presign(as, target string, expires string) string {
	e.t.Helper()
	k := e.keys[as]
	u, err := url.Parse(e.url + target)
	if err != nil {
		e.t.Fatal(err)
	}
	q := u.Query()
	q.Set("X-Amz-Expires", expires)
	u.RawQuery = q.Encode()
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	creds := aws.Credentials{AccessKeyID: k[0], SecretAccessKey: k[1]}
	signed, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return signed
}

func (e *testEnv) do(req *http.Request) rawResp {
	e.t.Helper()
	resp, err := rawClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
	return rawResp{status: resp.StatusCode, header: resp.Header, body: b, length: resp.ContentLength, chunked: chunked}
}
