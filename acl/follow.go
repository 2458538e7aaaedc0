package acl

import (
	"encoding/hex"
	"strings"
)

// SharedKV is what a KV changed by other processes too offers
// (*catalog.Catalog on etcd): whether it is shared, and the changes to
// follow. A Store on a shared KV keeps its caches from these changes
// alone, its own included, so that a token revoked or a grant removed
// through another node stops working here as soon as the change arrives.
type SharedKV interface {
	Shared() bool
	Watch(prefix string, fn func(key string, value []byte, present bool)) (stop func())
}

// follow makes the Store's caches follow kv's changes. It is called
// before Open loads them, holding mu, so that no change falls between the
// load and the first notification: a notification waits for the load and
// then reads the key's value anew.
func (s *Store) follow(kv SharedKV) {
	s.shared = true
	s.stopFollow = kv.Watch("acl/", func(key string, _ []byte, _ bool) { s.reload(key) })
}

// reload sets the cache of one record to what the KV holds now. Reading
// the value rather than taking the notification's keeps a reload that
// waited for mu from applying an older value over a newer one: mu orders
// the reads, and the KV only moves forward.
func (s *Store) reload(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	value, present, err := s.kv.Get([]byte(key))
	if err != nil {
		// Only a closed KV fails a Get from memory; nothing to follow.
		return
	}
	switch {
	case strings.HasPrefix(key, prefixPrincipal):
		s.reloadPrincipalLocked(strings.TrimPrefix(key, prefixPrincipal), value, present)
	case strings.HasPrefix(key, prefixGrant):
		s.reloadGrantLocked(strings.TrimPrefix(key, prefixGrant), value, present)
	case strings.HasPrefix(key, prefixToken):
		s.reloadTokenLocked(strings.TrimPrefix(key, prefixToken), value, present)
	}
	// S3 keys are read from the KV on each lookup: nothing cached.
}

func (s *Store) reloadPrincipalLocked(name string, value []byte, present bool) {
	var p PrincipalInfo
	if present && decode([]byte(name), value, &p) == nil && p.Name == name {
		s.mu.principals[name] = p
		return
	}
	// Deleted (or unreadable, which must not leave it usable): its
	// tokens and grants go too, as DeletePrincipal's commit takes them.
	delete(s.mu.principals, name)
	for h, e := range s.mu.tokens {
		if e.info.Principal == name {
			delete(s.mu.tokens, h)
		}
	}
	for _, e := range s.mu.byPrincipal[name] {
		delete(s.mu.grants, e.grant.ID)
	}
	delete(s.mu.byPrincipal, name)
}

func (s *Store) reloadGrantLocked(id string, value []byte, present bool) {
	s.removeGrantLocked(id)
	if !present {
		return
	}
	var g Grant
	if decode([]byte(id), value, &g) != nil || g.ID != id || !g.Action.valid() {
		return
	}
	pat, err := ParseResource(g.Resource)
	if err != nil {
		return
	}
	s.addGrantLocked(&grantEntry{grant: g, pat: pat})
}

func (s *Store) reloadTokenLocked(hexHash string, value []byte, present bool) {
	h, err := hex.DecodeString(hexHash)
	if err != nil || len(h) != 32 {
		return
	}
	hash := [32]byte(h)
	delete(s.mu.tokens, hash)
	if !present {
		return
	}
	var info TokenInfo
	if decode([]byte(hexHash), value, &info) != nil {
		return
	}
	s.mu.tokens[hash] = &tokenEntry{hash: hash, info: info}
}

// Close stops following the KV's changes. A Store on a KV that is not
// shared holds nothing to release.
func (s *Store) Close() {
	if s.stopFollow != nil {
		s.stopFollow()
	}
}
