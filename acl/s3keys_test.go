package acl

import (
	"errors"
	"testing"
)

func TestS3Keys(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	id, secret, err := e.s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 20 || len(secret) != 40 {
		t.Errorf("id %q secret %q: want 20 and 40 characters", id, secret)
	}
	if _, _, err := e.s.IssueS3Key("nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("issue for missing principal: %v", err)
	}
	if _, _, err := e.s.IssueS3Key(Anonymous.Name); !errors.Is(err, ErrInvalid) {
		t.Errorf("issue for anonymous: %v", err)
	}
	e.reopen()
	p, got, err := e.s.LookupS3Key(id)
	if err != nil || p.Name != "alice" || got != secret {
		t.Fatalf("lookup after reopen = %v %q %v", p, got, err)
	}
	keys, err := e.s.ListS3Keys("alice")
	if err != nil || len(keys) != 1 || keys[0].AccessKeyID != id {
		t.Fatalf("list = %v %v", keys, err)
	}
	if _, _, err := e.s.LookupS3Key("SILTNOSUCHKEY"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown key: %v", err)
	}
	if err := e.s.RevokeS3Key(id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.s.LookupS3Key(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoked key: %v", err)
	}
	if err := e.s.RevokeS3Key(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("revoke twice: %v", err)
	}

	// A key must not outlive its principal, even across a re-creation
	// under the same name.
	id2, _, err := e.s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.DeletePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.s.LookupS3Key(id2); !errors.Is(err, ErrNotFound) {
		t.Errorf("key of deleted principal: %v", err)
	}
	e.clk.advance(1)
	e.principal("alice")
	if _, _, err := e.s.LookupS3Key(id2); !errors.Is(err, ErrNotFound) {
		t.Errorf("key of re-created principal: %v", err)
	}
	if keys, _ := e.s.ListS3Keys("alice"); len(keys) != 0 {
		t.Errorf("re-created principal lists %v", keys)
	}
}

// Deleting a principal removes its S3 keys' records, secrets included,
// and leaves other principals' keys alone.
func TestDeletePrincipalRemovesS3Keys(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	e.principal("bob")
	aliceKey, _, err := e.s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	bobKey, _, err := e.s.IssueS3Key("bob")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.DeletePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.cat.Get([]byte(prefixS3Key + aliceKey)); err != nil || ok {
		t.Fatalf("alice's key record after her deletion: present %v, %v", ok, err)
	}
	if _, _, err := e.s.LookupS3Key(bobKey); err != nil {
		t.Fatalf("bob's key after alice's deletion: %v", err)
	}
}
