package acl

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// S3 secrets must be recoverable (SigV4 needs the secret itself, see
// s3KeyRecord), so unlike bearer and delegation tokens they cannot be
// kept as digests. They are sealed instead: AES-256-GCM under a key that
// lives outside the catalog (by default a 0600 file in the data dir, or
// wherever the operator names), so that a copied catalog or a backup of
// it does not give away any principal's S3 access.

// SecretsKeySize is the length of the key WithSecretsKey takes.
const SecretsKeySize = 32

// ErrSecretsKey is returned by Open when the catalog holds sealed S3
// secrets that the given secrets key cannot open: no key was given, it is
// another key than the one they were sealed with, or a record was altered
// or moved to another access key ID.
var ErrSecretsKey = errors.New("acl: S3 secrets cannot be decrypted")

// Option configures Open.
type Option func(*options)

type options struct {
	secretsKey []byte
	lostKeyID  string
}

// WithSecretsKey makes the Store seal S3 secrets with key (32 bytes,
// AES-256-GCM) and encrypt, at Open, those that an earlier version or a
// Store without a key stored in clear. Without it S3 secrets are stored as
// they are: for tests and tools; `silt serve` always gives one.
func WithSecretsKey(key []byte) Option {
	return func(o *options) { o.secretsKey = key }
}

// WithLostSecretsKey names, by the ID Open's error gives, a secrets key
// that is lost for good: the S3 keys sealed with it are revoked at Open
// (see RevokedAtOpen) instead of failing it, and their holders need new
// ones. Keys sealed with any other key still fail Open, so leaving this
// set does not hide a wrong key file later.
func WithLostSecretsKey(keyID string) Option {
	return func(o *options) { o.lostKeyID = keyID }
}

// sealedSecret is a secret encrypted under the secrets key KeyID names.
// Box is a random 12-byte nonce followed by the GCM ciphertext and tag.
type sealedSecret struct {
	KeyID string `json:"key_id"`
	Box   []byte `json:"box"`
}

// sealer seals and opens S3 secrets. The additional data is the record's
// catalog key, which holds its access key ID, so that a sealed secret
// copied into another key's record does not open there.
type sealer struct {
	aead cipher.AEAD
	id   string
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != SecretsKeySize {
		return nil, fmt.Errorf("%w: secrets key: %d bytes, want %d", ErrInvalid, len(key), SecretsKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("acl: secrets key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("acl: secrets key: %w", err)
	}
	return &sealer{aead: aead, id: secretsKeyID(key)}, nil
}

// SecretsKeyID is the id of a secrets key as records and errors name it;
// a cluster records it so that every node is checked to share the key.
func SecretsKeyID(key []byte) string { return secretsKeyID(key) }

// secretsKeyID names a key in records and error messages without
// revealing it: a domain-separated SHA-256 of a 256-bit random key, cut to
// 8 bytes, which is plenty to tell two keys apart.
func secretsKeyID(key []byte) string {
	h := sha256.Sum256(append([]byte("silt secrets key id\x00"), key...))
	return hex.EncodeToString(h[:8])
}

func (s *sealer) seal(secret string, ad []byte) *sealedSecret {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(secret)+s.aead.Overhead())
	rand.Read(nonce)
	return &sealedSecret{KeyID: s.id, Box: s.aead.Seal(nonce, nonce, []byte(secret), ad)}
}

func (s *sealer) open(b *sealedSecret, ad []byte) (string, error) {
	if b.KeyID != s.id {
		return "", fmt.Errorf("%w: sealed with secrets key %s, but the key given is %s", ErrSecretsKey, b.KeyID, s.id)
	}
	n := s.aead.NonceSize()
	if len(b.Box) < n+s.aead.Overhead() {
		return "", fmt.Errorf("%w: sealed secret is %d bytes, too short", ErrSecretsKey, len(b.Box))
	}
	plain, err := s.aead.Open(nil, b.Box[:n], b.Box[n:], ad)
	if err != nil {
		return "", fmt.Errorf("%w: the record was altered or copied from another access key", ErrSecretsKey)
	}
	return string(plain), nil
}

// keyScrubPending is set in the commit that replaces clear secrets with
// sealed ones and deleted once the catalog has compacted the clear
// versions away, so that a crash in between is finished at the next Open.
const keyScrubPending = "acl/s3-scrub-pending"

// compacter is implemented by KVs that can rewrite a key range so that
// values overwritten there leave the disk (*catalog.Catalog).
type compacter interface {
	CompactPrefix(prefix string) error
}

// openS3Secrets checks, at Open, that every sealed S3 secret opens with
// the Store's key, and seals those stored in clear if the Store has a
// key. Failing here, rather than at the first S3 request, keeps a server
// with the wrong key from starting and answering every signed request
// with SignatureDoesNotMatch.
func (s *Store) openS3Secrets(lostKeyID string) error {
	set := map[string][]byte{}
	var revoke, unsealable []string
	err := s.kv.Scan([]byte(prefixS3Key), nil, func(key, value []byte) error {
		var rec s3KeyRecord
		if err := decode(key, value, &rec); err != nil {
			return err
		}
		switch {
		case rec.Sealed != nil && lostKeyID != "" && rec.Sealed.KeyID == lostKeyID && (s.sealer == nil || s.sealer.id != lostKeyID):
			revoke = append(revoke, string(key))
			s.revokedAtOpen = append(s.revokedAtOpen, rec.AccessKeyID)
		case rec.Sealed != nil && s.sealer == nil:
			unsealable = append(unsealable, rec.Sealed.KeyID)
		case rec.Sealed != nil:
			if _, err := s.sealer.open(rec.Sealed, key); err != nil {
				return fmt.Errorf("acl: open: s3 key %s: %w", rec.AccessKeyID, err)
			}
			if rec.Secret != "" { // never written so; keep no clear copy
				rec.Secret = ""
				set[string(key)] = encode(rec)
			}
		case rec.Secret == "":
			return fmt.Errorf("acl: open: record %s holds no secret", key)
		case s.sealer != nil:
			rec.Sealed, rec.Secret = s.sealer.seal(rec.Secret, key), ""
			set[string(key)] = encode(rec)
			s.sealedAtOpen++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(unsealable) > 0 {
		return fmt.Errorf("%w: the catalog holds %d S3 secrets sealed with secrets key %s, and no key was given", ErrSecretsKey, len(unsealable), unsealable[0])
	}
	_, pending, err := s.kv.Get([]byte(keyScrubPending))
	if err != nil {
		return fmt.Errorf("acl: open: %w", err)
	}
	if len(set) == 0 && len(revoke) == 0 && !pending {
		return nil
	}
	if len(set) > 0 || len(revoke) > 0 {
		set[keyScrubPending] = []byte("{}")
		if err := s.kv.Commit(set, revoke); err != nil {
			return fmt.Errorf("acl: open: seal %d S3 secrets stored in clear, revoke %d sealed with a lost key: %w", s.sealedAtOpen, len(revoke), err)
		}
	}
	// The clear secrets are still in older files of the catalog until
	// their range is compacted.
	if c, ok := s.kv.(compacter); ok {
		if err := c.CompactPrefix(prefixS3Key); err != nil {
			return fmt.Errorf("acl: open: drop S3 secrets stored in clear from the catalog's files: %w", err)
		}
	}
	if err := s.kv.Commit(nil, []string{keyScrubPending}); err != nil {
		return fmt.Errorf("acl: open: %w", err)
	}
	return nil
}

// decodeS3Key decodes a record and recovers its secret.
func (s *Store) decodeS3Key(key, value []byte) (s3KeyRecord, string, error) {
	var rec s3KeyRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return s3KeyRecord{}, "", fmt.Errorf("acl: s3 key record %s: %w", key, err)
	}
	if rec.Sealed == nil {
		return rec, rec.Secret, nil
	}
	if s.sealer == nil {
		return s3KeyRecord{}, "", fmt.Errorf("%w: s3 key %s is sealed and the store has no secrets key", ErrSecretsKey, rec.AccessKeyID)
	}
	secret, err := s.sealer.open(rec.Sealed, key)
	if err != nil {
		return s3KeyRecord{}, "", fmt.Errorf("acl: s3 key %s: %w", rec.AccessKeyID, err)
	}
	return rec, secret, nil
}
