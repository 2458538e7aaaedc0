package kafka

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/internal/connlimit"
)

// Config configures the Kafka head.
type Config struct {
	// Listen is where Kafka clients connect. Kafka's own default port is
	// 9092; silt takes it on loopback like its other heads.
	Listen string `koanf:"listen" help:"address the Kafka head listens on"`
	// Advertise is the host:port this broker names in Metadata answers,
	// which clients connect to for every partition. Empty: the listener's
	// own address, which is right unless the head listens on 0.0.0.0 or
	// behind a proxy.
	Advertise string `koanf:"advertise" help:"host:port named as this broker in Metadata answers (empty: the listening address)"`
	// DefaultTenant lets a topic without a dot name a stream of this
	// tenant ("clicks" is "<default_tenant>.clicks"); empty: every
	// topic must be "<tenant>.<stream>".
	DefaultTenant string `koanf:"default_tenant" help:"tenant of topic names without a dot (empty: topics must be <tenant>.<stream>)"`
	// AllowAnonymous serves clients that do not authenticate with SASL as
	// the anonymous principal, which may do only what it was granted.
	// Off, such a client may only ask for ApiVersions and SASL.
	AllowAnonymous bool `koanf:"allow_anonymous" help:"serve clients without SASL as the anonymous principal (which has only the grants given to it)"`
	// MaxRequestBytes bounds one request, checked from its 4-byte length
	// before the body is read (Kafka's socket.request.max.bytes).
	MaxRequestBytes int `koanf:"max_request_bytes" help:"largest request accepted, in bytes; a larger one closes the connection before its body is read"`
	// MaxInflightBytes bounds the request bodies all connections hold in
	// memory at once; past it the head reads no more requests until
	// some are answered, so a burst of producers slows down rather than
	// exhausting memory.
	MaxInflightBytes int64 `koanf:"max_inflight_bytes" help:"request bytes held in memory at once across connections; past it new requests wait"`
	// MaxWait caps a Fetch's max_wait_ms long-poll.
	MaxWait time.Duration `koanf:"max_wait" help:"longest long-poll a Fetch may ask for"`
	// IdleTimeout closes a connection that has sent no request for this
	// long (Kafka's connections.max.idle.ms, 10 minutes); clients
	// reconnect transparently.
	IdleTimeout time.Duration `koanf:"idle_timeout" help:"close a connection after this long without a request"`
	// ReadTimeout bounds reading one request once its length has arrived.
	ReadTimeout time.Duration `koanf:"read_timeout" help:"longest time to read one request once its first bytes are in"`
	// Caps bound the head's connections (silt serve applies them; see
	// internal/connlimit).
	connlimit.Caps
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Listen:           "127.0.0.1:9092",
		MaxRequestBytes:  16 << 20,
		MaxInflightBytes: 64 << 20,
		MaxWait:          30 * time.Second,
		IdleTimeout:      10 * time.Minute,
		ReadTimeout:      30 * time.Second,
	}
}

// Validate reports the first problem with c.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("kafka: listen %q: want host:port: %w", c.Listen, err)
	}
	if c.Advertise != "" {
		_, port, err := net.SplitHostPort(c.Advertise)
		if err != nil {
			return fmt.Errorf("kafka: advertise %q: want host:port: %w", c.Advertise, err)
		}
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return fmt.Errorf("kafka: advertise %q: port must be 1..65535", c.Advertise)
		}
	}
	if c.DefaultTenant != "" {
		if err := names.Tenant(c.DefaultTenant); err != nil {
			return fmt.Errorf("kafka: default_tenant: %w", err)
		}
	}
	// A request must at least hold a header; Kafka's own ceiling is
	// 100 MiB, and one request is held whole in memory.
	if c.MaxRequestBytes < 1024 || c.MaxRequestBytes > 1<<30 {
		return fmt.Errorf("kafka: max_request_bytes %d: want 1024..%d", c.MaxRequestBytes, 1<<30)
	}
	if c.MaxInflightBytes < int64(c.MaxRequestBytes) {
		return fmt.Errorf("kafka: max_inflight_bytes %d must be at least max_request_bytes %d", c.MaxInflightBytes, c.MaxRequestBytes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"max_wait", c.MaxWait}, {"idle_timeout", c.IdleTimeout}, {"read_timeout", c.ReadTimeout}} {
		if d.v <= 0 {
			return fmt.Errorf("kafka: %s must be positive, got %v", d.name, d.v)
		}
	}
	return c.Caps.Check("kafka")
}
