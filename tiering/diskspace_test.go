package tiering

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/silt-io/silt/core"
)

// fakeDisk is a settable tier-1 filesystem size.
type fakeDisk struct{ avail, total uint64 }

func (d *fakeDisk) stat(string) (uint64, uint64, error) { return d.avail, d.total, nil }

func TestDiskPressure(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name         string
		maxBacklog   int64
		minFree      int64
		avail, total uint64
		backlog      int64
		refuse       string // substring of the refusal; "" for none
		slowed       bool
	}{
		{"plenty of space", 0, 0, 900 * mib, 1000 * mib, 0, "", false},
		// auto floor: 5% of 24 MiB is below 4 MiB, so 4 MiB
		{"small disk above twice the floor", 0, 0, 9 * mib, 24 * mib, 0, "", false},
		{"small disk nearing the floor", 0, 0, 6 * mib, 24 * mib, 0, "", true},
		{"small disk below the floor", 0, 0, 3 * mib, 24 * mib, 0, "no space left on device", false},
		{"full disk", 0, 0, 0, 24 * mib, 0, "below tiering.min_free_bytes (4.0 MiB)", false},
		{"large disk: floor capped at 1 GiB", 0, 0, 1100 * mib, 1 << 40, 0, "", true},
		{"explicit floor", 0, 10 * mib, 9 * mib, 1 << 40, 0, "below tiering.min_free_bytes (10.0 MiB)", false},
		{"backlog under its share", 0, 0, 600 * mib, 1000 * mib, 300 * mib, "", false},
		{"backlog nearing its share", 0, 0, 400 * mib, 1000 * mib, 350 * mib, "", true},
		{"backlog over its share", 0, 0, 300 * mib, 1000 * mib, 400 * mib, "above tiering.backlog_share", false},
		{"explicit per-stream bound replaces the share", 1 << 40, 0, 300 * mib, 1000 * mib, 400 * mib, "", false},
		{"explicit per-stream bound keeps the floor", 1 << 40, 0, 1 * mib, 24 * mib, 0, "no space left on device", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.MaxBacklogBytes, cfg.MinFreeBytes = tc.maxBacklog, tc.minFree
			d := &fakeDisk{tc.avail, tc.total}
			tr := &Tierer{cfg: cfg, store: fixedDir{dir: "x"}, statDisk: d.stat}
			tr.mu.failing = map[*segState]struct{}{}
			tr.backlog.Store(tc.backlog)
			p := tr.diskPressure()
			switch {
			case tc.refuse == "" && p.refuse != nil:
				t.Fatalf("refused: %v", p.refuse)
			case tc.refuse != "" && (p.refuse == nil || !strings.Contains(p.refuse.Error(), tc.refuse) || !errors.Is(p.refuse, core.ErrUnavailable)):
				t.Fatalf("refusal %v, want one wrapping ErrUnavailable saying %q", p.refuse, tc.refuse)
			case tc.refuse == "" && tc.slowed != (p.pace > 0):
				t.Fatalf("pace %s, want slowed %v", p.pace, tc.slowed)
			}
			if p.pace > maxPace {
				t.Fatalf("pace %s above %s", p.pace, maxPace)
			}
			if got := tr.AppendsRefused(); (got != nil) != (tc.refuse != "") {
				t.Fatalf("AppendsRefused = %v", got)
			}
		})
	}
}

// fixedDir is a tier1 whose Dir is set; diskPressure needs nothing else
// (the embedded nil interface panics if anything else is called).
type fixedDir struct {
	tier1
	dir string
}

func (d fixedDir) Dir() string { return d.dir }

// TestBackpressureFollowsTheDisk: appends are refused while tier 1 is
// short of space, whatever the backlog, and accepted again once space
// returns — measured on each call, not at start.
func TestBackpressureFollowsTheDisk(t *testing.T) {
	e := newEnv(t, testConfig())
	d := &fakeDisk{avail: 100 << 20, total: 1 << 30}
	e.tr.Close()
	tr, err := New(e.cfg, e.store, e.be, Options{Now: e.clock.Now, manual: true, statDisk: d.stat})
	if err != nil {
		t.Fatal(err)
	}
	e.tr = tr
	e.createStream("acme", "s", core.EncodingLines, 1)
	steps := []struct {
		name   string
		avail  uint64
		refuse bool
	}{
		{"space", 100 << 20, false},
		{"filled by another file", 1 << 20, true},
		{"space again", 100 << 20, false},
	}
	for _, s := range steps {
		d.avail = s.avail
		err := tr.Backpressure("acme", "s")
		if (err != nil) != s.refuse || (err != nil && !errors.Is(err, core.ErrUnavailable)) {
			t.Fatalf("%s: Backpressure = %v", s.name, err)
		}
	}
}

func TestCheckStartSpace(t *testing.T) {
	cfg := DefaultConfig()
	dir := t.TempDir() + "/not/yet/created"
	if err := checkStartSpace(cfg, dir, (&fakeDisk{100 << 20, 1 << 30}).stat); err != nil {
		t.Fatalf("enough space: %v", err)
	}
	err := checkStartSpace(cfg, dir, (&fakeDisk{0, 24 << 20}).stat)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "free space there") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("full disk: %v", err)
	}
}

// Backpressure asks on every append; the filesystem is measured once per
// interval however many ask, and again for another directory.
func TestSampledStat(t *testing.T) {
	calls := 0
	stat := sampledStat(func(string) (uint64, uint64, error) { calls++; return uint64(calls), 100, nil }, time.Hour)
	for range 1000 {
		if a, _, _ := stat("x"); a != 1 {
			t.Fatalf("avail %d, want the first measurement", a)
		}
	}
	if calls != 1 {
		t.Fatalf("%d measurements for 1000 asks within the interval, want 1", calls)
	}
	if a, _, _ := stat("y"); a != 2 || calls != 2 {
		t.Fatalf("another directory: avail %d after %d measurements, want a new one", a, calls)
	}
	again := sampledStat(func(string) (uint64, uint64, error) { calls++; return 0, 0, nil }, 0)
	again("x")
	again("x")
	if calls != 4 {
		t.Fatalf("with no interval every ask measures: %d calls, want 4", calls)
	}
}
