package webhdfs

import (
	"fmt"
	"net"
	"time"

	"github.com/silt-io/silt/internal/connlimit"
)

// Config configures the WebHDFS head.
type Config struct {
	Listen string `koanf:"listen" help:"address the WebHDFS head listens on (Hadoop's default NameNode HTTP port is 9870)"`
	// Caps bound the head's connections (silt serve applies them; see
	// internal/connlimit).
	connlimit.Caps
	// InsecureUserName accepts Hadoop's "simple" authentication, where the
	// client names itself with user.name=. Anyone can claim any name, so it
	// is off unless the operator asks for it.
	InsecureUserName bool `koanf:"insecure_user_name" help:"INSECURE: let user.name=<principal> act as that principal without a credential"`
	// BlockSize is the HDFS block size reported to clients. It shapes how
	// Hadoop and Spark split files into tasks, and GETFILECHECKSUM divides
	// files into blocks of this size as HDFS would.
	BlockSize int64 `koanf:"block_size" help:"block size reported to Hadoop clients, in bytes (a multiple of 512)"`
	// RedirectTTL is how long the signed data URL that OPEN redirects to
	// stays valid. Hadoop re-requests it on every seek, so it must outlast
	// the longest read of one file.
	RedirectTTL time.Duration `koanf:"redirect_ttl" help:"lifetime of the signed data URLs OPEN redirects to"`
	// TokenRenewInterval and TokenMaxLifetime bound delegation tokens as
	// HDFS's dfs.namenode.delegation.token.renew-interval and
	// max-lifetime do: a token lapses unless renewed within the interval,
	// and no renewal takes it past the lifetime.
	TokenRenewInterval time.Duration `koanf:"token_renew_interval" help:"a delegation token expires unless renewed within this interval"`
	TokenMaxLifetime   time.Duration `koanf:"token_max_lifetime" help:"no renewal extends a delegation token past this lifetime from its issue"`
	// TokenMaxPerPrincipal bounds the live delegation tokens one
	// principal holds; each is kept until it lapses or is cancelled.
	TokenMaxPerPrincipal int `koanf:"token_max_per_principal" help:"live delegation tokens one principal may hold (0: no limit); beyond it GETDELEGATIONTOKEN is refused"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{Listen: "127.0.0.1:9870", BlockSize: 134217728, RedirectTTL: time.Hour,
		TokenRenewInterval: 24 * time.Hour, TokenMaxLifetime: 7 * 24 * time.Hour, TokenMaxPerPrincipal: 10000}
}

// Validate checks the config.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("webhdfs: listen %q: %w", c.Listen, err)
	}
	if err := c.Caps.Check("webhdfs"); err != nil {
		return err
	}
	// HDFS requires the block size to be a multiple of bytes-per-checksum,
	// and GETFILECHECKSUM relies on it.
	if c.BlockSize < bytesPerCRC || c.BlockSize%bytesPerCRC != 0 {
		return fmt.Errorf("webhdfs: block_size %d: want a positive multiple of %d", c.BlockSize, bytesPerCRC)
	}
	if c.RedirectTTL <= 0 {
		return fmt.Errorf("webhdfs: redirect_ttl must be positive")
	}
	// Identifiers carry dates in milliseconds; below that a token would
	// be born expired.
	if c.TokenRenewInterval < time.Millisecond || c.TokenMaxLifetime < time.Millisecond {
		return fmt.Errorf("webhdfs: token_renew_interval and token_max_lifetime must be at least 1ms")
	}
	if c.TokenMaxPerPrincipal < 0 {
		return fmt.Errorf("webhdfs: token_max_per_principal must not be negative (0 means no limit)")
	}
	return nil
}
