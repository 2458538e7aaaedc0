package connlimit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Caps are a head's connection settings, embedded in its Config so that
// every head has the same two keys.
type Caps struct {
	MaxConnections          int `koanf:"max_connections" help:"connections the head holds open at most; at the cap the longest-idle one is closed to admit a newcomer (0: derived from the file descriptor limit, see docs/connections.md)"`
	MaxConnectionsPerClient int `koanf:"max_connections_per_client" help:"connections one client address (an IPv6 client: its /64) may hold open on the head; more are closed on accept (0: a quarter of max_connections)"`
}

// MaxCap bounds both settings: Linux's default fs.nr_open, which no
// process's descriptor limit exceeds unless the administrator raised it.
const MaxCap = 1 << 20

// Check validates the settings of the config section named section.
func (c Caps) Check(section string) error {
	if c.MaxConnections < 0 || c.MaxConnections > MaxCap {
		return fmt.Errorf("%s: max_connections %d: want 1..%d, or 0 to derive it from the file descriptor limit", section, c.MaxConnections, MaxCap)
	}
	if c.MaxConnectionsPerClient < 0 || c.MaxConnectionsPerClient > MaxCap {
		return fmt.Errorf("%s: max_connections_per_client %d: want 1..%d, or 0 for a quarter of max_connections", section, c.MaxConnectionsPerClient, MaxCap)
	}
	if c.MaxConnections > 0 && c.MaxConnectionsPerClient > c.MaxConnections {
		return fmt.Errorf("%s: max_connections_per_client %d exceeds max_connections %d", section, c.MaxConnectionsPerClient, c.MaxConnections)
	}
	return nil
}

// Limits are the caps a Listener applies.
type Limits struct {
	Max       int // connections of the head
	PerClient int // connections of one client address
}

// The derivation of default caps from the descriptor limit (Derive).
const (
	// reserveFloor descriptors, or a quarter of the limit if that is
	// more, are left to everything that is not a client connection:
	// tier-1 segment files, the catalog's tables (pebble keeps up to
	// 1,000 open), tier-2 uploads and reads, NFS's open-file cache, the
	// listeners. On a small limit the reserve is half of it instead.
	reserveFloor = 1024
	// derivedCeiling bounds a derived cap whatever the descriptor limit:
	// each idle connection also holds memory (a goroutine and read
	// buffers; NFS's is 64 KiB), and a limit of a million descriptors
	// should not let clients hold a million connections' worth of it.
	derivedCeiling = 4096
	// perClientShare: one client address may hold this fraction of a
	// head's connections, so that it takes several addresses to fill a
	// head, while every local client (all 127.0.0.1 on a single node)
	// still gets hundreds.
	perClientShare = 4
)

// reserve is the part of the descriptor limit nofile that the derived
// connection caps leave to everything else (segment files first).
func reserve(nofile uint64) uint64 {
	return max(nofile/4, min(reserveFloor, nofile/2))
}

// Derive returns the default caps of each of heads heads under the
// descriptor limit nofile: the limit less a reserve, split evenly, at
// most derivedCeiling, and a quarter of that per client.
func Derive(nofile uint64, heads int) Limits {
	per := min((nofile-reserve(nofile))/uint64(max(heads, 1)), derivedCeiling)
	m := max(int(per), 1)
	return Limits{Max: m, PerClient: max(m/perClientShare, 1)}
}

// Resolve returns the caps of the settings c: those set, the others
// derived. A per-client cap follows a set max_connections, and never
// exceeds the head's.
func (c Caps) Resolve(derived Limits) Limits {
	l := derived
	if c.MaxConnections > 0 {
		l.Max = c.MaxConnections
		l.PerClient = max(l.Max/perClientShare, 1)
	}
	if c.MaxConnectionsPerClient > 0 {
		l.PerClient = c.MaxConnectionsPerClient
	}
	l.PerClient = min(l.PerClient, l.Max)
	return l
}

// RaiseNofile raises the soft RLIMIT_NOFILE to the hard limit and returns
// the limits in effect afterwards. Go (since 1.19) raises it already when
// the os package starts; this keeps the step explicit, so that the limit
// the caps are derived from is the one in effect whatever the runtime
// did. On failure it returns the limits as they are with the error.
func RaiseNofile() (soft, hard uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("getrlimit nofile: %w", err)
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
			return lim.Cur, lim.Max, fmt.Errorf("raise nofile soft limit from %d to %d: %w", lim.Cur, lim.Max, err)
		}
		lim = want
	}
	return lim.Cur, lim.Max, nil
}

// SegmentFiles is the share of the descriptor limit nofile that silt's
// segment files may hold open (core.max_open_files when it is 0): half of
// the reserve Derive leaves outside the heads' connections. The other
// half is for the catalog, the write-ahead log, tier 2 and everything
// else, so that connections at their caps and segment files at their
// budget never exhaust the limit together.
func SegmentFiles(nofile uint64) int {
	return max(int(reserve(nofile)/2), 16)
}

// Nofile returns the soft descriptor limit in effect, 1024 if it cannot
// be read.
func Nofile() uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 1024
	}
	return lim.Cur
}
