package acl

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"
)

// prefixS3Key holds S3 access keys: + access key ID → s3KeyRecord.
const prefixS3Key = "acl/s3/"

// S3KeyInfo describes an S3 access key without its secret.
type S3KeyInfo struct {
	AccessKeyID string    `json:"access_key_id"`
	Principal   string    `json:"principal"`
	Created     time.Time `json:"created"`
}

// s3KeyRecord is what is stored. Unlike bearer tokens, the secret is
// kept recoverably: SigV4 never sends the secret, only an HMAC keyed with
// it, so the server must hold the secret itself to recompute the
// signature. It is kept sealed (secrets.go) under a key held outside the
// catalog, so that the catalog alone does not let anyone act as the
// key's principal over S3.
//
// PrincipalCreated ties the key to one incarnation of its principal:
// DeletePrincipal does not know about S3 keys, so a key of a deleted
// principal is recognised by the mismatch (or absence) and never honoured,
// even if a principal of the same name is created later.
type s3KeyRecord struct {
	S3KeyInfo
	Sealed *sealedSecret `json:"sealed_secret,omitempty"`
	// Secret is the secret in clear: in records of versions before
	// sealing (sealed by Open when it has a key) and of Stores opened
	// without a key.
	Secret           string    `json:"secret,omitempty"`
	PrincipalCreated time.Time `json:"principal_created"`
}

const (
	// s3KeyIDPrefix makes silt access keys recognisable; 4 + 16 characters
	// gives the 20-character shape of AWS access key IDs.
	s3KeyIDPrefix  = "SILT"
	s3KeyIDBytes   = 10
	s3SecretBytes  = 30 // 40 base64 characters, like AWS secrets
	maxS3KeyIDLen  = 128
	s3KeyIDCharset = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

var s3KeyIDEncoding = base32.NewEncoding(s3KeyIDCharset).WithPadding(base32.NoPadding)

// IssueS3Key creates an S3 access key for principal and returns its ID and
// secret. The secret is stored sealed when the Store has a secrets key,
// can be recovered later only by LookupS3Key, which the S3 head needs, and
// is never listed.
//
// Keys are read from the KV on each lookup rather than cached in memory:
// a catalog Get is cheap, and it keeps the Store's in-memory state (and
// its locking) unchanged.
func (s *Store) IssueS3Key(principal string) (accessKeyID, secret string, err error) {
	if principal == Anonymous.Name {
		return "", "", fmt.Errorf("%w: principal %q stands for unauthenticated requests and cannot hold S3 keys", ErrInvalid, principal)
	}
	if err := checkPrincipalName(principal); err != nil {
		return "", "", err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	info, ok := s.lookupPrincipal(principal)
	if !ok {
		return "", "", errNoPrincipal(principal)
	}
	for {
		var raw [s3KeyIDBytes]byte
		rand.Read(raw[:])
		accessKeyID = s3KeyIDPrefix + s3KeyIDEncoding.EncodeToString(raw[:])
		_, taken, err := s.kv.Get([]byte(prefixS3Key + accessKeyID))
		if err != nil {
			return "", "", fmt.Errorf("acl: issue s3 key for %q: %w", principal, err)
		}
		if !taken {
			break
		}
	}
	var raw [s3SecretBytes]byte
	rand.Read(raw[:])
	secret = base64.StdEncoding.EncodeToString(raw[:])
	key := prefixS3Key + accessKeyID
	rec := s3KeyRecord{
		S3KeyInfo:        S3KeyInfo{AccessKeyID: accessKeyID, Principal: principal, Created: s.timestamp()},
		PrincipalCreated: info.Created,
	}
	if s.sealer != nil {
		rec.Sealed = s.sealer.seal(secret, []byte(key))
	} else {
		rec.Secret = secret
	}
	if err := s.kv.Commit(map[string][]byte{key: encode(rec)}, nil); err != nil {
		return "", "", fmt.Errorf("acl: issue s3 key for %q: %w", principal, err)
	}
	return accessKeyID, secret, nil
}

func checkS3KeyID(id string) error {
	if id == "" || len(id) > maxS3KeyIDLen || strings.ContainsAny(id, "/\x00") {
		return fmt.Errorf("%w: s3 access key id %q", ErrInvalid, id)
	}
	return nil
}

// LookupS3Key returns the principal and secret of an access key, for
// verifying a SigV4 signature. Unknown keys and keys of deleted principals
// (its principal no longer exists, or is not the one the key was issued
// to) give an error wrapping ErrNotFound.
func (s *Store) LookupS3Key(accessKeyID string) (principal Principal, secret string, err error) {
	if err := checkS3KeyID(accessKeyID); err != nil {
		return Principal{}, "", err
	}
	key := []byte(prefixS3Key + accessKeyID)
	v, ok, err := s.kv.Get(key)
	if err != nil {
		return Principal{}, "", fmt.Errorf("acl: look up s3 key %s: %w", accessKeyID, err)
	}
	if !ok {
		return Principal{}, "", fmt.Errorf("%w: s3 access key %q", ErrNotFound, accessKeyID)
	}
	rec, secret, err := s.decodeS3Key(key, v)
	if err != nil {
		return Principal{}, "", err
	}
	if p, ok := s.lookupPrincipal(rec.Principal); !ok || !p.Created.Equal(rec.PrincipalCreated) {
		return Principal{}, "", fmt.Errorf("%w: s3 access key %q (its principal %q was deleted)", ErrNotFound, accessKeyID, rec.Principal)
	}
	return Principal{Name: rec.Principal}, secret, nil
}

// RevokeS3Key deletes an access key.
func (s *Store) RevokeS3Key(accessKeyID string) error {
	if err := checkS3KeyID(accessKeyID); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, ok, err := s.kv.Get([]byte(prefixS3Key + accessKeyID))
	if err != nil {
		return fmt.Errorf("acl: revoke s3 key %s: %w", accessKeyID, err)
	}
	if !ok {
		return fmt.Errorf("%w: s3 access key %q", ErrNotFound, accessKeyID)
	}
	if err := s.kv.Commit(nil, []string{prefixS3Key + accessKeyID}); err != nil {
		return fmt.Errorf("acl: revoke s3 key %s: %w", accessKeyID, err)
	}
	return nil
}

// ListS3Keys returns the live keys of principal, without secrets, sorted by
// ID.
func (s *Store) ListS3Keys(principal string) ([]S3KeyInfo, error) {
	if err := checkGrantee(principal); err != nil {
		return nil, err
	}
	p, ok := s.lookupPrincipal(principal)
	if !ok {
		return nil, errNoPrincipal(principal)
	}
	var out []S3KeyInfo
	err := s.kv.Scan([]byte(prefixS3Key), nil, func(key, value []byte) error {
		var rec s3KeyRecord
		if err := decode(key, value, &rec); err != nil {
			return err
		}
		if rec.Principal == principal && rec.PrincipalCreated.Equal(p.Created) {
			out = append(out, rec.S3KeyInfo)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b S3KeyInfo) int { return strings.Compare(a.AccessKeyID, b.AccessKeyID) })
	return out, nil
}
