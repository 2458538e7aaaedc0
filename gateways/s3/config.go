package s3

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/silt-io/silt/internal/connlimit"
)

// Config configures the S3 head.
type Config struct {
	Listen string `koanf:"listen" help:"address the S3 head listens on"`
	// Caps bound the head's connections (silt serve applies them; see
	// internal/connlimit).
	connlimit.Caps
	// Region is what GetBucketLocation reports. Signatures scoped to any
	// region are accepted: the secret, not the region, is what proves
	// identity, and clients disagree on the region of a custom endpoint.
	Region string `koanf:"region" help:"S3 region reported to clients"`
	// MaxSkew bounds the difference between a signed request's date and
	// the server clock, limiting how long a captured request can be
	// replayed.
	MaxSkew time.Duration `koanf:"max_skew" help:"largest accepted clock difference of a signed request"`
	// Domain turns on virtual-host addressing: a request for
	// "<bucket>.<domain>" addresses bucket. Path-style always works; the
	// domain must be configured because the head cannot tell a bucket
	// label from the rest of an arbitrary host name.
	Domain string `koanf:"domain" help:"domain for virtual-host-style bucket addressing (<bucket>.<domain>); empty: path-style only"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:9000", Region: "us-east-1", MaxSkew: 15 * time.Minute}
}

// Validate checks the config.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("s3: listen %q: %w", c.Listen, err)
	}
	if err := c.Caps.Check("s3"); err != nil {
		return err
	}
	if c.Region == "" {
		return fmt.Errorf("s3: region must not be empty")
	}
	if strings.HasPrefix(c.Domain, ".") || strings.ContainsAny(c.Domain, ":/ ") {
		return fmt.Errorf("s3: domain %q: want a host name such as s3.example.com, without port or leading dot", c.Domain)
	}
	if c.MaxSkew <= 0 {
		return fmt.Errorf("s3: max_skew must be positive")
	}
	return nil
}
