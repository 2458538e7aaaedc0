package acl

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// secretForms are the ways an S3 secret could show up in a file: as
// issued (base64 of 30 random bytes), as those raw bytes, and hex or
// base64 encodings of either.
func secretForms(t *testing.T, secret string) map[string][]byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		t.Fatalf("secret %q is not base64: %v", secret, err)
	}
	return map[string][]byte{
		"as issued":        []byte(secret),
		"raw":              raw,
		"hex of raw":       []byte(hex.EncodeToString(raw)),
		"hex as issued":    []byte(hex.EncodeToString([]byte(secret))),
		"base64 as issued": []byte(base64.StdEncoding.EncodeToString([]byte(secret))),
		"base64url of raw": []byte(base64.RawURLEncoding.EncodeToString(raw)),
		"hex upper of raw": []byte(strings.ToUpper(hex.EncodeToString(raw))),
	}
}

// findSecret returns "<file>: <form>" for every form of every secret
// found in a file under dir.
func findSecret(t *testing.T, dir string, secrets ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			for name, form := range secretForms(t, s) {
				if bytes.Contains(b, form) {
					found = append(found, filepath.Base(p)+": "+name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func TestS3SecretSealedAtRest(t *testing.T) {
	e := newEnv(t)
	e.principal("alice")
	id, secret, err := e.s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := e.cat.Get([]byte(prefixS3Key + id))
	if err != nil || !ok {
		t.Fatalf("record of %s: %v %v", id, ok, err)
	}
	for name, form := range secretForms(t, secret) {
		if bytes.Contains(v, form) {
			t.Errorf("the record holds the secret (%s): %s", name, v)
		}
	}
	var rec s3KeyRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Sealed == nil || rec.Sealed.KeyID != secretsKeyID(e.key) || rec.Secret != "" {
		t.Fatalf("record %s: want a secret sealed with key %s and none in clear", v, secretsKeyID(e.key))
	}
	e.reopen()
	if p, got, err := e.s.LookupS3Key(id); err != nil || got != secret || p.Name != "alice" {
		t.Fatalf("lookup after reopen: %v %q %v, want alice and the issued secret", p, got, err)
	}
	e.cat.Close()
	e.cat = nil
	if found := findSecret(t, e.dir, secret); len(found) > 0 {
		t.Fatalf("catalog files hold the S3 secret: %v", found)
	}
}

func TestSealIsRandomized(t *testing.T) {
	sl, err := newSealer(newSecretsKey())
	if err != nil {
		t.Fatal(err)
	}
	a, b := sl.seal("same secret", []byte("acl/s3/X")), sl.seal("same secret", []byte("acl/s3/X"))
	if bytes.Equal(a.Box, b.Box) {
		t.Fatal("sealing a secret twice gave the same box: the nonce is not random")
	}
}

// A catalog written before secrets were sealed holds them in clear; Open
// with a key seals them in place and they leave the catalog's files.
func TestS3SecretsSealedAtOpen(t *testing.T) {
	e := newEnv(t)
	e.key = nil
	e.reopen()
	e.principal("alice")
	e.principal("bob")
	secrets := map[string]string{}
	for _, p := range []string{"alice", "bob"} {
		id, secret, err := e.s.IssueS3Key(p)
		if err != nil {
			t.Fatal(err)
		}
		secrets[id] = secret
	}
	all := func() []string {
		var out []string
		for _, s := range secrets {
			out = append(out, s)
		}
		return out
	}
	e.cat.Close()
	e.cat = nil
	if found := findSecret(t, e.dir, all()...); len(found) == 0 {
		t.Fatal("secrets stored without a key are in no file: the check after sealing would prove nothing")
	}

	e.key = newSecretsKey()
	e.open()
	if n := e.s.SealedAtOpen(); n != 2 {
		t.Fatalf("SealedAtOpen = %d, want 2", n)
	}
	for id, secret := range secrets {
		if _, got, err := e.s.LookupS3Key(id); err != nil || got != secret {
			t.Fatalf("lookup of %s after sealing: %q %v, want the secret issued", id, got, err)
		}
	}
	if _, ok, _ := e.cat.Get([]byte(keyScrubPending)); ok {
		t.Fatal("scrub marker left after a finished Open")
	}
	e.cat.Close()
	e.cat = nil
	if found := findSecret(t, e.dir, all()...); len(found) > 0 {
		t.Fatalf("after sealing, catalog files still hold secrets: %v", found)
	}
	e.open()
	if n := e.s.SealedAtOpen(); n != 0 {
		t.Fatalf("second Open sealed %d secrets again", n)
	}
	for id, secret := range secrets {
		if _, got, err := e.s.LookupS3Key(id); err != nil || got != secret {
			t.Fatalf("lookup of %s after a restart: %q %v", id, got, err)
		}
	}
}

// A server given the wrong key, or none, for a catalog with sealed
// secrets must not start and then fail every S3 signature.
func TestOpenRefusesWrongSecretsKey(t *testing.T) {
	right := newSecretsKey()
	kv := newMemKV()
	s, err := Open(kv, WithSecretsKey(right))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	id, secret, err := s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	before := kv.m[prefixS3Key+id]
	other := newSecretsKey()
	tests := []struct {
		name string
		opts []Option
		is   error
		says []string
	}{
		{"no key", nil, ErrSecretsKey, []string{"no key was given", secretsKeyID(right)}},
		{"another key", []Option{WithSecretsKey(other)}, ErrSecretsKey, []string{id, secretsKeyID(right), secretsKeyID(other)}},
		{"short key", []Option{WithSecretsKey(right[:16])}, ErrInvalid, []string{"16 bytes, want 32"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(kv, tc.opts...)
			if !errors.Is(err, tc.is) {
				t.Fatalf("Open = %v, want %v", err, tc.is)
			}
			for _, w := range tc.says {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !bytes.Equal(kv.m[prefixS3Key+id], before) {
				t.Fatal("a refused Open changed the record")
			}
		})
	}
	s, err = Open(kv, WithSecretsKey(right))
	if err != nil {
		t.Fatal(err)
	}
	if _, got, err := s.LookupS3Key(id); err != nil || got != secret {
		t.Fatalf("lookup with the right key: %q %v", got, err)
	}
}

// The access key ID is the additional data: a sealed secret copied into
// another key's record, or altered, does not open.
func TestSealedSecretBoundToItsRecord(t *testing.T) {
	key := newSecretsKey()
	tests := []struct {
		name   string
		tamper func(a, b *s3KeyRecord)
		says   string
	}{
		{"moved to another access key", func(a, b *s3KeyRecord) { b.Sealed = a.Sealed }, "copied from another access key"},
		{"one bit flipped", func(a, b *s3KeyRecord) { b.Sealed.Box[len(b.Sealed.Box)-1] ^= 1 }, "altered"},
		{"truncated", func(a, b *s3KeyRecord) { b.Sealed.Box = b.Sealed.Box[:10] }, "too short"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kv := newMemKV()
			s, err := Open(kv, WithSecretsKey(key))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.CreatePrincipal("alice"); err != nil {
				t.Fatal(err)
			}
			idA, _, err := s.IssueS3Key("alice")
			if err != nil {
				t.Fatal(err)
			}
			idB, _, err := s.IssueS3Key("alice")
			if err != nil {
				t.Fatal(err)
			}
			var a, b s3KeyRecord
			json.Unmarshal(kv.m[prefixS3Key+idA], &a)
			json.Unmarshal(kv.m[prefixS3Key+idB], &b)
			tc.tamper(&a, &b)
			kv.m[prefixS3Key+idB] = encode(b)
			if _, _, err := s.LookupS3Key(idB); !errors.Is(err, ErrSecretsKey) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("lookup of the tampered key = %v, want ErrSecretsKey saying %q", err, tc.says)
			}
			if _, err := Open(kv, WithSecretsKey(key)); !errors.Is(err, ErrSecretsKey) || !strings.Contains(err.Error(), idB) {
				t.Fatalf("Open = %v, want ErrSecretsKey naming %s", err, idB)
			}
		})
	}
}

// compactKV is a memKV whose CompactPrefix can fail, as a crash between
// sealing and compacting would leave things.
type compactKV struct {
	*memKV
	fail     bool
	compacts int
}

func (k *compactKV) CompactPrefix(prefix string) error {
	if prefix != prefixS3Key {
		return errors.New("compacted the wrong prefix " + prefix)
	}
	if k.fail {
		return errInjected
	}
	k.compacts++
	return nil
}

func TestSealingFinishedAfterFailedCompaction(t *testing.T) {
	kv := &compactKV{memKV: newMemKV()}
	s, err := Open(kv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	id, secret, err := s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}
	key := newSecretsKey()
	kv.fail = true
	if _, err := Open(kv, WithSecretsKey(key)); !errors.Is(err, errInjected) {
		t.Fatalf("Open with a failing compaction = %v, want the failure", err)
	}
	if _, ok := kv.m[keyScrubPending]; !ok {
		t.Fatal("no scrub marker after the sealing commit")
	}
	kv.fail = false
	s, err = Open(kv, WithSecretsKey(key))
	if err != nil {
		t.Fatal(err)
	}
	if kv.compacts != 1 {
		t.Fatalf("%d compactions at the next Open, want 1 (the interrupted one)", kv.compacts)
	}
	if _, ok := kv.m[keyScrubPending]; ok {
		t.Fatal("scrub marker left after the compaction")
	}
	if _, got, err := s.LookupS3Key(id); err != nil || got != secret {
		t.Fatalf("lookup: %q %v", got, err)
	}
	if _, err := Open(kv, WithSecretsKey(key)); err != nil || kv.compacts != 1 {
		t.Fatalf("an Open with nothing to seal compacted (%d) or failed (%v)", kv.compacts, err)
	}
}

// A secrets key lost for good is named by its ID: the S3 keys sealed with
// it are revoked and Open goes on; keys sealed with any other key still
// stop it.
func TestLostSecretsKeyRevokesItsKeys(t *testing.T) {
	lost, current, stranger := newSecretsKey(), newSecretsKey(), newSecretsKey()
	kv := newMemKV()
	s, err := Open(kv, WithSecretsKey(lost))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreatePrincipal("alice"); err != nil {
		t.Fatal(err)
	}
	var gone []string
	for range 2 {
		id, _, err := s.IssueS3Key("alice")
		if err != nil {
			t.Fatal(err)
		}
		gone = append(gone, id)
	}
	if _, err := Open(kv, WithSecretsKey(current)); !errors.Is(err, ErrSecretsKey) {
		t.Fatalf("Open with another key and no lost key named = %v, want ErrSecretsKey", err)
	}
	s, err = Open(kv, WithSecretsKey(current), WithLostSecretsKey(secretsKeyID(lost)))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(gone) // Open scans in key order
	if got := strings.Join(s.RevokedAtOpen(), ","); got != strings.Join(gone, ",") {
		t.Fatalf("RevokedAtOpen = %s, want %s", got, strings.Join(gone, ","))
	}
	for _, id := range gone {
		if _, _, err := s.LookupS3Key(id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("revoked key %s: %v, want ErrNotFound", id, err)
		}
	}
	id, secret, err := s.IssueS3Key("alice")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		opts    []Option
		err     error
		revoked int
	}{
		{"the lost key still named, nothing left to revoke", []Option{WithSecretsKey(current), WithLostSecretsKey(secretsKeyID(lost))}, nil, 0},
		{"naming the key in use revokes nothing", []Option{WithSecretsKey(current), WithLostSecretsKey(secretsKeyID(current))}, nil, 0},
		{"a wrong key file is not hidden by the setting", []Option{WithSecretsKey(stranger), WithLostSecretsKey(secretsKeyID(lost))}, ErrSecretsKey, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(kv, tc.opts...)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Open = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			if n := len(s.RevokedAtOpen()); n != tc.revoked {
				t.Fatalf("revoked %d keys, want %d", n, tc.revoked)
			}
			if _, got, err := s.LookupS3Key(id); err != nil || got != secret {
				t.Fatalf("the key sealed with the current key: %q %v", got, err)
			}
		})
	}
}
