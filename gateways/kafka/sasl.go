package kafka

import (
	"bytes"
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// mechanismPlain is SASL PLAIN (RFC 4616): the username is a silt
// principal and the password one of its tokens, as the other heads take
// a bearer token. Send it over TLS: PLAIN shows the token to anyone on
// the path.
const mechanismPlain = "PLAIN"

func handleSaslHandshake(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = []string{mechanismPlain}
	switch {
	case c.authed || c.mechanism != "":
		resp.ErrorCode = kerr.IllegalSaslState.Code
	case req.Mechanism != mechanismPlain:
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	default:
		c.mechanism = req.Mechanism
	}
	return resp, nil
}

func handleSaslAuthenticate(_ context.Context, c *conn, kreq kmsg.Request) (kmsg.Response, error) {
	req := kreq.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	if c.authed || c.mechanism != mechanismPlain {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = message(errors.New("SaslHandshake with PLAIN must come first, once per connection"))
		return resp, nil
	}
	user, err := c.plain(req.SASLAuthBytes)
	if err != nil {
		// One try per handshake, as Kafka: the client reconnects.
		c.mechanism = ""
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		resp.ErrorMessage = message(errors.New("authentication failed: the username must be a silt principal and the password one of its tokens"))
		c.log.Info("kafka SASL PLAIN authentication failed", zap.String("user", user), zap.Error(err))
		return resp, nil
	}
	c.authed = true
	c.log.Debug("kafka client authenticated", zap.String("principal", c.principal.Name))
	return resp, nil
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
