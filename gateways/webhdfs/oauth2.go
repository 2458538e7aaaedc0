package webhdfs

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
)

// The OAuth2 token endpoint (RFC 6749 section 4.4, client credentials),
// as Hadoop's ConfCredentialBasedAccessTokenProvider calls it: it POSTs
// grant_type=client_credentials, client_id and client_secret, form-encoded,
// to dfs.webhdfs.oauth2.refresh.url and sends the access_token it gets back
// as "Authorization: Bearer". Here client_id is a silt principal and
// client_secret one of its API tokens; the access token is a new
// short-lived silt token for that principal.
const (
	oauth2Path = "/oauth2/token"
	// OAuth2TokenLabel labels the tokens the endpoint issues, so that
	// operators can tell them apart in `silt token list`.
	OAuth2TokenLabel = "webhdfs-oauth2"
	oauth2TTL        = time.Hour
	maxOAuth2Body    = 64 << 10
)

// TokenIssuer issues a bearer token for principal, labelled label, that
// expires after ttl, and returns its secret: acl.Store.IssueToken.
type TokenIssuer func(principal, label string, ttl time.Duration) (secret string, info acl.TokenInfo, err error)

// issuedTokens remembers the digests of the access tokens this process
// issued until they expire, so that one cannot be used as client_secret:
// otherwise a holder could renew access forever by trading each access
// token for the next, and revoking the API token would not end it.
type issuedTokens struct {
	mu  sync.Mutex
	exp map[[32]byte]time.Time
}

func (t *issuedTokens) add(secret string, exp, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exp == nil {
		t.exp = map[[32]byte]time.Time{}
	}
	for h, e := range t.exp {
		if !now.Before(e) {
			delete(t.exp, h)
		}
	}
	t.exp[sha256.Sum256([]byte(secret))] = exp
}

func (t *issuedTokens) has(secret string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.exp[sha256.Sum256([]byte(secret))]
	return ok && now.Before(e)
}

type oauth2Error struct {
	status      int
	code        string
	description string
}

func (s *Server) serveOAuth2Token(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	tok, oe := s.oauth2Grant(w, r)
	if oe != nil {
		if oe.status == http.StatusMethodNotAllowed {
			h.Set("Allow", http.MethodPost)
		}
		writeJSON(w, oe.status, map[string]string{"error": oe.code, "error_description": oe.description})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok,
		"token_type":   "bearer",
		"expires_in":   int64(oauth2TTL / time.Second),
	})
}

func (s *Server) oauth2Grant(w http.ResponseWriter, r *http.Request) (string, *oauth2Error) {
	if r.Method != http.MethodPost {
		return "", &oauth2Error{http.StatusMethodNotAllowed, "invalid_request", "the token endpoint takes POST"}
	}
	if s.issue == nil {
		return "", &oauth2Error{http.StatusNotFound, "invalid_request", "this server issues no tokens"}
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return "", &oauth2Error{http.StatusBadRequest, "invalid_request", "want a Content-Type: application/x-www-form-urlencoded body"}
	}
	body, err := readBounded(w, r)
	if err != nil {
		return "", &oauth2Error{http.StatusBadRequest, "invalid_request", err.Error()}
	}
	form, err := url.ParseQuery(body)
	if err != nil {
		return "", &oauth2Error{http.StatusBadRequest, "invalid_request", "malformed form body"}
	}
	for k, vs := range form {
		// RFC 6749 section 3.2: parameters must not be repeated.
		if len(vs) > 1 {
			return "", &oauth2Error{http.StatusBadRequest, "invalid_request", "parameter " + k + " is repeated"}
		}
	}
	switch gt := form.Get("grant_type"); gt {
	case "client_credentials":
	case "":
		return "", &oauth2Error{http.StatusBadRequest, "invalid_request", "grant_type is missing"}
	default:
		return "", &oauth2Error{http.StatusBadRequest, "unsupported_grant_type", "only grant_type=client_credentials is supported"}
	}
	id, secret := form.Get("client_id"), form.Get("client_secret")
	if id == "" || secret == "" {
		return "", &oauth2Error{http.StatusUnauthorized, "invalid_client", "client_id (a principal) and client_secret (one of its API tokens) are required"}
	}
	now := s.now()
	invalid := &oauth2Error{http.StatusUnauthorized, "invalid_client", "client_secret is not a valid token of principal client_id"}
	if s.issued.has(secret, now) {
		return "", &oauth2Error{http.StatusUnauthorized, "invalid_client", "client_secret must be an API token, not an access token from this endpoint"}
	}
	p, err := s.authn(secret)
	if err != nil || p.Name != id {
		return "", invalid
	}
	tok, _, err := s.issue(p.Name, OAuth2TokenLabel, oauth2TTL)
	if err != nil {
		s.log.Warn("webhdfs: oauth2: issue token", zap.String("principal", p.Name), zap.Error(err))
		return "", &oauth2Error{http.StatusInternalServerError, "server_error", "could not issue a token; see the server log"}
	}
	s.issued.add(tok, now.Add(oauth2TTL), now)
	return tok, nil
}

// readBounded reads the request body, refusing more than maxOAuth2Body.
func readBounded(w http.ResponseWriter, r *http.Request) (string, error) {
	if r.ContentLength > maxOAuth2Body {
		w.Header().Set("Connection", "close")
		return "", errors.New("request body too large")
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxOAuth2Body))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", errors.New("request body too large")
		}
		return "", errors.New("could not read the request body")
	}
	return string(b), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
