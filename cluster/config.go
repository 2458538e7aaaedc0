// Package cluster is what makes a silt node part of a cluster on etcd:
// the cluster section of the configuration, the connection to etcd, the
// cluster's identity (kept under the key prefix and in the data
// directory), membership (each node registered under a lease, and the
// probe /readyz follows), the move of a single node's catalog into etcd
// (Init) and, until segments have owners, the lock that lets one node at
// a time serve a prefix.
//
// Keys under cluster.etcd.prefix (see docs/cluster.md):
//
//	<prefix>cluster/id              the cluster's id, created by its first node
//	<prefix>cluster/secrets_key_id  the id of the key S3 secrets are sealed with
//	<prefix>cluster/serving/        the serving lock (concurrency.Mutex)
//	<prefix>cluster/node            who holds it, under the holder's lease
//	<prefix>cluster/members/<id>    a live node, under its membership lease
//	<prefix>cluster/init            while Init copies: the directory it moves
//	<prefix>catalog/                the catalog (core/catalog on etcd)
//	<prefix>wal/<node>/             a node's write-ahead log fence (wal.go)
package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/silt-io/silt/core/catalog"
)

// Config is the `cluster` section.
type Config struct {
	Etcd EtcdConfig `koanf:"etcd"`
	// LeaseTTL is the membership lease: a node that stops renewing it
	// (dead, or cut off from etcd) leaves the list of live nodes this
	// long after its last renewal.
	LeaseTTL  time.Duration   `koanf:"lease_ttl" help:"TTL of the lease a node is registered under: a dead node leaves silt cluster nodes this long after its last heartbeat"`
	Advertise AdvertiseConfig `koanf:"advertise"`
	// Durability says where an append is durable before it is
	// acknowledged (docs/cluster.md).
	Durability string    `koanf:"durability" help:"cluster (an append is acknowledged once in a write-ahead object on tier 2's S3 store and committed in etcd: it survives the node) or local (the node's disk, as a single node); empty: cluster when tiering.backend is s3, else local"`
	WAL        WALConfig `koanf:"wal"`
	// Standby makes a node that finds the serving lock taken wait for it
	// instead of being refused: it takes over when the serving node
	// stops or dies.
	Standby bool `koanf:"standby" help:"wait for the serving lock instead of refusing to start while another node serves the prefix (takes over when it stops or dies)"`
}

// WALConfig configures the write-ahead log on objects (durability cluster).
type WALConfig struct {
	FlushInterval time.Duration `koanf:"flush_interval" help:"with durability cluster, how long a write-ahead round waits for more appends before its one PUT (0: none; rounds go back to back, each carrying what queued during the last)"`
	FlushBytes    int64         `koanf:"flush_bytes" help:"with flush_interval, a round stops waiting once its appends hold this many bytes (0: it waits the whole interval)"`
	Prefix        string        `koanf:"prefix" help:"key prefix of the write-ahead objects in tier 2's bucket, before <node id>/ (must start with _ so that no tenant can own it)"`
}

// Durability modes.
const (
	DurabilityCluster = "cluster"
	DurabilityLocal   = "local"
)

// EffectiveDurability is the mode a node runs with, given its tier-2
// backend: an empty setting is cluster on S3, local otherwise.
func (c Config) EffectiveDurability(tierBackend string) string {
	if c.Durability != "" {
		return c.Durability
	}
	if tierBackend == "s3" {
		return DurabilityCluster
	}
	return DurabilityLocal
}

// AdvertiseConfig is where other nodes and clients reach this node's
// heads. Empty: the address the head listens on (a wildcard host such as
// 0.0.0.0 replaced by the machine's host name).
type AdvertiseConfig struct {
	API     string `koanf:"api" help:"host:port other nodes and clients reach the native API at (empty: the listen address)"`
	S3      string `koanf:"s3" help:"host:port of the S3 head as others reach it (empty: the listen address)"`
	NFS     string `koanf:"nfs" help:"host:port of the NFS head as others reach it (empty: the listen address)"`
	WebHDFS string `koanf:"webhdfs" help:"host:port of the WebHDFS head as others reach it (empty: the listen address)"`
}

// EtcdConfig says how to reach etcd.
type EtcdConfig struct {
	Endpoints []string `koanf:"endpoints" help:"etcd client URLs, e.g. http://127.0.0.1:2379 (empty: a single node, its metadata in the data directory)"`
	Prefix    string   `koanf:"prefix" help:"key prefix of this cluster in etcd; every key silt writes is under it"`
	Username  string   `koanf:"username" help:"etcd user (empty: no authentication)"`
	// Password is a key like any other so that SILT_CLUSTER_ETCD_PASSWORD
	// sets it; as a flag it would show in ps, hence the help's advice.
	Password       string        `koanf:"password" secret:"true" help:"etcd user's password: prefer SILT_CLUSTER_ETCD_PASSWORD or password_file over a flag"`
	PasswordFile   string        `koanf:"password_file" help:"file holding the etcd user's password (trailing newline ignored)"`
	CAFile         string        `koanf:"ca_file" help:"PEM CA bundle that signs etcd's server certificate (setting it, or cert_file, turns TLS on)"`
	CertFile       string        `koanf:"cert_file" help:"PEM client certificate for etcd (with key_file)"`
	KeyFile        string        `koanf:"key_file" help:"PEM private key of cert_file"`
	DialTimeout    time.Duration `koanf:"dial_timeout" help:"how long a start waits to reach etcd before it fails"`
	RequestTimeout time.Duration `koanf:"request_timeout" help:"longest wait for one etcd request; a metadata change etcd does not take in time fails with 503"`
	LockTTL        time.Duration `koanf:"lock_ttl" help:"lease TTL of the serving lock: how long after a node died another may serve its prefix"`
	MaxTxnOps      int           `koanf:"max_txn_ops" help:"etcd's --max-txn-ops: a metadata change of more keys is refused whole, never split"`
	MaxTxnBytes    int           `koanf:"max_txn_bytes" help:"etcd's --max-request-bytes: a metadata change of more bytes is refused whole, never split"`
}

// DefaultConfig is a single node: no endpoints.
func DefaultConfig() Config {
	return Config{Etcd: EtcdConfig{
		Prefix:         "/silt/",
		DialTimeout:    5 * time.Second,
		RequestTimeout: 5 * time.Second,
		LockTTL:        10 * time.Second,
		MaxTxnOps:      catalog.DefaultMaxTxnOps,
		MaxTxnBytes:    catalog.DefaultMaxTxnBytes,
	}, LeaseTTL: 5 * time.Second, WAL: WALConfig{Prefix: "_wal/", FlushBytes: 4 << 20}}
}

// Enabled reports whether the node is in a cluster (endpoints are set).
func (c Config) Enabled() bool { return len(c.Etcd.Endpoints) > 0 }

// Validate checks the section; with no endpoints only what would be
// wrong in any case is checked.
func (c Config) Validate() error {
	e := c.Etcd
	var errs []error
	for _, ep := range e.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("cluster.etcd.endpoints: %q is not an http:// or https:// URL of an etcd client port", ep))
		}
	}
	if !strings.HasPrefix(e.Prefix, "/") || !strings.HasSuffix(e.Prefix, "/") || len(e.Prefix) < 2 {
		errs = append(errs, fmt.Errorf("cluster.etcd.prefix: %q must start and end with / and name something, e.g. /silt/", e.Prefix))
	}
	if e.Password != "" && e.PasswordFile != "" {
		errs = append(errs, errors.New("cluster.etcd.password and password_file are both set: give one"))
	}
	if (e.Password != "" || e.PasswordFile != "") && e.Username == "" {
		errs = append(errs, errors.New("cluster.etcd.password needs cluster.etcd.username"))
	}
	if (e.CertFile == "") != (e.KeyFile == "") {
		errs = append(errs, errors.New("cluster.etcd.cert_file and key_file go together"))
	}
	if e.DialTimeout <= 0 || e.RequestTimeout <= 0 || e.LockTTL < time.Second {
		errs = append(errs, errors.New("cluster.etcd.dial_timeout and request_timeout must be positive, lock_ttl at least 1s"))
	}
	if c.LeaseTTL < time.Second || c.LeaseTTL%time.Second != 0 {
		// etcd's leases count whole seconds.
		errs = append(errs, fmt.Errorf("cluster.lease_ttl: %v must be a whole number of seconds, at least 1s", c.LeaseTTL))
	}
	for _, a := range []struct{ key, v string }{{"api", c.Advertise.API}, {"s3", c.Advertise.S3}, {"nfs", c.Advertise.NFS}, {"webhdfs", c.Advertise.WebHDFS}} {
		if a.v == "" {
			continue
		}
		if host, port, err := net.SplitHostPort(a.v); err != nil || host == "" || port == "" || port == "0" {
			errs = append(errs, fmt.Errorf("cluster.advertise.%s: %q is not host:port with a host and a port", a.key, a.v))
		}
	}
	switch c.Durability {
	case "", DurabilityCluster, DurabilityLocal:
	default:
		errs = append(errs, fmt.Errorf("cluster.durability: %q is not cluster or local (or empty: cluster on an S3 tier 2)", c.Durability))
	}
	if c.WAL.FlushInterval < 0 || c.WAL.FlushInterval > time.Second {
		errs = append(errs, fmt.Errorf("cluster.wal.flush_interval: %v must be between 0 and 1s (every append waits for it)", c.WAL.FlushInterval))
	}
	if c.WAL.FlushBytes < 0 {
		errs = append(errs, fmt.Errorf("cluster.wal.flush_bytes: %d must not be negative", c.WAL.FlushBytes))
	}
	if !strings.HasPrefix(c.WAL.Prefix, "_") || !strings.HasSuffix(c.WAL.Prefix, "/") || strings.Contains(c.WAL.Prefix, "//") {
		errs = append(errs, fmt.Errorf("cluster.wal.prefix: %q must start with _ (a name no tenant can take) and end with /", c.WAL.Prefix))
	}
	if e.MaxTxnOps < 1 || e.MaxTxnBytes < 1024 {
		errs = append(errs, errors.New("cluster.etcd.max_txn_ops must be positive and max_txn_bytes at least 1024"))
	}
	return errors.Join(errs...)
}

// password returns the password from the config or its file.
func (e EtcdConfig) password() (string, error) {
	if e.PasswordFile == "" {
		return e.Password, nil
	}
	b, err := os.ReadFile(e.PasswordFile)
	if err != nil {
		return "", fmt.Errorf("cluster.etcd.password_file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// tlsConfig is nil when neither a CA nor a client certificate is given
// (https endpoints then use the system's roots).
func (e EtcdConfig) tlsConfig() (*tls.Config, error) {
	https := false
	for _, ep := range e.Endpoints {
		https = https || strings.HasPrefix(ep, "https://")
	}
	if e.CAFile == "" && e.CertFile == "" && !https {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("cluster.etcd.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("cluster.etcd.ca_file %s: no PEM certificate in it", e.CAFile)
		}
		cfg.RootCAs = pool
	}
	if e.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("cluster.etcd.cert_file/key_file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
