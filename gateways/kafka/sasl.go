package kafka

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// mechanismPlain is SASL PLAIN (RFC 4616): the username is a silt
// principal and the password one of its tokens, as the other heads take
// a bearer token. Send it over TLS: PLAIN shows the token to anyone on
// the path.
const mechanismPlain = "PLAIN"

// mechanismOAuth is SASL OAUTHBEARER (RFC 7628) with a silt token as the
// bearer token: the token names its principal.
const mechanismOAuth = "OAUTHBEARER"

var mechanisms = []string{mechanismPlain, mechanismOAuth}

func handleSaslHandshake(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = mechanisms
	switch {
	case c.authed || c.mechanism != "":
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case !slices.Contains(mechanisms, req.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		c.mechanism = req.Mechanism
		// Version 0 predates SaslAuthenticate: the client sends the
		// mechanism's bytes in a bare frame next (librdkafka does
		// when told v0 is the highest).
		c.rawSASL = req.Version == 0
	}
	return resp, nil
}

// rawAuthenticate reads the bare PLAIN frame that follows a SaslHandshake
// v0 and answers an empty frame on success; on failure the connection
// closes, which is how Kafka tells a v0 client.
func (c *conn) rawAuthenticate(r io.Reader, size int32) bool {
	c.rawSASL = false
	if size > 4096 {
		c.log.Warn("kafka connection closed: SASL PLAIN message over 4 KiB", zap.Int32("size", size))
		return false
	}
	msg := make([]byte, size)
	if _, err := io.ReadFull(r, msg); err != nil {
		return false
	}
	if user, err := c.authenticate(msg); err != nil {
		c.log.Info("kafka SASL authentication failed; closing the connection", zap.String("mechanism", c.mechanism), zap.String("user", user), zap.Error(err))
		return false
	}
	c.authed = true
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.ReadTimeout))
	_, err := c.nc.Write([]byte{0, 0, 0, 0})
	return err == nil
}

func handleSaslAuthenticate(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.authed || c.mechanism == "" {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = message(errors.New("SaslHandshake must come first, once per connection"))
		return resp, nil
	}
	mech := c.mechanism
	user, err := c.authenticate(req.SASLAuthBytes)
	if err != nil {
		// One try per handshake, as Kafka: the client reconnects.
		c.mechanism = ""
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = message(errors.New("authentication failed: PLAIN takes a silt principal and one of its tokens, OAUTHBEARER one of its tokens"))
		c.log.Info("kafka SASL authentication failed", zap.String("mechanism", mech), zap.String("user", user), zap.Error(err))
		return resp, nil
	}
	c.authed = true
	c.log.Debug("kafka client authenticated", zap.String("principal", c.principal.Name))
	return resp, nil
}

// authenticate checks the first (and only) message of the agreed
// mechanism and sets the connection's principal.
func (c *conn) authenticate(msg []byte) (string, error) {
	if c.mechanism == mechanismOAuth {
		return c.oauth(msg)
	}
	return c.plain(msg)
}

// oauth checks an OAUTHBEARER client's first message:
// gs2-header ^A auth=Bearer <token> ^A [key=value ^A]... ^A.
func (c *conn) oauth(msg []byte) (string, error) {
	gs2, rest, ok := strings.Cut(string(msg), "\x01")
	if !ok || !strings.HasPrefix(gs2, "n,") || !strings.HasSuffix(rest, "\x01\x01") {
		return "", errors.New("malformed OAUTHBEARER message")
	}
	authz := strings.TrimSuffix(strings.TrimPrefix(gs2, "n,"), ",")
	authz = strings.TrimPrefix(authz, "a=")
	var token string
	for _, kv := range strings.Split(strings.TrimSuffix(rest, "\x01\x01"), "\x01") {
		if v, ok := strings.CutPrefix(kv, "auth="); ok {
			scheme, tok, ok := strings.Cut(v, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return "", errors.New("OAUTHBEARER auth is not a bearer token")
			}
			token = tok
		}
	}
	if token == "" {
		return "", errors.New("OAUTHBEARER message has no token")
	}
	if c.s.auth.Authn == nil {
		return authz, errors.New("no authenticator configured")
	}
	p, err := c.s.auth.Authn(token)
	if err != nil {
		return authz, err
	}
	if authz != "" && authz != p.Name {
		return authz, errors.New("the token belongs to another principal than the authorization id")
	}
	c.principal = p
	return p.Name, nil
}

// plain checks a PLAIN message: [authzid] NUL authcid NUL passwd.
func (c *conn) plain(msg []byte) (string, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", errors.New("malformed PLAIN message")
	}
	authz, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if authz != "" && authz != user {
		return user, errors.New("authorization id differs from the username")
	}
	if c.s.auth.Authn == nil {
		return user, errors.New("no authenticator configured")
	}
	p, err := c.s.auth.Authn(pass)
	if err != nil {
		return user, err
	}
	if p.Name != user {
		return user, errors.New("the token belongs to another principal")
	}
	c.principal = p
	return user, nil
}
