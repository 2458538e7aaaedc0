package connlimit

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDerive(t *testing.T) {
	for name, tc := range map[string]struct {
		nofile uint64
		want   Limits
	}{
		// A quarter is kept back, the floor of 1,024 when that is more,
		// but never more than half; the rest split over 4 heads.
		"1024 (an old default)":  {1024, Limits{Max: 128, PerClient: 32}},
		"4096":                   {4096, Limits{Max: 768, PerClient: 192}},
		"20000":                  {20000, Limits{Max: 3750, PerClient: 937}},
		"65536 hits the ceiling": {65536, Limits{Max: 4096, PerClient: 1024}},
		"1048576":                {1 << 20, Limits{Max: 4096, PerClient: 1024}},
		"tiny":                   {16, Limits{Max: 2, PerClient: 1}},
		"none":                   {0, Limits{Max: 1, PerClient: 1}},
		"unlimited":              {unix.RLIM_INFINITY, Limits{Max: 4096, PerClient: 1024}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := Derive(tc.nofile, 4); got != tc.want {
				t.Fatalf("Derive(%d, 4) = %+v, want %+v", tc.nofile, got, tc.want)
			}
		})
	}
}

func TestDeriveLeavesTheReserve(t *testing.T) {
	for _, nofile := range []uint64{64, 256, 1024, 2048, 4096, 8192, 20000, 100000} {
		l := Derive(nofile, 4)
		left := int64(nofile) - 4*int64(l.Max)
		if want := int64(max(nofile/4, min(reserveFloor, nofile/2))); left < want {
			t.Errorf("nofile %d: 4 heads × %d leave %d descriptors, want at least %d", nofile, l.Max, left, want)
		}
	}
}

func TestResolve(t *testing.T) {
	derived := Limits{Max: 3750, PerClient: 937}
	for name, tc := range map[string]struct {
		caps Caps
		want Limits
	}{
		"both derived":                 {Caps{}, derived},
		"max set, per client follows":  {Caps{MaxConnections: 100}, Limits{Max: 100, PerClient: 25}},
		"max set to 1":                 {Caps{MaxConnections: 1}, Limits{Max: 1, PerClient: 1}},
		"per client set":               {Caps{MaxConnectionsPerClient: 10}, Limits{Max: 3750, PerClient: 10}},
		"both set":                     {Caps{MaxConnections: 50, MaxConnectionsPerClient: 50}, Limits{Max: 50, PerClient: 50}},
		"per client above derived max": {Caps{MaxConnectionsPerClient: 5000}, Limits{Max: 3750, PerClient: 3750}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.caps.Resolve(derived); got != tc.want {
				t.Fatalf("Resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	for name, tc := range map[string]struct {
		caps    Caps
		wantErr string // "" = valid
	}{
		"derived":              {Caps{}, ""},
		"set":                  {Caps{MaxConnections: 10, MaxConnectionsPerClient: 10}, ""},
		"per client only":      {Caps{MaxConnectionsPerClient: 10}, ""},
		"negative max":         {Caps{MaxConnections: -1}, "s3: max_connections -1: want 1..1048576, or 0 to derive it"},
		"huge max":             {Caps{MaxConnections: MaxCap + 1}, "s3: max_connections 1048577: want 1..1048576"},
		"negative per client":  {Caps{MaxConnectionsPerClient: -5}, "s3: max_connections_per_client -5: want 1..1048576, or 0 for a quarter"},
		"per client above max": {Caps{MaxConnections: 10, MaxConnectionsPerClient: 11}, "s3: max_connections_per_client 11 exceeds max_connections 10"},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.caps.Check("s3")
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("Check: %v, want %q…", err, tc.wantErr)
			}
		})
	}
}

func TestRaiseNofile(t *testing.T) {
	var before unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &before) })
	// Lower the soft limit (an unprivileged process may), as a shell's
	// ulimit -Sn would for the server.
	low := before
	low.Cur = min(before.Max, 512)
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	soft, hard, err := RaiseNofile()
	if err != nil {
		t.Fatal(err)
	}
	var now unix.Rlimit
	unix.Getrlimit(unix.RLIMIT_NOFILE, &now)
	if soft != before.Max || hard != before.Max || now.Cur != before.Max {
		t.Fatalf("RaiseNofile = %d, %d; limit now %d; want the hard limit %d", soft, hard, now.Cur, before.Max)
	}
}
