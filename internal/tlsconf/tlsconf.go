// Package tlsconf is the single TLS configuration shared by every HTTP head,
// so that certificates, client authentication and minimum versions are set
// once in the `tls` block and behave identically on every listener.
//
// The server certificate is re-read from disk when its files change, so
// operators (or cert-manager) can rotate it without a restart. The client CA
// bundle is read once, when ServerConfig is called.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the `tls` block. TLS is off unless both CertFile and KeyFile
// are set.
type Config struct {
	CertFile     string `koanf:"cert_file" help:"PEM server certificate chain; TLS is enabled when this and key_file are set."`
	KeyFile      string `koanf:"key_file" help:"PEM private key for cert_file."`
	ClientCAFile string `koanf:"client_ca_file" help:"PEM CA bundle; when set, clients must present a certificate signed by it."`
	MinVersion   string `koanf:"min_version" help:"Lowest TLS version accepted: 1.2 or 1.3."`
}

// DefaultConfig has TLS disabled and allows TLS 1.2, which some
// still-common clients need.
func DefaultConfig() Config {
	return Config{MinVersion: "1.2"}
}

// Enabled reports whether the heads should serve TLS.
func (c Config) Enabled() bool {
	return c.CertFile != "" && c.KeyFile != ""
}

// Validate checks the settings and that the named files are readable, so
// that a typo in a path fails at startup rather than at the first handshake.
func (c Config) Validate() error {
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("tls: cert_file and key_file must be set together")
	}
	if c.ClientCAFile != "" && !c.Enabled() {
		return errors.New("tls: client_ca_file needs cert_file and key_file")
	}
	if _, err := c.minVersion(); err != nil {
		return err
	}
	for _, p := range []struct{ key, path string }{
		{"cert_file", c.CertFile},
		{"key_file", c.KeyFile},
		{"client_ca_file", c.ClientCAFile},
	} {
		if p.path == "" {
			continue
		}
		f, err := os.Open(p.path)
		if err != nil {
			return fmt.Errorf("tls: %s: %w", p.key, err)
		}
		f.Close()
	}
	return nil
}

// minVersion treats "" as the default so a zero Config is usable.
func (c Config) minVersion() (uint16, error) {
	switch c.MinVersion {
	case "", "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("tls: min_version %q: want 1.2 or 1.3", c.MinVersion)
}

// reloadInterval bounds how often a handshake stats the certificate files.
const reloadInterval = 5 * time.Second

// ServerConfig returns a server-side tls.Config serving CertFile/KeyFile,
// re-reading them at most every few seconds when their size or modification
// time changes. It fails if the files cannot be loaded now; a later failed
// reload (say, a half-written rotation) keeps the previous certificate and
// is retried on a later handshake.
func (c Config) ServerConfig() (*tls.Config, error) {
	return c.serverConfig(reloadInterval, time.Now)
}

func (c Config) serverConfig(interval time.Duration, now func() time.Time) (*tls.Config, error) {
	if !c.Enabled() {
		return nil, errors.New("tls: cert_file and key_file are not set")
	}
	minVer, err := c.minVersion()
	if err != nil {
		return nil, err
	}
	r := &reloader{certFile: c.CertFile, keyFile: c.KeyFile, interval: interval, now: now}
	if err := r.load(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{
		MinVersion:     minVer,
		GetCertificate: r.getCertificate,
	}
	if c.ClientCAFile != "" {
		pool, err := loadPool(x509.NewCertPool(), c.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("tls: client_ca_file: %w", err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig is for the CLI and SDK: it trusts the system roots plus, if
// caFile is set, the CAs in it (a private or dev CA). insecureSkipVerify
// disables verification entirely and is meant for throwaway testing only.
func ClientConfig(caFile string, insecureSkipVerify bool) (*tls.Config, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		// No system roots (minimal containers, some platforms): fall back
		// to trusting caFile alone rather than failing.
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		if pool, err = loadPool(pool, caFile); err != nil {
			return nil, fmt.Errorf("tls: ca file: %w", err)
		}
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            pool,
		InsecureSkipVerify: insecureSkipVerify,
	}, nil
}

func loadPool(pool *x509.CertPool, path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificates found", path)
	}
	return pool, nil
}

// fileStamp identifies a version of a file cheaply. Size is included because
// some filesystems have coarse mtimes and a rotation can land in the same tick.
type fileStamp struct {
	mod  time.Time
	size int64
}

func (s fileStamp) equal(o fileStamp) bool {
	return s.mod.Equal(o.mod) && s.size == o.size
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size()}, nil
}

// reloader serves the current certificate from an atomic pointer so that
// handshakes never wait on disk I/O done by another handshake.
type reloader struct {
	certFile, keyFile string
	interval          time.Duration
	now               func() time.Time

	cert atomic.Pointer[tls.Certificate]

	mu struct {
		sync.Mutex
		lastCheck           time.Time
		certStamp, keyStamp fileStamp
	}
}

func (r *reloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.maybeReload()
	return r.cert.Load(), nil
}

// load reads the pair unconditionally; it is used once at startup.
func (r *reloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs, ks, err := r.stamps()
	if err != nil {
		return err
	}
	return r.loadLocked(cs, ks)
}

func (r *reloader) maybeReload() {
	// One handshake checks; concurrent ones carry on with the current cert.
	if !r.mu.TryLock() {
		return
	}
	defer r.mu.Unlock()
	now := r.now()
	if now.Sub(r.mu.lastCheck) < r.interval {
		return
	}
	r.mu.lastCheck = now
	cs, ks, err := r.stamps()
	if err != nil || (cs.equal(r.mu.certStamp) && ks.equal(r.mu.keyStamp)) {
		return
	}
	// On failure the stamps stay old, so the next check tries again.
	_ = r.loadLocked(cs, ks)
}

func (r *reloader) stamps() (cert, key fileStamp, err error) {
	if cert, err = stampOf(r.certFile); err != nil {
		return cert, key, fmt.Errorf("tls: cert_file: %w", err)
	}
	if key, err = stampOf(r.keyFile); err != nil {
		return cert, key, fmt.Errorf("tls: key_file: %w", err)
	}
	return cert, key, nil
}

func (r *reloader) loadLocked(cs, ks fileStamp) error {
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: load key pair: %w", err)
	}
	r.cert.Store(&pair)
	r.mu.certStamp, r.mu.keyStamp = cs, ks
	return nil
}
