package acl

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/silt-io/silt/core/names"
)

// KV is the durable key-value store the Store keeps its records in.
// *catalog.Catalog satisfies it. Commit must be atomic and durable when it
// returns; Scan calls fn for every key with the prefix, in key order.
type KV interface {
	Get(key []byte) ([]byte, bool, error)
	Scan(prefix, start []byte, fn func(key, value []byte) error) error
	Commit(set map[string][]byte, del []string) error
	// DeleteKeys removes keys in order, in as many atomic commits as the
	// store needs (catalog.Catalog.DeleteKeys).
	DeleteKeys(keys []string) error
}

// Key layout. Every record is one JSON value under its own key, so that a
// mutation is one atomic Commit of a handful of keys.
const (
	prefixPrincipal = "acl/p/" // + name → PrincipalInfo
	prefixToken     = "acl/t/" // + SHA-256 hex of the secret → TokenInfo
	prefixGrant     = "acl/g/" // + id → Grant
)

// Grant allows Principal to do Action on whatever Resource covers.
type Grant struct {
	ID        string `json:"id"`
	Principal string `json:"principal"`
	Action    Action `json:"action"`
	// Resource is "*", "<tenant>", "<tenant>/<stream>", "<tenant>/<glob>"
	// (path.Match syntax, e.g. "acme/click*") or "<tenant>/set:<set>"
	// (stored canonical: a grant given as the deprecated
	// "<tenant>/group:<set>" is stored as "<tenant>/set:<set>"; grants stored
	// before the rename keep their spelling and still apply).
	Resource string    `json:"resource"`
	Created  time.Time `json:"created"`
}

// PrincipalInfo describes a created principal.
type PrincipalInfo struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

// grantEntry caches a grant with its parsed resource, so that Authorize
// never parses.
type grantEntry struct {
	grant Grant
	pat   Pattern
}

// Store keeps principals, tokens and grants in a KV and answers
// authorization and authentication questions from in-memory copies, so that
// the hot paths (Authorize, Authenticate) never touch the KV. It implements
// Authorizer and is safe for concurrent use.
type Store struct {
	kv     KV
	now    func() time.Time // replaced in tests to expire tokens
	sealer *sealer          // nil: S3 secrets are stored in clear

	// shared: the KV is changed by other nodes too, and the caches in mu
	// follow its changes (follow.go) instead of being set by the
	// mutations below; stopFollow ends that.
	shared     bool
	stopFollow func()

	// What Open did to S3 secrets: how many it found in clear and sealed,
	// and which keys it revoked for WithLostSecretsKey.
	sealedAtOpen  int
	revokedAtOpen []string

	// writeMu serializes mutations, so that what a mutation checked before
	// committing (the principal exists, the grant is new) still holds when
	// its commit lands. It is held across KV I/O, which is why it is not mu:
	// readers never wait for a sync.
	writeMu sync.Mutex

	mu struct {
		sync.RWMutex
		principals  map[string]PrincipalInfo
		tokens      map[[32]byte]*tokenEntry // by SHA-256 of the secret
		grants      map[string]*grantEntry   // by grant ID
		byPrincipal map[string][]*grantEntry // by principal name
	}
}

var _ Authorizer = (*Store)(nil)

// Open loads every principal, token and grant from kv into memory, and
// checks that the S3 secrets in kv open with the secrets key given by
// WithSecretsKey, sealing those stored in clear (see SealedAtOpen). An
// error wrapping ErrSecretsKey means the catalog's sealed secrets need
// another key, or a key where none was given.
//
// Tokens and grants whose principal no longer exists cannot arise from this
// package (DeletePrincipal removes them in the same commit), but if the KV
// was edited by hand they are deleted here rather than kept: otherwise a
// principal created later under the same name would inherit them.
func Open(kv KV, opts ...Option) (*Store, error) {
	if kv == nil {
		return nil, fmt.Errorf("%w: acl: open: nil KV", ErrInvalid)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s := &Store{kv: kv, now: time.Now}
	if o.secretsKey != nil {
		sl, err := newSealer(o.secretsKey)
		if err != nil {
			return nil, err
		}
		s.sealer = sl
	}
	s.mu.principals = make(map[string]PrincipalInfo)
	s.mu.tokens = make(map[[32]byte]*tokenEntry)
	s.mu.grants = make(map[string]*grantEntry)
	s.mu.byPrincipal = make(map[string][]*grantEntry)
	if skv, ok := kv.(SharedKV); ok && skv.Shared() {
		// Held through the load, so that a change notified meanwhile is
		// applied after it (see follow).
		s.mu.Lock()
		s.follow(skv)
	}
	orphans, err := s.load(kv)
	if s.shared {
		s.mu.Unlock()
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	if len(orphans) > 0 {
		if err := kv.DeleteKeys(orphans); err != nil {
			s.Close()
			return nil, fmt.Errorf("acl: open: delete %d records of deleted principals: %w", len(orphans), err)
		}
	}
	if err := s.openS3Secrets(o.lostKeyID); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// load fills the caches from kv and lists the records of deleted
// principals (see Open).
func (s *Store) load(kv KV) (orphans []string, err error) {
	err = kv.Scan([]byte(prefixPrincipal), nil, func(key, value []byte) error {
		var p PrincipalInfo
		if err := decode(key, value, &p); err != nil {
			return err
		}
		if prefixPrincipal+p.Name != string(key) {
			return fmt.Errorf("acl: open: record %s names principal %q", key, p.Name)
		}
		s.mu.principals[p.Name] = p
		return nil
	})
	if err != nil {
		return nil, err
	}

	known := func(principal string) bool {
		_, ok := s.mu.principals[principal]
		return ok
	}
	err = kv.Scan([]byte(prefixGrant), nil, func(key, value []byte) error {
		var g Grant
		if err := decode(key, value, &g); err != nil {
			return err
		}
		if prefixGrant+g.ID != string(key) {
			return fmt.Errorf("acl: open: record %s holds grant %q", key, g.ID)
		}
		pat, err := ParseResource(g.Resource)
		if err != nil {
			return fmt.Errorf("acl: open: grant %s: %w", g.ID, err)
		}
		if !g.Action.valid() {
			return fmt.Errorf("acl: open: grant %s: %w: action %q", g.ID, ErrInvalid, g.Action)
		}
		if g.Principal != Anonymous.Name && !known(g.Principal) {
			orphans = append(orphans, string(key))
			return nil
		}
		s.addGrantLocked(&grantEntry{grant: g, pat: pat})
		return nil
	})
	if err != nil {
		return nil, err
	}

	err = kv.Scan([]byte(prefixToken), nil, func(key, value []byte) error {
		var info TokenInfo
		if err := decode(key, value, &info); err != nil {
			return err
		}
		h, err := hex.DecodeString(strings.TrimPrefix(string(key), prefixToken))
		if err != nil || len(h) != 32 {
			return fmt.Errorf("acl: open: token record %s: key is not a SHA-256 hex digest", key)
		}
		if !known(info.Principal) {
			orphans = append(orphans, string(key))
			return nil
		}
		e := &tokenEntry{info: info}
		copy(e.hash[:], h)
		s.mu.tokens[e.hash] = e
		return nil
	})
	if err != nil {
		return nil, err
	}

	return orphans, nil
}

// SealedAtOpen reports how many S3 secrets Open found stored in clear and
// sealed.
func (s *Store) SealedAtOpen() int { return s.sealedAtOpen }

// RevokedAtOpen returns the access key IDs Open revoked because their
// secrets were sealed with the key named by WithLostSecretsKey.
func (s *Store) RevokedAtOpen() []string { return s.revokedAtOpen }

func decode(key, value []byte, v any) error {
	if err := json.Unmarshal(value, v); err != nil {
		return fmt.Errorf("acl: open: record %s: %w", key, err)
	}
	return nil
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Only plain strings and times are encoded; failure is a bug.
		panic(fmt.Sprintf("acl: encode %T: %v", v, err))
	}
	return b
}

// newID returns a short random identifier for a grant or token: long
// enough not to collide in practice (callers still check), short enough to
// type in a CLI.
func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (s *Store) timestamp() time.Time { return s.now().UTC() }

// CreatePrincipal creates a principal with no grants and no tokens.
func (s *Store) CreatePrincipal(name string) (PrincipalInfo, error) {
	if err := checkPrincipalName(name); err != nil {
		return PrincipalInfo{}, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, ok := s.lookupPrincipal(name); ok {
		return PrincipalInfo{}, fmt.Errorf("%w: principal %q", ErrExists, name)
	}
	info := PrincipalInfo{Name: name, Created: s.timestamp()}
	if err := s.kv.Commit(map[string][]byte{prefixPrincipal + name: encode(info)}, nil); err != nil {
		return PrincipalInfo{}, fmt.Errorf("acl: create principal %q: %w", name, err)
	}
	if !s.shared {
		s.mu.Lock()
		s.mu.principals[name] = info
		s.mu.Unlock()
	}
	return info, nil
}

func (s *Store) lookupPrincipal(name string) (PrincipalInfo, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.mu.principals[name]
	return p, ok
}

// errNoPrincipal explains a missing principal; anonymous is never stored,
// which deserves its own explanation.
func errNoPrincipal(name string) error {
	if name == Anonymous.Name {
		return fmt.Errorf("%w: principal %q is built in for unauthenticated requests and cannot be created, deleted or hold tokens", ErrNotFound, name)
	}
	return fmt.Errorf("%w: principal %q does not exist; create it first", ErrNotFound, name)
}

// GetPrincipal returns a created principal. Anonymous is built in, not
// created, so it is reported as not found.
func (s *Store) GetPrincipal(name string) (PrincipalInfo, error) {
	if err := checkGrantee(name); err != nil {
		return PrincipalInfo{}, err
	}
	p, ok := s.lookupPrincipal(name)
	if !ok {
		return PrincipalInfo{}, errNoPrincipal(name)
	}
	return p, nil
}

// ListPrincipals returns every created principal, sorted by name.
func (s *Store) ListPrincipals() ([]PrincipalInfo, error) {
	s.mu.RLock()
	out := make([]PrincipalInfo, 0, len(s.mu.principals))
	for _, p := range s.mu.principals {
		out = append(out, p)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b PrincipalInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeletePrincipal deletes a principal together with its tokens, S3 keys
// and grants: in one commit when the catalog takes them at once (always on
// pebble), otherwise credentials first and the principal's record last, so
// that no credential or grant outlives it; after a failure part-way the
// principal is still there and deleting it again finishes.
func (s *Store) DeletePrincipal(name string) error {
	if err := checkPrincipalName(name); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, ok := s.lookupPrincipal(name); !ok {
		return errNoPrincipal(name)
	}
	var del []string
	var hashes [][32]byte
	s.mu.RLock()
	for h, e := range s.mu.tokens {
		if e.info.Principal == name {
			hashes = append(hashes, h)
			del = append(del, prefixToken+hex.EncodeToString(h[:]))
		}
	}
	grants := slices.Clone(s.mu.byPrincipal[name])
	for _, e := range grants {
		del = append(del, prefixGrant+e.grant.ID)
	}
	s.mu.RUnlock()
	// Its S3 keys go too: they would be refused anyway (a key names its
	// principal's creation time), but their secrets must not outlive it.
	err := s.kv.Scan([]byte(prefixS3Key), nil, func(key, value []byte) error {
		var rec s3KeyRecord
		if err := decode(key, value, &rec); err != nil {
			return err
		}
		if rec.Principal == name {
			del = append(del, string(key))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("acl: delete principal %q: %w", name, err)
	}
	del = append(del, prefixPrincipal+name)
	if err := s.kv.DeleteKeys(del); err != nil {
		return fmt.Errorf("acl: delete principal %q: %w", name, err)
	}
	if !s.shared {
		s.mu.Lock()
		delete(s.mu.principals, name)
		for _, h := range hashes {
			delete(s.mu.tokens, h)
		}
		for _, e := range grants {
			s.removeGrantLocked(e.grant.ID)
		}
		s.mu.Unlock()
	}
	return nil
}

// AddGrant allows principal to do a on resource. The principal must exist,
// except Anonymous, which is built in. Adding a grant identical (principal,
// action, resource) to an existing one returns the existing grant with an
// error wrapping ErrExists, so callers can treat it as done.
func (s *Store) AddGrant(principal string, a Action, resource string) (Grant, error) {
	if err := checkGrantee(principal); err != nil {
		return Grant{}, err
	}
	if !a.valid() {
		return Grant{}, fmt.Errorf("%w: action %q: want read, append or admin", ErrInvalid, a)
	}
	pat, err := ParseResource(resource)
	if err != nil {
		return Grant{}, err
	}
	// Store the canonical spelling, so that a grant given with the
	// deprecated "group:" prefix reads back (and is found again) as "set:".
	resource = pat.String()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if principal != Anonymous.Name {
		if _, ok := s.lookupPrincipal(principal); !ok {
			return Grant{}, errNoPrincipal(principal)
		}
	}
	if g, ok := s.findGrant(principal, a, resource); ok {
		return g, fmt.Errorf("%w: principal %q already holds %s on %q (grant %s)", ErrExists, principal, a, resource, g.ID)
	}
	g := Grant{ID: s.unusedGrantID(), Principal: principal, Action: a, Resource: resource, Created: s.timestamp()}
	if err := s.kv.Commit(map[string][]byte{prefixGrant + g.ID: encode(g)}, nil); err != nil {
		return Grant{}, fmt.Errorf("acl: add grant of %s on %q to %q: %w", a, resource, principal, err)
	}
	if !s.shared {
		s.mu.Lock()
		s.addGrantLocked(&grantEntry{grant: g, pat: pat})
		s.mu.Unlock()
	}
	return g, nil
}

func (s *Store) findGrant(principal string, a Action, resource string) (Grant, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.mu.byPrincipal[principal] {
		// Compare parsed patterns: a grant stored before the rename as
		// "t/group:s" is the same grant as "t/set:s".
		if e.grant.Action == a && e.pat.String() == resource {
			return e.grant, true
		}
	}
	return Grant{}, false
}

// unusedGrantID must be called with writeMu held, so that the ID is still
// unused when the grant is committed.
func (s *Store) unusedGrantID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for {
		id := newID()
		if _, taken := s.mu.grants[id]; !taken {
			return id
		}
	}
}

func (s *Store) addGrantLocked(e *grantEntry) {
	s.mu.grants[e.grant.ID] = e
	p := e.grant.Principal
	s.mu.byPrincipal[p] = append(s.mu.byPrincipal[p], e)
}

func (s *Store) removeGrantLocked(id string) {
	e, ok := s.mu.grants[id]
	if !ok {
		return
	}
	delete(s.mu.grants, id)
	p := e.grant.Principal
	rest := slices.DeleteFunc(s.mu.byPrincipal[p], func(x *grantEntry) bool { return x.grant.ID == id })
	if len(rest) == 0 {
		delete(s.mu.byPrincipal, p)
	} else {
		s.mu.byPrincipal[p] = rest
	}
}

// RemoveGrant deletes the grant with the given ID.
func (s *Store) RemoveGrant(id string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	_, ok := s.mu.grants[id]
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: grant %q; list grants to find its ID", ErrNotFound, id)
	}
	if err := s.kv.Commit(nil, []string{prefixGrant + id}); err != nil {
		return fmt.Errorf("acl: remove grant %s: %w", id, err)
	}
	if !s.shared {
		s.mu.Lock()
		s.removeGrantLocked(id)
		s.mu.Unlock()
	}
	return nil
}

// ListGrants returns the grants of principal, or of everyone when principal
// is "", sorted by principal, then resource, then action.
func (s *Store) ListGrants(principal string) ([]Grant, error) {
	if principal != "" {
		if err := checkGrantee(principal); err != nil {
			return nil, err
		}
	}
	s.mu.RLock()
	var out []Grant
	if principal == "" {
		out = make([]Grant, 0, len(s.mu.grants))
		for _, e := range s.mu.grants {
			out = append(out, e.grant)
		}
	} else {
		_, known := s.mu.principals[principal]
		if !known && principal != Anonymous.Name {
			s.mu.RUnlock()
			return nil, errNoPrincipal(principal)
		}
		out = make([]Grant, 0, len(s.mu.byPrincipal[principal]))
		for _, e := range s.mu.byPrincipal[principal] {
			out = append(out, e.grant)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b Grant) int {
		return cmp.Or(
			strings.Compare(a.Principal, b.Principal),
			strings.Compare(a.Resource, b.Resource),
			strings.Compare(string(a.Action), string(b.Action)),
			strings.Compare(a.ID, b.ID),
		)
	})
	return out, nil
}

// Covers reports whether one of p's grants allows a on r: the grant's
// action is a or admin, and its resource pattern matches r. It does not
// apply the tenant-listing rule; listings use it to filter what they show.
func (s *Store) Covers(p Principal, a Action, r Resource) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.coversLocked(p, a, r)
}

func (s *Store) coversLocked(p Principal, a Action, r Resource) bool {
	return s.grantsCoverLocked(p, a, r) || s.systemCoversLocked(p, a, r)
}

// systemCoversLocked is the rule of the system tenant's streams: reading a
// tenant's own system stream ("<tenant>.<kind>", the introspection events
// of that tenant) is allowed to whoever holds admin on the tenant itself.
// No grant is made for it, so it follows the admin grant as it comes and
// goes.
func (s *Store) systemCoversLocked(p Principal, a Action, r Resource) bool {
	if a != Read || r.Tenant != names.SystemTenant || r.Stream == "" {
		return false
	}
	t := names.SystemStreamTenant(r.Stream)
	return t != "" && s.grantsCoverLocked(p, Admin, Resource{Tenant: t})
}

// adminTenantsLocked are the tenants p holds admin on as a whole, whose
// system streams it may read.
func (s *Store) adminTenantsLocked(p Principal) []string {
	var out []string
	for _, e := range s.mu.byPrincipal[p.Name] {
		if e.pat.Kind == PatternTenant && e.grant.Action == Admin && e.pat.Tenant != names.SystemTenant {
			out = append(out, e.pat.Tenant)
		}
	}
	return out
}

func (s *Store) grantsCoverLocked(p Principal, a Action, r Resource) bool {
	for _, e := range s.mu.byPrincipal[p.Name] {
		if e.grant.Action.implies(a) && e.pat.Matches(r) {
			return true
		}
	}
	return false
}

// Visible reports whether p holds any grant, of any action, inside tenant
// (including "*"). Listings of tenants show exactly the visible ones.
func (s *Store) Visible(p Principal, tenant string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.visibleLocked(p, tenant)
}

func (s *Store) visibleLocked(p Principal, tenant string) bool {
	for _, e := range s.mu.byPrincipal[p.Name] {
		if e.pat.Touches(tenant) {
			return true
		}
	}
	// A tenant admin can list the system tenant to find its own streams.
	return tenant == names.SystemTenant && len(s.adminTenantsLocked(p)) > 0
}

// Authorize allows a on r when Covers does, and also allows reading a tenant
// itself to anyone for whom the tenant is Visible (the tenant-listing rule:
// a principal granted one stream must be able to list the tenant to find
// it). Otherwise it returns an error wrapping ErrDenied.
func (s *Store) Authorize(p Principal, a Action, r Resource) error {
	s.mu.RLock()
	ok := s.coversLocked(p, a, r) ||
		(a == Read && r.Tenant != "" && r.Stream == "" && s.visibleLocked(p, r.Tenant))
	s.mu.RUnlock()
	if ok {
		return nil
	}
	return deny(p, a, r)
}

// EnsureRoot bootstraps a server: it makes sure principal name exists and
// holds admin on "*", and, when secret is not empty, that a token with
// exactly that secret exists for it (an operator-supplied root token, e.g.
// from a secret store). It is idempotent; created reports whether the
// principal had to be created. A secret that is already a token of another
// principal is refused rather than silently moved.
func (s *Store) EnsureRoot(name, secret string) (created bool, err error) {
	if err := checkPrincipalName(name); err != nil {
		return false, err
	}
	if secret != "" {
		if err := checkOperatorSecret(secret); err != nil {
			return false, err
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	set := make(map[string][]byte)
	now := s.timestamp()
	info, exists := s.lookupPrincipal(name)
	if !exists {
		info = PrincipalInfo{Name: name, Created: now}
		set[prefixPrincipal+name] = encode(info)
	}
	var grant *grantEntry
	if _, ok := s.findGrant(name, Admin, "*"); !ok {
		g := Grant{ID: s.unusedGrantID(), Principal: name, Action: Admin, Resource: "*", Created: now}
		grant = &grantEntry{grant: g, pat: Pattern{Kind: PatternAll}}
		set[prefixGrant+g.ID] = encode(g)
	}
	var token *tokenEntry
	if secret != "" {
		h := hashSecret(secret)
		s.mu.RLock()
		old, ok := s.mu.tokens[h]
		s.mu.RUnlock()
		switch {
		case ok && old.info.Principal != name:
			return false, fmt.Errorf("%w: the root secret is already token %s of principal %q; revoke it or choose another secret", ErrExists, old.info.ID, old.info.Principal)
		case !ok:
			token = &tokenEntry{hash: h, info: TokenInfo{
				ID: s.unusedTokenID(), Principal: name, Label: rootTokenLabel, Created: now,
			}}
			set[prefixToken+hex.EncodeToString(h[:])] = encode(token.info)
		}
	}
	if len(set) == 0 {
		return false, nil
	}
	if err := s.kv.Commit(set, nil); err != nil {
		return false, fmt.Errorf("acl: ensure root principal %q: %w", name, err)
	}
	if !s.shared {
		s.mu.Lock()
		s.mu.principals[name] = info
		if grant != nil {
			s.addGrantLocked(grant)
		}
		if token != nil {
			s.mu.tokens[token.hash] = token
		}
		s.mu.Unlock()
	}
	return !exists, nil
}
