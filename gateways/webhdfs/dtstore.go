package webhdfs

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/silt-io/silt/acl"
)

// TokenStore keeps the delegation tokens the head issued, so that they
// can be checked, renewed and cancelled, and survive a restart. Like the
// acl store's bearer tokens, a token's secret part (the password) is
// stored only as its SHA-256: the password is 32 bytes from crypto/rand,
// so a fast unsalted digest cannot be reversed, and the catalog alone
// does not let anyone use a token. Reads come from memory; every change
// is one durable KV commit before it takes effect.
type TokenStore struct {
	kv acl.KV
	// principal looks up a principal's record; a token outlives neither
	// its owner nor a re-creation of the owner under the same name.
	principal func(name string) (acl.PrincipalInfo, error)

	writeMu sync.Mutex // serializes commits, held across KV I/O
	mu      struct {
		sync.RWMutex
		tokens map[int32]*dtEntry // by sequence number
		next   int32
	}
}

// Key layout in the catalog.
const (
	dtPrefix = "webhdfs/dt/"   // + 10-digit sequence number → dtRecord
	dtSeqKey = "webhdfs/dtseq" // next sequence number, decimal
)

// dtRecord is a stored token. Ident is the identifier exactly as issued:
// a presented token must carry the same bytes, so that no field of it can
// be altered without the password check failing.
type dtRecord struct {
	Ident    []byte `json:"ident"`
	Password []byte `json:"password_sha256"`
	Expiry   int64  `json:"expiry"` // Unix ms; renewal moves it, up to the identifier's maxDate
}

type dtEntry struct {
	rec   dtRecord
	ident tokenIdent
}

// ErrInvalidToken is the error for unknown, cancelled, expired or forged
// delegation tokens: Hadoop's SecretManager.InvalidToken.
var ErrInvalidToken = errors.New("webhdfs: invalid delegation token")

// OpenTokenStore loads the delegation tokens kept in kv. principal, if
// not nil, is asked on every check whether the token's owner still
// exists and was created before the token (acl.Store.GetPrincipal).
// Expired tokens are dropped from kv here and whenever a token is issued.
func OpenTokenStore(kv acl.KV, principal func(name string) (acl.PrincipalInfo, error)) (*TokenStore, error) {
	if kv == nil {
		return nil, errors.New("webhdfs: open token store: nil KV")
	}
	ts := &TokenStore{kv: kv, principal: principal}
	ts.mu.tokens = map[int32]*dtEntry{}
	ts.mu.next = 1
	if b, ok, err := kv.Get([]byte(dtSeqKey)); err != nil {
		return nil, fmt.Errorf("webhdfs: open token store: %w", err)
	} else if ok {
		n, err := strconv.ParseInt(string(b), 10, 32)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("webhdfs: open token store: bad record %s = %q", dtSeqKey, b)
		}
		ts.mu.next = int32(n)
	}
	now := time.Now().UnixMilli()
	var expired []string
	err := kv.Scan([]byte(dtPrefix), nil, func(key, value []byte) error {
		var rec dtRecord
		if err := json.Unmarshal(value, &rec); err != nil {
			return fmt.Errorf("webhdfs: open token store: record %s: %w", key, err)
		}
		id, err := decodeIdent(rec.Ident)
		if err != nil || string(key) != dtKey(id.sequence) || len(rec.Password) != sha256.Size {
			return fmt.Errorf("webhdfs: open token store: record %s is malformed", key)
		}
		if rec.Expiry <= now {
			expired = append(expired, string(key))
			return nil
		}
		ts.mu.tokens[id.sequence] = &dtEntry{rec: rec, ident: id}
		if id.sequence >= ts.mu.next {
			ts.mu.next = id.sequence + 1
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(expired) > 0 {
		if err := kv.DeleteKeys(expired); err != nil {
			return nil, fmt.Errorf("webhdfs: open token store: drop expired tokens: %w", err)
		}
	}
	return ts, nil
}

func dtKey(seq int32) string { return fmt.Sprintf("%s%010d", dtPrefix, seq) }

func passwordHash(pw []byte) []byte { h := sha256.Sum256(pw); return h[:] }

// ErrTooManyTokens refuses a token to a principal that holds its limit of
// live ones.
var ErrTooManyTokens = errors.New("webhdfs: too many delegation tokens")

// issue creates a token for owner that renewer may renew, valid for
// renew (until renewed) and at most maxLife. An owner holding maxPerOwner
// live tokens (0: no limit) gets ErrTooManyTokens: every token is kept in
// memory and the catalog until it lapses, so a job that fetches one per
// task must not grow them without bound.
func (ts *TokenStore) issue(owner, renewer string, now time.Time, renew, maxLife time.Duration, maxPerOwner int) (tokenIdent, []byte, error) {
	ts.writeMu.Lock()
	defer ts.writeMu.Unlock()
	ts.mu.RLock()
	seq := ts.mu.next
	var expired []string
	held := 0
	for s, e := range ts.mu.tokens {
		if e.rec.Expiry <= now.UnixMilli() {
			expired = append(expired, dtKey(s))
		} else if e.ident.owner == owner {
			held++
		}
	}
	ts.mu.RUnlock()
	if maxPerOwner > 0 && held >= maxPerOwner {
		return tokenIdent{}, nil, fmt.Errorf("%w: %s holds %d live delegation tokens, the limit (webhdfs.token_max_per_principal); cancel unused ones (op=CANCELDELEGATIONTOKEN) or let them lapse", ErrTooManyTokens, owner, held)
	}
	if seq == 1<<31-1 {
		return tokenIdent{}, nil, errors.New("webhdfs: delegation token sequence numbers exhausted")
	}
	id := tokenIdent{
		owner: owner, renewer: renewer,
		issueDate: now.UnixMilli(), maxDate: now.Add(maxLife).UnixMilli(),
		sequence: seq,
	}
	pw := make([]byte, 32)
	rand.Read(pw)
	rec := dtRecord{Ident: id.encode(), Password: passwordHash(pw), Expiry: min(id.maxDate, now.Add(renew).UnixMilli())}
	b, _ := json.Marshal(rec)
	set := map[string][]byte{dtKey(seq): b, dtSeqKey: []byte(strconv.Itoa(int(seq) + 1))}
	if err := ts.kv.Commit(set, expired); err != nil {
		return tokenIdent{}, nil, fmt.Errorf("webhdfs: issue delegation token: %w", err)
	}
	ts.mu.Lock()
	for _, k := range expired {
		n, _ := strconv.ParseInt(k[len(dtPrefix):], 10, 32)
		delete(ts.mu.tokens, int32(n))
	}
	ts.mu.tokens[seq] = &dtEntry{rec: rec, ident: id}
	ts.mu.next = seq + 1
	ts.mu.Unlock()
	return id, pw, nil
}

// check verifies a presented token and returns its identifier. Every
// failure wraps ErrInvalidToken with a message in HDFS's words.
func (ts *TokenStore) check(t hadoopToken, now time.Time) (tokenIdent, error) {
	id, err := decodeIdent(t.identifier)
	if err != nil {
		return tokenIdent{}, fmt.Errorf("%w: %v", ErrInvalidToken, err)
	}
	ts.mu.RLock()
	e, ok := ts.mu.tokens[id.sequence]
	var rec dtRecord
	if ok {
		rec = e.rec
	}
	ts.mu.RUnlock()
	// The password is compared even when the identifier differs, and both
	// in constant time, so that timing tells nothing about either.
	pwOK := ok && subtle.ConstantTimeCompare(passwordHash(t.password), rec.Password) == 1
	if !ok || subtle.ConstantTimeCompare(t.identifier, rec.Ident) != 1 || !pwOK {
		return tokenIdent{}, fmt.Errorf("%w: token (%s) can't be found in cache", ErrInvalidToken, id)
	}
	if rec.Expiry <= now.UnixMilli() {
		return tokenIdent{}, fmt.Errorf("%w: token (%s) is expired, current time: %s expected renewal time: %s",
			ErrInvalidToken, id, fmtMillis(now.UnixMilli()), fmtMillis(rec.Expiry))
	}
	if ts.principal != nil {
		p, err := ts.principal(id.owner)
		if err != nil || p.Created.UnixMilli() > id.issueDate {
			return tokenIdent{}, fmt.Errorf("%w: token (%s) belongs to a principal that no longer exists", ErrInvalidToken, id)
		}
	}
	return id, nil
}

func fmtMillis(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05,000+0000")
}

// renew moves the token's expiry to now+interval, but not past its
// maxDate, and returns the new expiry in Unix ms.
func (ts *TokenStore) renew(id tokenIdent, now time.Time, interval time.Duration) (int64, error) {
	ts.writeMu.Lock()
	defer ts.writeMu.Unlock()
	ts.mu.RLock()
	e, ok := ts.mu.tokens[id.sequence]
	ts.mu.RUnlock()
	if !ok {
		return 0, fmt.Errorf("%w: renewal request for unknown token (%s)", ErrInvalidToken, id)
	}
	if id.maxDate <= now.UnixMilli() {
		return 0, fmt.Errorf("%w: tried to renew an expired token (%s) max expiration date: %s", ErrInvalidToken, id, fmtMillis(id.maxDate))
	}
	rec := e.rec
	rec.Expiry = min(id.maxDate, now.Add(interval).UnixMilli())
	b, _ := json.Marshal(rec)
	if err := ts.kv.Commit(map[string][]byte{dtKey(id.sequence): b}, nil); err != nil {
		return 0, fmt.Errorf("webhdfs: renew delegation token: %w", err)
	}
	ts.mu.Lock()
	ts.mu.tokens[id.sequence] = &dtEntry{rec: rec, ident: e.ident}
	ts.mu.Unlock()
	return rec.Expiry, nil
}

// cancel forgets the token for good.
func (ts *TokenStore) cancel(id tokenIdent) error {
	ts.writeMu.Lock()
	defer ts.writeMu.Unlock()
	ts.mu.RLock()
	_, ok := ts.mu.tokens[id.sequence]
	ts.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: token not found (%s)", ErrInvalidToken, id)
	}
	if err := ts.kv.Commit(nil, []string{dtKey(id.sequence)}); err != nil {
		return fmt.Errorf("webhdfs: cancel delegation token: %w", err)
	}
	ts.mu.Lock()
	delete(ts.mu.tokens, id.sequence)
	ts.mu.Unlock()
	return nil
}

// Len reports how many live or not yet pruned tokens the store holds.
func (ts *TokenStore) Len() int {
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	return len(ts.mu.tokens)
}

// TokenInfo describes a live delegation token for an operator; it never
// carries the password.
type TokenInfo struct {
	ID      int32 // the identifier's sequence number
	Owner   string
	Renewer string
	Issued  time.Time
	Expires time.Time // unless renewed before
	MaxDate time.Time // no renewal goes past it
}

// List returns the live tokens, by ID; only owner's unless owner is "".
func (ts *TokenStore) List(owner string, now time.Time) []TokenInfo {
	ts.mu.RLock()
	out := make([]TokenInfo, 0, len(ts.mu.tokens))
	for seq, e := range ts.mu.tokens {
		if e.rec.Expiry <= now.UnixMilli() || owner != "" && e.ident.owner != owner {
			continue
		}
		out = append(out, TokenInfo{
			ID: seq, Owner: e.ident.owner, Renewer: e.ident.renewer,
			Issued:  time.UnixMilli(e.ident.issueDate).UTC(),
			Expires: time.UnixMilli(e.rec.Expiry).UTC(),
			MaxDate: time.UnixMilli(e.ident.maxDate).UTC(),
		})
	}
	ts.mu.RUnlock()
	slices.SortFunc(out, func(a, b TokenInfo) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// CancelID forgets the token with this sequence number, as an operator's
// CANCELDELEGATIONTOKEN: the token itself is not needed, so a leaked one
// can be ended without it. An unknown ID wraps ErrInvalidToken.
func (ts *TokenStore) CancelID(id int32) error {
	ts.mu.RLock()
	e, ok := ts.mu.tokens[id]
	ts.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: no delegation token %d (cancelled, expired or never issued)", ErrInvalidToken, id)
	}
	return ts.cancel(e.ident)
}
