package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestS3Keys(t *testing.T) {
	e := newEnv(t)
	e.must(http.StatusCreated, req{method: "POST", path: "/v1/principals", body: []byte(`{"name":"etl"}`)})
	var k s3KeyJSON
	rep := e.must(http.StatusCreated, req{method: "POST", path: "/v1/principals/etl/s3-keys"})
	rep.json(t, &k)
	if k.AccessKeyID == "" || k.SecretAccessKey == "" || k.Principal != "etl" || rep.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("issued %+v", k)
	}
	p, secret, err := e.acl.LookupS3Key(k.AccessKeyID)
	if err != nil || p.Name != "etl" || secret != k.SecretAccessKey {
		t.Fatalf("lookup: %v %q %v", p, secret, err)
	}
	var kl s3KeyList
	rep = e.must(http.StatusOK, req{method: "GET", path: "/v1/principals/etl/s3-keys"})
	rep.json(t, &kl)
	if len(kl.Keys) != 1 || kl.Keys[0].AccessKeyID != k.AccessKeyID || strings.Contains(string(rep.body), k.SecretAccessKey) {
		t.Fatalf("list %s", rep.body)
	}
	e.must(http.StatusNotFound, req{method: "POST", path: "/v1/principals/nobody/s3-keys"})
	e.must(http.StatusNoContent, req{method: "DELETE", path: "/v1/s3-keys/" + k.AccessKeyID})
	e.must(http.StatusNotFound, req{method: "DELETE", path: "/v1/s3-keys/" + k.AccessKeyID})
	if _, _, err := e.acl.LookupS3Key(k.AccessKeyID); err == nil {
		t.Fatal("revoked key still resolves")
	}
}
