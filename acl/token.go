package acl

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// TokenInfo describes a bearer token. The secret itself is shown once, by
// IssueToken, and never stored.
type TokenInfo struct {
	ID        string    `json:"id"`
	Principal string    `json:"principal"`
	Label     string    `json:"label,omitempty"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires,omitzero"` // zero = never
}

const (
	// tokenPrefix makes silt secrets recognisable to secret scanners and to
	// people reading a config file.
	tokenPrefix      = "silt_"
	tokenSecretBytes = 32
	// Operator-supplied secrets (EnsureRoot) are not generated here, so
	// their entropy is the operator's responsibility; a minimum length at
	// least rules out passwords.
	minOperatorSecretLen = 32
	maxSecretLen         = 512
	maxLabelLen          = 128
	rootTokenLabel       = "root (operator-supplied)"
)

// tokenEncoding is lowercase base32 without padding: no characters that
// need quoting in a shell, a URL or an HTTP header.
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

type tokenEntry struct {
	hash [32]byte // SHA-256 of the secret
	info TokenInfo
}

// hashSecret is the only form in which a secret is stored. A plain SHA-256
// is enough, without salt or a slow KDF: generated secrets carry 256 bits
// from crypto/rand, so neither guessing nor precomputed tables can find a
// preimage, unlike with human-chosen passwords, which is what KDFs are for.
// Being fast also lets Authenticate run on every request.
func hashSecret(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

func (e *tokenEntry) expired(now time.Time) bool {
	return !e.info.Expires.IsZero() && !now.Before(e.info.Expires)
}

// IssueToken creates a bearer token for principal and returns its secret,
// which is not kept and cannot be shown again. ttl 0 means the token never
// expires.
func (s *Store) IssueToken(principal, label string, ttl time.Duration) (secret string, info TokenInfo, err error) {
	if principal == Anonymous.Name {
		return "", TokenInfo{}, fmt.Errorf("%w: principal %q stands for unauthenticated requests and cannot hold tokens", ErrInvalid, principal)
	}
	if err := checkPrincipalName(principal); err != nil {
		return "", TokenInfo{}, err
	}
	if ttl < 0 {
		return "", TokenInfo{}, fmt.Errorf("%w: token lifetime %v is negative; use 0 for a token that never expires", ErrInvalid, ttl)
	}
	if err := checkLabel(label); err != nil {
		return "", TokenInfo{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, ok := s.lookupPrincipal(principal); !ok {
		return "", TokenInfo{}, errNoPrincipal(principal)
	}
	var raw [tokenSecretBytes]byte
	rand.Read(raw[:])
	secret = tokenPrefix + tokenEncoding.EncodeToString(raw[:])
	e := &tokenEntry{hash: hashSecret(secret)}
	now := s.timestamp()
	e.info = TokenInfo{ID: s.unusedTokenID(), Principal: principal, Label: label, Created: now}
	if ttl > 0 {
		e.info.Expires = now.Add(ttl)
	}
	key := prefixToken + hex.EncodeToString(e.hash[:])
	// Expired tokens of the same principal go in the same commit, so that
	// short-lived tokens issued again and again (OAuth2 grants) do not pile
	// up in the catalog and in memory.
	expired := s.expiredTokens(principal, now)
	var del []string
	for _, h := range expired {
		del = append(del, prefixToken+hex.EncodeToString(h[:]))
	}
	if err := s.kv.Commit(map[string][]byte{key: encode(e.info)}, del); err != nil {
		return "", TokenInfo{}, fmt.Errorf("acl: issue token for %q: %w", principal, err)
	}
	if !s.shared {
		s.mu.Lock()
		for _, h := range expired {
			delete(s.mu.tokens, h)
		}
		s.mu.tokens[e.hash] = e
		s.mu.Unlock()
	}
	return secret, e.info, nil
}

// expiredTokens lists the hashes of principal's tokens that expired before
// now. It must be called with writeMu held.
func (s *Store) expiredTokens(principal string, now time.Time) [][sha256.Size]byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out [][sha256.Size]byte
	for h, e := range s.mu.tokens {
		if e.info.Principal == principal && !e.info.Expires.IsZero() && e.info.Expires.Before(now) {
			out = append(out, h)
		}
	}
	return out
}

// unusedTokenID must be called with writeMu held.
func (s *Store) unusedTokenID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for {
		id := newID()
		taken := false
		for _, e := range s.mu.tokens {
			if e.info.ID == id {
				taken = true
				break
			}
		}
		if !taken {
			return id
		}
	}
}

func checkLabel(label string) error {
	if len(label) > maxLabelLen || !utf8.ValidString(label) {
		return fmt.Errorf("%w: token label: want at most %d bytes of UTF-8 text", ErrInvalid, maxLabelLen)
	}
	for _, r := range label {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("%w: token label %q: control characters are not allowed", ErrInvalid, label)
		}
	}
	return nil
}

// checkOperatorSecret vets a secret the operator chose. It must survive
// being passed in an HTTP Authorization header, hence printable ASCII
// without spaces.
func checkOperatorSecret(secret string) error {
	if len(secret) < minOperatorSecretLen || len(secret) > maxSecretLen {
		return fmt.Errorf("%w: root token: want %d-%d characters; generate one with e.g. `openssl rand -hex 32`", ErrInvalid, minOperatorSecretLen, maxSecretLen)
	}
	if !printableASCII(secret) {
		return fmt.Errorf("%w: root token: want printable ASCII without spaces", ErrInvalid)
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// ListTokens returns principal's tokens, expired ones included (so that an
// operator can see and revoke them), oldest first.
func (s *Store) ListTokens(principal string) ([]TokenInfo, error) {
	if err := checkPrincipalName(principal); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if _, ok := s.mu.principals[principal]; !ok {
		s.mu.RUnlock()
		return nil, errNoPrincipal(principal)
	}
	var out []TokenInfo
	for _, e := range s.mu.tokens {
		if e.info.Principal == principal {
			out = append(out, e.info)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b TokenInfo) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// RevokeToken deletes principal's token with the given ID. Naming the
// principal guards against revoking someone else's token by a mistyped ID.
func (s *Store) RevokeToken(principal, id string) error {
	if err := checkPrincipalName(principal); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var (
		found bool
		hash  [32]byte
	)
	s.mu.RLock()
	for h, e := range s.mu.tokens {
		if e.info.ID == id && e.info.Principal == principal {
			found, hash = true, h
			break
		}
	}
	s.mu.RUnlock()
	if !found {
		return fmt.Errorf("%w: principal %q has no token %q; list its tokens to find the ID", ErrNotFound, principal, id)
	}
	if err := s.kv.Commit(nil, []string{prefixToken + hex.EncodeToString(hash[:])}); err != nil {
		return fmt.Errorf("acl: revoke token %s of %q: %w", id, principal, err)
	}
	if !s.shared {
		s.mu.Lock()
		delete(s.mu.tokens, hash)
		s.mu.Unlock()
	}
	return nil
}

// Authenticate returns the principal owning the token secret. Unknown,
// revoked, expired and malformed secrets all give an error wrapping
// ErrUnauthenticated. It reads only memory, so heads can call it on every
// request.
func (s *Store) Authenticate(secret string) (Principal, error) {
	if secret == "" {
		return Principal{}, fmt.Errorf("%w: no token given", ErrUnauthenticated)
	}
	if len(secret) > maxSecretLen || !printableASCII(secret) {
		return Principal{}, fmt.Errorf("%w: malformed token: want at most %d printable ASCII characters, as printed when the token was issued", ErrUnauthenticated, maxSecretLen)
	}
	h := hashSecret(secret)
	s.mu.RLock()
	e, ok := s.mu.tokens[h]
	s.mu.RUnlock()
	// The index is keyed by the digest, so the map's variable-time key
	// comparison only reveals how many leading digest bytes of some token
	// a guess shares, which says nothing about any secret. The explicit
	// constant-time check keeps that true should the index ever be keyed by
	// something shorter than the full digest.
	if !ok || subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return Principal{}, fmt.Errorf("%w: unknown or revoked token", ErrUnauthenticated)
	}
	if now := s.now(); e.expired(now) {
		return Principal{}, fmt.Errorf("%w: token %s of principal %q expired at %s; issue a new one",
			ErrUnauthenticated, e.info.ID, e.info.Principal, e.info.Expires.Format(time.RFC3339))
	}
	return Principal{Name: e.info.Principal}, nil
}
