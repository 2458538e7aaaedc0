package webhdfs

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"
)

// Delegation tokens, as a NameNode issues them over WebHDFS: a principal
// that authenticated with a silt bearer token asks for one
// (GETDELEGATIONTOKEN), hands it to a job, which then authenticates with
// delegation=<token>; the renewer keeps it alive (RENEWDELEGATIONTOKEN)
// and either party ends it (CANCELDELEGATIONTOKEN). A token acts as its
// owner, so it reads exactly what the owner's grants allow at the time of
// each request.

const invalidTokenClass = "org.apache.hadoop.security.token.SecretManager$InvalidToken"

// ugiHeader starts the message of a NameNode that could not authenticate
// a request (SecurityUtil.FAILED_TO_GET_UGI_MSG_HEADER). Hadoop's client
// looks for it and rebuilds the InvalidToken named after it, which is what
// makes it fetch a new token or report the expired one.
const ugiHeader = "Failed to obtain user group information:"

// errTokenAuth answers a request whose delegation= token is invalid, as
// a NameNode does: 403 SecurityException carrying the InvalidToken.
func errTokenAuth(err error) *remoteError {
	return &remoteError{http.StatusForbidden, "SecurityException", "java.lang.SecurityException",
		ugiHeader + " " + invalidTokenClass + ": " + tokenMessage(err)}
}

// errInvalidToken answers a renewal or cancellation of an invalid token.
func errInvalidToken(err error) *remoteError {
	return &remoteError{http.StatusForbidden, "InvalidToken", invalidTokenClass, tokenMessage(err)}
}

func tokenMessage(err error) string {
	return strings.TrimPrefix(err.Error(), ErrInvalidToken.Error()+": ")
}

// maxTokenField bounds renewer, service and kind.
const maxTokenField = 256

func tokenField(name, v string) error {
	if len(v) > maxTokenField || !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return errArgument(fmt.Sprintf("Invalid value for webhdfs parameter %q: want at most %d printable characters", name, maxTokenField))
	}
	return nil
}

// shortName maps a Kerberos principal (yarn/host@REALM), which Hadoop
// clients may name as renewer, to its first component, as HDFS's default
// auth_to_local rule does; silt principals are plain names.
func shortName(s string) string {
	if i := strings.IndexAny(s, "/@"); i >= 0 {
		return s[:i]
	}
	return s
}

// tokenAuth checks that the caller may obtain, renew or cancel tokens:
// only a bearer token proves who the caller is. A delegation token may
// not mint or extend tokens, or a stolen one would never lapse.
func (h *handler) tokenAuth(verb string) error {
	switch h.how {
	case authBearer:
		return nil
	case authAnonymous:
		return errAuth(fmt.Sprintf("Delegation Token can be %s only with a silt bearer token", verb))
	}
	return errAccess(fmt.Sprintf("Delegation Token can be %s only with a silt bearer token, not with user.name or a delegation token", verb))
}

// delegationToken serves GETDELEGATIONTOKEN. A caller without a bearer
// token, or a head without a token store, gets a null token, as from a
// NameNode without security: Hadoop's client then goes on without one.
func (h *handler) delegationToken() error {
	if h.s.dt == nil || h.how == authAnonymous || h.how == authUserName {
		return h.json(map[string]any{"Token": nil})
	}
	if err := h.tokenAuth("issued"); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"renewer", h.q.renewer}, {"service", h.q.service}, {"kind", h.q.kind}} {
		if err := tokenField(f.name, f.v); err != nil {
			return err
		}
	}
	renewer := shortName(h.q.renewer)
	if renewer == "" {
		renewer = h.principal.Name
	}
	kind := h.q.kind
	if kind == "" {
		kind = kindWebHDFS
		if h.r.TLS != nil {
			kind = kindSWebHDFS
		}
	}
	service := h.q.service
	if service == "" {
		// Hadoop's client replaces the service with its own name for the
		// filesystem; others get the address they reached.
		service = h.r.Host
	}
	id, pw, err := h.s.dt.issue(h.principal.Name, renewer, h.s.now(), h.s.cfg.TokenRenewInterval, h.s.cfg.TokenMaxLifetime, h.s.cfg.TokenMaxPerPrincipal)
	if errors.Is(err, ErrTooManyTokens) {
		// An IOException, which a NameNode sends as 403: Hadoop's client
		// rethrows it with the message.
		return &remoteError{http.StatusForbidden, "IOException", "java.io.IOException", strings.TrimPrefix(err.Error(), "webhdfs: ")}
	}
	if err != nil {
		return err
	}
	h.s.log.Info("webhdfs: issued delegation token", zap.String("owner", id.owner),
		zap.String("renewer", id.renewer), zap.Int32("sequence", id.sequence))
	t := hadoopToken{identifier: id.encode(), password: pw, kind: kind, service: service}
	return h.json(map[string]any{"Token": map[string]string{"urlString": t.encode()}})
}

// presentedToken decodes and checks the token= of a renewal or
// cancellation, and that the caller is its owner or renewer.
func (h *handler) presentedToken(verb, passive string) (tokenIdent, error) {
	if h.s.dt == nil {
		return tokenIdent{}, errArgument("this server issues no delegation tokens")
	}
	if err := h.tokenAuth(passive); err != nil {
		return tokenIdent{}, err
	}
	if h.q.token == "" {
		return tokenIdent{}, errArgument(`missing parameter "token"`)
	}
	t, err := decodeToken(h.q.token)
	if err != nil {
		return tokenIdent{}, errArgument(`Invalid value for webhdfs parameter "token": not a delegation token in Hadoop's URL-safe encoding`)
	}
	id, err := h.s.dt.check(t, h.s.now())
	if err != nil {
		return tokenIdent{}, errInvalidToken(err)
	}
	if me := h.principal.Name; me != id.owner && me != id.renewer {
		return tokenIdent{}, errAccess(fmt.Sprintf("%s is not authorized to %s the token (%s): only its owner or renewer may", me, verb, id))
	}
	return id, nil
}

// renewToken serves RENEWDELEGATIONTOKEN: the new expiry, in ms.
func (h *handler) renewToken() error {
	id, err := h.presentedToken("renew", "renewed")
	if err != nil {
		return err
	}
	exp, err := h.s.dt.renew(id, h.s.now(), h.s.cfg.TokenRenewInterval)
	if errors.Is(err, ErrInvalidToken) {
		return errInvalidToken(err)
	} else if err != nil {
		return err
	}
	return h.json(map[string]int64{"long": exp})
}

// cancelToken serves CANCELDELEGATIONTOKEN: the token is gone for good,
// on this server and after restarts.
func (h *handler) cancelToken() error {
	id, err := h.presentedToken("cancel", "cancelled")
	if err != nil {
		return err
	}
	if err := h.s.dt.cancel(id); errors.Is(err, ErrInvalidToken) {
		return errInvalidToken(err)
	} else if err != nil {
		return err
	}
	h.s.log.Info("webhdfs: cancelled delegation token", zap.String("owner", id.owner),
		zap.String("by", h.principal.Name), zap.Int32("sequence", id.sequence))
	h.w.Header().Set("Content-Type", "application/json")
	h.w.WriteHeader(http.StatusOK)
	return nil
}
