package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/silt-io/silt/acl"
	"github.com/silt-io/silt/cluster"
	"github.com/silt-io/silt/console"
	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/gateways/api"
	"github.com/silt-io/silt/gateways/kafka"
	"github.com/silt-io/silt/gateways/nfs"
	"github.com/silt-io/silt/gateways/s3"
	"github.com/silt-io/silt/gateways/webhdfs"
	"github.com/silt-io/silt/groups"
	"github.com/silt-io/silt/internal/datadir"
	"github.com/silt-io/silt/internal/logging"
	"github.com/silt-io/silt/internal/metrics"
	"github.com/silt-io/silt/internal/tlsconf"
	"github.com/silt-io/silt/introspect"
	"github.com/silt-io/silt/query/jobs"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/tiering/tierview"
)

// serveConfig is the whole server configuration: one section per package.
type serveConfig struct {
	Core core.Config    `koanf:"core"`
	API  api.Config     `koanf:"api"`
	S3   s3.Config      `koanf:"s3"`
	NFS  nfs.Config     `koanf:"nfs"`
	HDFS webhdfs.Config `koanf:"webhdfs"`
	// Kafka is the Kafka wire-protocol head (gateways/kafka).
	Kafka kafka.Config   `koanf:"kafka"`
	Tier  tiering.Config `koanf:"tiering"`
	Auth  authConfig     `koanf:"auth"`
	TLS   tlsconf.Config `koanf:"tls"`
	Log   logging.Config `koanf:"log"`
	Run   runtimeConfig  `koanf:"runtime"`

	// Groups are the reader groups (groups/).
	Groups groups.Config `koanf:"groups"`
	// Metrics bounds the series of /metrics (internal/metrics).
	Metrics metrics.Config `koanf:"metrics"`
	// Introspect is the telemetry kept in tenant silt-system (introspect/).
	Introspect introspect.Config `koanf:"introspect"`
	// Query runs queries as jobs (query/, docs/query.md).
	Query jobs.Config `koanf:"query"`
	// Console is the web console on the API listener (console/).
	Console console.Config `koanf:"console"`

	// Cluster is last: a single node never needs it.
	Cluster cluster.Config `koanf:"cluster"`
}

type runtimeConfig struct {
	// GCPercent is Go's GOGC for the server. Most of what an append
	// holds is pointer-free bytes in flight (request bodies, encoded
	// records) that the GC frees without scanning, so collecting at half
	// the live heap instead of at all of it costs little CPU and keeps
	// the heap about a quarter smaller under many producers.
	GCPercent        int    `koanf:"gc_percent" help:"Go GC target: collect when the heap has grown by this percentage of live data (0: leave it to GOGC or Go's 100)"`
	MemoryLimitBytes int64  `koanf:"memory_limit_bytes" help:"soft memory limit for the Go runtime (0: unset, GOMEMLIMIT applies); the GC works harder near it instead of letting the heap double"`
	PprofListen      string `koanf:"pprof_listen" help:"address for Go's /debug/pprof profiling endpoints (empty: off); unauthenticated, so keep it on loopback"`
}

type authConfig struct {
	InsecureDev   bool   `koanf:"insecure_dev" help:"DANGER: allow every request without a token (local experiments only)"`
	RootPrincipal string `koanf:"root_principal" help:"principal created at first start with admin on everything"`
	RootToken     string `koanf:"root_token" secret:"true" help:"secret the root principal accepts; empty: generate one into <core.dir>/root.token"`
	// SecretsKeyFile is apart from core.dir so that an operator can keep
	// the key off the data dir's backups, which then hold no usable S3
	// secret.
	SecretsKeyFile string `koanf:"secrets_key_file" help:"file with the 32-byte key S3 secrets are encrypted with in the catalog (created if missing); empty: <core.dir>/keys/secrets.key"`
	LostSecretsKey string `koanf:"lost_secrets_key_id" help:"ID of a secrets key lost for good, as the start-up error names it: revoke the S3 keys sealed with it instead of refusing to start"`
}

func defaultServeConfig() serveConfig {
	return serveConfig{
		Core:  core.DefaultConfig(),
		API:   api.DefaultConfig(),
		Tier:  tiering.DefaultConfig(),
		S3:    s3.DefaultConfig(),
		NFS:   nfs.DefaultConfig(),
		HDFS:  webhdfs.DefaultConfig(),
		Kafka: kafka.DefaultConfig(),
		Auth:  authConfig{RootPrincipal: "root"},
		TLS:   tlsconf.DefaultConfig(),
		Log:   logging.DefaultConfig(),
		Run:   runtimeConfig{GCPercent: 50},

		Groups:     groups.DefaultConfig(),
		Metrics:    metrics.DefaultConfig(),
		Introspect: introspect.DefaultConfig(),
		Query:      jobs.DefaultConfig(),
		Console:    console.DefaultConfig(),
		Cluster:    cluster.DefaultConfig(),
	}
}

func (c serveConfig) Validate() error {
	if c.Run.MemoryLimitBytes < 0 {
		return fmt.Errorf("runtime.memory_limit_bytes must not be negative")
	}
	if c.Run.GCPercent < 0 {
		return fmt.Errorf("runtime.gc_percent must not be negative (0 leaves the GC to GOGC)")
	}
	if c.Cluster.Enabled() && c.Cluster.Durability == cluster.DurabilityCluster && c.Tier.Backend != "s3" {
		return fmt.Errorf("cluster.durability cluster needs tiering.backend s3 (the write-ahead objects go to its bucket), not %q: set tiering.backend s3, or cluster.durability local", c.Tier.Backend)
	}
	return errors.Join(c.Core.Validate(), c.API.Validate(), c.Tier.Validate(), c.Groups.Validate(), c.Metrics.Validate(), c.Introspect.Validate(), c.Query.Validate(), c.S3.Validate(), c.NFS.Validate(), c.HDFS.Validate(), c.Kafka.Validate(), c.TLS.Validate(), c.Log.Validate(), c.Console.Validate(), c.Cluster.Validate())
}

// serve runs the server until ctx is cancelled, on what start took.
func serve(ctx context.Context, cfg serveConfig, log *zap.Logger, st *startup) error {
	defer st.close()
	// The data dir is for silt's user alone; pebble and other libraries
	// create files 0666 and leave it to the umask. Set before the check
	// starts, so that it never sees a file in the moment between its
	// creation and its narrowing (start sets it too, before it creates
	// the data dir).
	datadir.RestrictUmask()
	defer checkDataDir(ctx, cfg, log)()
	if cfg.Run.GCPercent > 0 {
		debug.SetGCPercent(cfg.Run.GCPercent)
	}
	if cfg.Run.MemoryLimitBytes > 0 {
		debug.SetMemoryLimit(cfg.Run.MemoryLimitBytes)
	}
	// On a full disk the catalog cannot even replay its log: fail with
	// what to do instead of spinning inside it.
	if err := tiering.CheckStartSpace(cfg.Tier, cfg.Core.Dir); err != nil {
		return err
	}
	var stopAnswering func()
	if cfg.Cluster.Enabled() && cfg.Cluster.Standby {
		tlsCfg, err := serverTLS(cfg.TLS)
		if err != nil {
			return err
		}
		st.api, stopAnswering = answerWhileStandby(st.api, tlsCfg, log)
	}
	node, cat, leave, err := joinCluster(ctx, cfg, log)
	if stopAnswering != nil {
		stopAnswering()
	}
	if err != nil {
		return err
	}
	defer leave()
	storeOpts, fenced, err := clusterWAL(cfg, node, cat, log)
	if err != nil {
		return err
	}
	var progress core.Progress
	storeOpts.Progress = &progress
	stopWatch := watchStart(log, cfg.Core.Dir, progress.Phase, startWatchAfter, startWatchEvery)
	store, err := core.OpenWith(cfg.Core, log.Named("core"), storeOpts)
	stopWatch()
	if err != nil {
		return err
	}
	defer store.Close()
	acls, err := openACL(cfg, store, log)
	if err != nil {
		return err
	}
	if err := ensureRoot(cfg, acls, log); err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	shared, err := metrics.New(cfg.Metrics, reg)
	if err != nil {
		return err
	}
	backend, err := tiering.OpenBackend(cfg.Tier, cfg.Core.Dir)
	if err != nil {
		return fmt.Errorf("tier-2 backend: %w", err)
	}
	// The hdfs backend holds a namenode connection; it goes after the
	// Tierer (deferred earlier, so closed later).
	if c, ok := backend.(io.Closer); ok {
		defer c.Close()
	}
	// The introspection recorder starts before the parts that report to
	// it and is closed after them (deferred earlier), so that their last
	// events are written; it is closed before the store.
	intro, err := startIntrospect(cfg, store, reg, log)
	if err != nil {
		return err
	}
	defer intro.Close()
	tierer, err := tiering.New(cfg.Tier, store, backend, tiering.Options{Logger: log.Named("tiering"), Registerer: reg, OnChunk: chunkEvents(intro)})
	if err != nil {
		return err
	}
	defer tierer.Close()
	storage, err := startStorageMetrics(reg, cfg.Metrics, store, tierer)
	if err != nil {
		return err
	}
	defer storage.Close()
	// In the insecure mode only requests without a credential are let
	// through; a presented token, key or export principal keeps its grants.
	authz := acl.Authorizer(acls)
	auth := api.Auth{Authn: acls.Authenticate, Authz: acls, Admin: acls}
	if cfg.Auth.InsecureDev {
		authz, auth.Insecure = acl.InsecureDev(acls), true
		log.Warn("INSECURE: auth.insecure_dev is on — every request is allowed without a token; never use this outside a local experiment")
	}
	// Denials are recorded where every head asks (one wrapped authorizer
	// per head, so that each event names its head).
	auth.Authz = intro.Authorizer("api", authz)
	srv, err := api.New(cfg.API, store, auth, log.Named("api"), reg)
	if err != nil {
		return err
	}
	srv.UseTiering(tierer)
	if intro != nil {
		intro.UseReader(srv, store)
	}
	if cfg.Console.Enabled {
		ch, err := console.New()
		if err != nil {
			return err
		}
		if err := srv.MountStatic(console.Prefix, ch); err != nil {
			return err
		}
	}
	gc, err := groups.New(cfg.Groups, store.Catalog(), srv.GroupSource(), reg)
	if err != nil {
		return err
	}
	srv.UseGroups(gc)
	// Deferred after the heads' start and before the store's close: jobs
	// still running at shutdown are recorded as interrupted while the
	// catalog is open.
	queries, err := jobs.Open(cfg.Query, store, store.Catalog(), acls, log.Named("query"), reg, nodeID(node))
	if err != nil {
		return err
	}
	defer queries.Close()
	srv.UseQueries(queries)
	tlsCfg, err := serverTLS(cfg.TLS)
	if err != nil {
		return err
	}
	tv := tierview.New(store, backend)
	s3srv, err := s3.New(cfg.S3, tv, acls, intro.Authorizer("s3", authz), log.Named("s3"))
	if err != nil {
		return err
	}
	// NFS file handles are HMAC-protected with a key kept in the data dir,
	// so handles stay valid across restarts.
	handleKey, err := loadOrCreateKey(filepath.Join(cfg.Core.Dir, "keys", "nfs-handle.key"))
	if err != nil {
		return fmt.Errorf("nfs handle key: %w", err)
	}
	nfssrv, err := nfs.New(cfg.NFS, tv, intro.Authorizer("nfs", authz), handleKey, log.Named("nfs"))
	if err != nil {
		return err
	}
	// WebHDFS OPEN redirects carry URLs signed with this key.
	signKey, err := loadOrCreateKey(filepath.Join(cfg.Core.Dir, "keys", "webhdfs-signing.key"))
	if err != nil {
		return fmt.Errorf("webhdfs signing key: %w", err)
	}
	hdfssrv, err := webhdfs.New(cfg.HDFS, tv, acls.Authenticate, acls.IssueToken, intro.Authorizer("webhdfs", authz), signKey, log.Named("webhdfs"))
	if err != nil {
		return err
	}
	// Delegation tokens live in the catalog, so that jobs holding one
	// survive a restart of the server.
	dtokens, err := webhdfs.OpenTokenStore(store.Catalog(), acls.GetPrincipal)
	if err != nil {
		return err
	}
	hdfssrv.UseDelegationTokens(dtokens)
	srv.UseDelegationTokens(apiTokens{dtokens})
	// The Kafka head takes silt tokens as SASL PLAIN passwords; in the
	// insecure mode clients without SASL act as anonymous, as requests
	// without a token do on the other heads.
	kafkasrv, err := kafka.New(cfg.Kafka, store, kafka.Auth{Authn: acls.Authenticate, Authz: authz, Insecure: cfg.Auth.InsecureDev}, log.Named("kafka"))
	if err != nil {
		return err
	}
	kafkasrv.UseTiering(tierer)
	// Kafka consumer groups are the reader groups of the API.
	kafkasrv.UseGroups(gc)
	kafkasrv.UseMetrics(shared)
	useHeadMetrics(shared, srv, s3srv, nfssrv, hdfssrv, intro)
	apiLn, s3Ln, nfsLn, hdfsLn, kafkaLn := st.api, st.s3, st.nfs, st.hdfs, st.kafka
	// Every head admits connections within its caps (conns.go).
	adm, err := newAdmission(reg, log)
	if err != nil {
		return err
	}
	apiLn = adm.wrap("api", cfg.API.Caps, apiLn)
	s3Ln = adm.wrap("s3", cfg.S3.Caps, s3Ln)
	nfsLn = adm.wrap("nfs", cfg.NFS.Caps, nfsLn)
	hdfsLn = adm.wrap("webhdfs", cfg.HDFS.Caps, hdfsLn)
	kafkaLn = adm.wrap("kafka", cfg.Kafka.Caps, kafkaLn)
	adm.check()
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	if err := joinMembers(node, cfg, st, tlsCfg != nil, reg, srv); err != nil {
		return err
	}
	log.Info("silt serving",
		zap.String("api", scheme+"://"+apiLn.Addr().String()),
		zap.String("s3", scheme+"://"+s3Ln.Addr().String()),
		zap.String("nfs", nfsLn.Addr().String()),
		zap.String("webhdfs", scheme+"://"+hdfsLn.Addr().String()),
		zap.String("kafka", kafkaLn.Addr().String()),
		zap.String("data_dir", cfg.Core.Dir))
	// Every head stops when ctx ends; if one fails, the others are stopped too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 5)
	go func() { errs <- srv.Serve(ctx, apiLn, tlsCfg) }()
	go func() { errs <- s3srv.Serve(ctx, s3Ln, tlsCfg) }()
	go func() { errs <- nfssrv.Serve(ctx, nfsLn) }()
	go func() { errs <- hdfssrv.Serve(ctx, hdfsLn, tlsCfg) }()
	go func() { errs <- kafkasrv.Serve(ctx, kafkaLn, tlsCfg) }()
	if node != nil {
		// Another node took the serving lock (this one was cut off from
		// etcd past its lease): two nodes must not write the same
		// segments, so this one stops.
		go func() {
			select {
			case <-node.Lost():
				log.Error("stopping", zap.Error(node.Err()))
				cancel()
			case <-fenced:
				// Another node took this node's write-ahead log over
				// (this one was cut off past its lease): nothing this
				// node writes can be acknowledged any more.
				log.Error("stopping: this node's write-ahead log was taken over by another node (fenced); it acknowledges no append any more and steps down")
				time.Sleep(stepDownAfter)
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	err = <-errs
	cancel()
	err = errors.Join(err, <-errs, <-errs, <-errs, <-errs)
	if node != nil {
		err = errors.Join(err, node.Err())
	}
	select {
	case <-fenced:
		err = errors.Join(err, errors.New("stopped: the write-ahead log was taken over by another node"))
	default:
	}
	log.Info("silt stopped")
	return err
}

// nodeID is the cluster node's id, "" on a single node.
func nodeID(n *cluster.Node) string {
	if n == nil {
		return ""
	}
	return n.NodeID()
}

func serverTLS(c tlsconf.Config) (*tls.Config, error) {
	if !c.Enabled() {
		return nil, nil
	}
	return c.ServerConfig()
}

// ensureRoot bootstraps the admin principal. Without an operator-supplied
// secret, the first start generates a token and leaves it in a 0600 file
// in the data dir, which the CLI reads when no token is given.
func ensureRoot(cfg serveConfig, acls *acl.Store, log *zap.Logger) error {
	created, err := acls.EnsureRoot(cfg.Auth.RootPrincipal, cfg.Auth.RootToken)
	if err != nil {
		return fmt.Errorf("bootstrap root principal: %w", err)
	}
	if cfg.Auth.RootToken != "" || !created {
		return nil
	}
	secret, _, err := acls.IssueToken(cfg.Auth.RootPrincipal, "bootstrap", 0)
	if err != nil {
		return err
	}
	path := filepath.Join(cfg.Core.Dir, rootTokenFile)
	if err := writeFileAtomic(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("write root token: %w", err)
	}
	log.Info("created root principal; its token is in the file named here (the CLI uses it by default)",
		zap.String("principal", cfg.Auth.RootPrincipal), zap.String("token_file", path))
	return nil
}

const rootTokenFile = "root.token"

// writeFileAtomic writes via a synced temp file and a rename, then syncs the
// directory, so a crash never leaves a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// loadOrCreateKey returns the 32-byte key in path, creating it (0600,
// atomically) on first use.
func loadOrCreateKey(path string) ([]byte, error) {
	if b, err := os.ReadFile(path); err == nil {
		if len(b) != 32 {
			return nil, fmt.Errorf("%s holds %d bytes, want 32: restore it from a backup or delete it (existing handles then go stale)", path, len(b))
		}
		return b, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, key, 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// apiTokens lets the API's admin routes list and cancel the WebHDFS
// head's delegation tokens.
type apiTokens struct{ ts *webhdfs.TokenStore }

func (a apiTokens) ListDelegationTokens(owner string) []api.DelegationToken {
	var out []api.DelegationToken
	for _, t := range a.ts.List(owner, time.Now()) {
		out = append(out, api.DelegationToken{ID: t.ID, Owner: t.Owner, Renewer: t.Renewer, Issued: t.Issued, Expires: t.Expires, MaxDate: t.MaxDate})
	}
	return out
}

func (a apiTokens) CancelDelegationToken(id int32) error {
	if err := a.ts.CancelID(id); err != nil {
		if errors.Is(err, webhdfs.ErrInvalidToken) {
			return fmt.Errorf("%w: delegation token %d (cancelled, expired or never issued)", acl.ErrNotFound, id)
		}
		return err
	}
	return nil
}
