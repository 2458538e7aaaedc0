package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside the GenerateDev directory.
const (
	DevCAFile        = "ca.pem"
	DevCAKeyFile     = "ca-key.pem"
	DevServerFile    = "server.pem"
	DevServerKeyFile = "server-key.pem"
)

const (
	devCAValidity     = 10 * 365 * 24 * time.Hour
	devServerValidity = 365 * 24 * time.Hour
	// devRenewBefore regenerates certificates this close to expiry, so a
	// long-lived dev setup never hits an expired certificate mid-session.
	devRenewBefore = 30 * 24 * time.Hour
	// devBackdate tolerates clients whose clocks run a little behind.
	devBackdate = time.Hour
)

// DefaultDevHosts are the names a local development server is reached by.
func DefaultDevHosts() []string {
	return []string{"127.0.0.1", "::1", "localhost"}
}

// GenerateDev provides a development TLS setup in dir: a self-signed ECDSA
// P-256 CA (valid 10 years) and a server certificate for hosts (default
// DefaultDevHosts, valid 1 year) signed by it. Existing files are reused when
// they are valid, cover all hosts and do not expire within 30 days; otherwise
// they are replaced, and created reports whether anything was written. A
// replaced CA means clients must be given the new caFile.
//
// The returned Config names the server pair and has no ClientCAFile. Files are
// written atomically, all 0600 (dir is for silt's user only; clients of
// another user get a copy of caFile), but two processes generating into the same
// directory at once may leave a mismatched pair, which the next call repairs.
func GenerateDev(dir string, hosts []string) (cfg Config, caFile string, created bool, err error) {
	return generateDev(dir, hosts, time.Now())
}

func generateDev(dir string, hosts []string, now time.Time) (Config, string, bool, error) {
	if len(hosts) == 0 {
		hosts = DefaultDevHosts()
	}
	// Accept "[::1]" as written in URLs; copy so the caller's slice is untouched.
	hosts = append([]string(nil), hosts...)
	for i, h := range hosts {
		hosts[i] = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Config{}, "", false, fmt.Errorf("tls: dev dir: %w", err)
	}
	var (
		caPath      = filepath.Join(dir, DevCAFile)
		caKeyPath   = filepath.Join(dir, DevCAKeyFile)
		certPath    = filepath.Join(dir, DevServerFile)
		certKeyPath = filepath.Join(dir, DevServerKeyFile)
		created     bool
	)

	ca, caKey, err := loadDevCA(caPath, caKeyPath, now)
	if err != nil {
		ca, caKey, err = newDevCA(now)
		if err != nil {
			return Config{}, "", false, err
		}
		if err := writePair(caPath, caKeyPath, ca.Raw, caKey); err != nil {
			return Config{}, "", false, err
		}
		created = true
	}
	if created || !devServerValid(certPath, certKeyPath, ca, hosts, now) {
		der, key, err := newDevServer(ca, caKey, hosts, now)
		if err != nil {
			return Config{}, "", false, err
		}
		if err := writePair(certPath, certKeyPath, der, key); err != nil {
			return Config{}, "", false, err
		}
		created = true
	}
	cfg := DefaultConfig()
	cfg.CertFile, cfg.KeyFile = certPath, certKeyPath
	return cfg, caPath, created, nil
}

// loadDevCA returns the CA in dir if it is usable for a while longer.
func loadDevCA(certPath, keyPath string, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath) // also checks the key matches
	if err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	switch {
	case !ok:
		return nil, nil, errors.New("dev CA key is not ECDSA")
	case !ca.IsCA:
		return nil, nil, errors.New("dev CA is not a CA")
	case now.Before(ca.NotBefore) || now.Add(devRenewBefore).After(ca.NotAfter):
		return nil, nil, errors.New("dev CA expires soon or is not yet valid")
	}
	return ca, key, nil
}

// devServerValid reports whether the existing server pair can be kept.
func devServerValid(certPath, keyPath string, ca *x509.Certificate, hosts []string, now time.Time) bool {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return false
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return false
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}); err != nil {
		return false
	}
	if now.Add(devRenewBefore).After(leaf.NotAfter) {
		return false
	}
	for _, h := range hosts {
		if leaf.VerifyHostname(h) != nil {
			return false
		}
	}
	return true
}

func newDevCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: generate CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"silt development"}, CommonName: "silt dev CA"},
		NotBefore:             now.Add(-devBackdate),
		NotAfter:              now.Add(devCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // signs leaves only
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: create CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: parse CA certificate: %w", err)
	}
	return ca, key, nil
}

func newDevServer(ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string, now time.Time) ([]byte, *ecdsa.PrivateKey, error) {
	return newLeaf(ca, caKey, "silt dev server", hosts, x509.ExtKeyUsageServerAuth, now, devServerValidity)
}

// newLeaf signs an end-entity certificate. Tests use it for client certs.
func newLeaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, hosts []string, usage x509.ExtKeyUsage, now time.Time, validity time.Duration) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{Organization: []string{"silt development"}, CommonName: cn},
		NotBefore:    now.Add(-devBackdate),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: create certificate: %w", err)
	}
	return der, key, nil
}

func randomSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("tls: serial number: %w", err)
	}
	return n, nil
}

// writePair writes the key before the certificate: after a crash between
// the two the pair no longer matches, which the validity checks detect, so
// the next run regenerates instead of serving a stale mix.
func writePair(certPath, keyPath string, certDER []byte, key *ecdsa.PrivateKey) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("tls: marshal key: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: certDER})
	// Certificates are not secret, but the directory sits in silt's data
	// dir, which is private (0700) as a whole: a wider mode would give
	// nobody access and only break the rule that everything there is 0600.
	return writeFileAtomic(certPath, certPEM, 0o600)
}

// writeFileAtomic replaces path so that readers see the old or the new
// content, never a prefix: tmp file, fsync, rename, fsync the directory.
func writeFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// CreateTemp uses 0600; the mode is set explicitly so that it holds
	// whatever CreateTemp does.
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("tls: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("tls: sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("tls: close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("tls: rename %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("tls: sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("tls: sync dir %s: %w", dir, err)
	}
	return nil
}
