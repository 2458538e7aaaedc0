package tiering

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
)

// Backpressure that heals a full tier 1.
//
// Tier 1 must never reach ENOSPC: appends would fail part-way, and the
// catalog commits that let tiering drain tier 1 need space too. So the
// limit is measured, not guessed: the free space of core.dir's filesystem
// is read (statfs, cheap enough for every append) and appends are
//
//   - refused node-wide while the free space is below min_free_bytes (by
//     default 5% of the filesystem, at least 4 MiB and at most 1 GiB),
//     whatever fills the disk;
//   - refused node-wide while the backlog not yet in tier 2 is above
//     backlog_share of the space it can use (free space plus itself),
//     unless max_backlog_bytes sets a fixed bound per stream instead;
//   - slowed (up to maxPace each) over the last quarter before either.
//
// Uploads need no tier-1 space (the s3 backend buffers in memory, fs and
// hdfs write straight to tier 2), so tiering drains a full tier 1 once
// tier 2 is back, and appends resume by themselves. Draining includes
// each segment's active file: truncation never removes it, and on a disk
// smaller than core.segment_file_bytes it may hold all there is, so while
// space is short a fully tiered one is rolled and removed (freeActive).

// Auto min_free_bytes bounds.
const (
	minFreeFloor = 4 << 20
	minFreeCeil  = 1 << 30
	// maxPace is the longest an append is slowed before refusals start.
	maxPace = 100 * time.Millisecond
)

// minFree is the free space below which appends are refused.
func (c Config) minFree(total uint64) uint64 {
	if c.MinFreeBytes > 0 {
		return uint64(c.MinFreeBytes)
	}
	return min(max(total/20, minFreeFloor), minFreeCeil)
}

// diskSampleEvery is how often tier 1's filesystem is measured at most:
// backpressure asks on every append, and a busy node should pay one statfs
// per interval, not one per request. Space runs out no faster than the
// floor (at least 4 MiB) is written in this time.
const diskSampleEvery = 50 * time.Millisecond

// sampledStat returns stat, remembering each answer for every.
func sampledStat(stat func(string) (uint64, uint64, error), every time.Duration) func(string) (uint64, uint64, error) {
	var mu sync.Mutex
	var at time.Time
	var dir string
	var avail, total uint64
	var err error
	return func(d string) (uint64, uint64, error) {
		mu.Lock()
		defer mu.Unlock()
		if d != dir || time.Since(at) >= every {
			avail, total, err = stat(d)
			at, dir = time.Now(), d
		}
		return avail, total, err
	}
}

// pressure is the node-wide state of tier 1's space.
type pressure struct {
	refuse error         // non-nil: appends are refused
	pace   time.Duration // how long to slow an append otherwise
}

// diskPressure measures tier 1's filesystem against the backlog.
func (t *Tierer) diskPressure() pressure {
	avail, total, err := t.statDisk(t.store.Dir())
	if err != nil {
		return pressure{}
	}
	floor := t.cfg.minFree(total)
	backlog := max(t.backlog.Load(), 0)
	if avail < floor {
		return pressure{refuse: fmt.Errorf("%w: tier 1 has no space left on device for appends: %s free, below tiering.min_free_bytes (%s); appends resume as tiering frees space%s",
			core.ErrUnavailable, bytesText(avail), bytesText(floor), t.lastErrText())}
	}
	// Slowing starts at twice the floor, and at three quarters of the
	// backlog's share.
	frac := 1 - float64(avail-floor)/float64(floor)
	if t.cfg.MaxBacklogBytes == 0 {
		limit := t.cfg.BacklogShare * float64(avail+uint64(backlog))
		if float64(backlog) > limit {
			return pressure{refuse: fmt.Errorf("%w: %s not yet in tier 2, above tiering.backlog_share (%.2f) of tier 1's space for it; appends resume as tiering catches up%s",
				core.ErrUnavailable, bytesText(uint64(backlog)), t.cfg.BacklogShare, t.lastErrText())}
		}
		frac = max(frac, (float64(backlog)/limit-0.75)*4)
	}
	if frac <= 0 {
		return pressure{}
	}
	return pressure{pace: time.Duration(min(frac, 1) * float64(maxPace))}
}

// lastErrText names the latest tiering failure, if any, as the likely
// cause of a backlog.
func (t *Tierer) lastErrText() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var last *segState
	for s := range t.mu.failing {
		if last == nil || s.lastErrAt.After(last.lastErrAt) {
			last = s
		}
	}
	if last == nil {
		return ""
	}
	return fmt.Sprintf("; last tiering error: %v", last.lastErr)
}

// AppendsRefused reports why appends are refused node-wide (tier 1 short
// of space, or the backlog above its share), or nil while they are not:
// the readiness answer, so that a load balancer can tell.
func (t *Tierer) AppendsRefused() error { return t.diskPressure().refuse }

func bytesText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// ErrDiskFull is returned (wrapped) by CheckStartSpace.
var ErrDiskFull = errors.New("tier 1 is full")

// CheckStartSpace fails when the filesystem that holds (or will hold)
// coreDir has less free space than appends need, before anything opens
// it: the metadata store cannot even replay its log on a full disk, and
// starting a node that refuses every append helps nobody. The message
// says what to do.
func CheckStartSpace(cfg Config, coreDir string) error {
	return checkStartSpace(cfg, coreDir, statDisk)
}

func checkStartSpace(cfg Config, coreDir string, statDisk func(string) (uint64, uint64, error)) error {
	dir, err := filepath.Abs(coreDir)
	if err != nil {
		return err
	}
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	avail, total, err := statDisk(dir)
	if err != nil {
		return nil // not measurable here: nothing to check
	}
	if floor := cfg.minFree(total); avail < floor {
		return fmt.Errorf("%w: the filesystem of core.dir (%s) has %s free of %s, below the %s silt needs (tiering.min_free_bytes): free space there (remove other files or grow the filesystem) and start again; tiering then moves tier 1 to tier 2 by itself",
			ErrDiskFull, coreDir, bytesText(avail), bytesText(total), bytesText(floor))
	}
	return nil
}

// tight reports whether tier 1 is short enough of space that tiered
// files should be removed at once rather than in batches.
func (t *Tierer) tight() bool {
	p := t.diskPressure()
	return p.refuse != nil || p.pace > 0
}

// freeActive rolls the segment's active file and removes it, if every
// event in it is below tiered (the segment is fully tiered), and reports
// whether the tier-1 files below tiered are gone. It is done only while
// tier 1 is short of space: rolling otherwise would leave a new file per
// commit of an idle segment. The segment leaves the unrolled set either
// way: if it is not fully tiered, or busy, its next commit puts it back.
func (t *Tierer) freeActive(ref core.SegmentRef, tiered uint64) bool {
	t.mu.Lock()
	delete(t.mu.unrolled, ref)
	t.mu.Unlock()
	log := t.log.With(zap.String("stream", ref.Tenant+"/"+ref.Stream), zap.String("segment", ref.Segment))
	rolled, err := t.store.Roll(ref.Tenant, ref.Stream, ref.Segment, tiered)
	if err != nil {
		if !errors.Is(err, core.ErrNotFound) {
			log.Warn("roll the fully tiered active file of a segment to free tier 1", zap.Error(err))
		}
		return false
	}
	if !rolled {
		return false
	}
	if err := t.store.TruncateBefore(ref.Tenant, ref.Stream, ref.Segment, tiered); err != nil && !errors.Is(err, core.ErrNotFound) {
		log.Warn("truncate tier 1 after rolling a fully tiered segment", zap.Error(err))
		return false
	}
	t.m.rolls.Inc()
	return true
}

// freeUnrolled frees the active files of the segments that tiered all
// they held while space was plentiful, once it is short: they are no
// longer in the pass's work set, and appends (refused now) will not bring
// them back.
func (t *Tierer) freeUnrolled() {
	if !t.tight() {
		return
	}
	t.mu.Lock()
	refs := make(map[core.SegmentRef]uint64, len(t.mu.unrolled))
	maps.Copy(refs, t.mu.unrolled)
	t.mu.Unlock()
	for ref, tiered := range refs {
		t.freeActive(ref, tiered)
	}
}
