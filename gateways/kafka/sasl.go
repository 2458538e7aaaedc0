package kafka

import (
	"bytes"
	"context"
	"errors"
	"io"
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
	if user, err := c.plain(msg); err != nil {
		c.log.Info("kafka SASL PLAIN authentication failed; closing the connection", zap.String("user", user), zap.Error(err))
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
