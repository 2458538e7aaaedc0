package main

import (
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/silt-io/silt/internal/connlimit"
)

// heads is how many protocol heads share the connection budget: the
// native API, S3, NFS, WebHDFS and Kafka.
const heads = 5

// admission puts every head's listener under connection caps: those
// configured, or derived from the descriptor limit (connlimit.Derive).
type admission struct {
	nofile  uint64
	derived connlimit.Limits
	met     *connlimit.Metrics
	log     *zap.Logger
	total   int // connections all heads may hold together
}

// newAdmission raises the soft descriptor limit to the hard one and
// derives the default caps from it.
func newAdmission(reg prometheus.Registerer, log *zap.Logger) (*admission, error) {
	soft, hard, err := connlimit.RaiseNofile()
	if err != nil {
		log.Warn("could not raise the file descriptor limit; connection caps are derived from the current one", zap.Error(err))
	}
	a := &admission{nofile: soft, derived: connlimit.Derive(soft, heads), met: connlimit.NewMetrics(), log: log}
	if err := a.met.Register(reg); err != nil {
		return nil, err
	}
	log.Info("file descriptor limit", zap.Uint64("soft", soft), zap.Uint64("hard", hard),
		zap.Int("derived_max_connections", a.derived.Max), zap.Int("derived_max_connections_per_client", a.derived.PerClient))
	return a, nil
}

// wrap returns ln admitting connections within the head's caps.
func (a *admission) wrap(head string, caps connlimit.Caps, ln net.Listener) net.Listener {
	lim := caps.Resolve(a.derived)
	a.total += lim.Max
	a.log.Info("connection caps", zap.String("head", head),
		zap.Int("max_connections", lim.Max), zap.Int("max_connections_per_client", lim.PerClient))
	return connlimit.New(ln, connlimit.Options{Head: head, Limits: lim, Metrics: a.met, Log: a.log.Named(head)})
}

// check warns when configured caps leave less than a quarter of the
// descriptor limit to everything else; accept then backs off when the
// process runs out, rather than failing, but files may fail to open.
func (a *admission) check() {
	if uint64(a.total) > a.nofile-a.nofile/4 {
		a.log.Warn("the heads' max_connections together leave less than a quarter of the file descriptor limit to segment files, the catalog and tier 2; raise the limit (LimitNOFILE= in systemd, ulimit -n) or lower the caps",
			zap.Int("max_connections_total", a.total), zap.Uint64("nofile", a.nofile))
	}
}
