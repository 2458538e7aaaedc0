package core

import (
	"sync/atomic"

	"go.uber.org/zap"
)

// Progress tells how far an Open has got, so that a caller can say what a
// slow start is waiting for instead of leaving an operator before a
// silent process. Its methods are safe to call while Open runs, and on a
// nil Progress, which reports nothing.
type Progress struct {
	phase  atomic.Int32
	frames atomic.Int64
}

// Phases of an Open, in order.
const (
	PhaseStarting = iota
	PhaseCatalog  // opening the catalog (pebble replays its own log)
	PhaseWAL      // replaying the write-ahead log
	PhaseStreams  // loading the streams
	PhaseOpen     // done
)

// Phase returns the current phase and, in PhaseWAL and after, how many
// write-ahead log frames were read.
func (p *Progress) Phase() (phase int, frames int64) {
	if p == nil {
		return PhaseStarting, 0
	}
	return int(p.phase.Load()), p.frames.Load()
}

func (p *Progress) set(phase int) {
	if p != nil {
		p.phase.Store(int32(phase))
	}
}

func (p *Progress) frame() {
	if p != nil {
		p.frames.Add(1)
	}
}

// OpenWithProgress is Open, reporting its progress in p.
func OpenWithProgress(cfg Config, log *zap.Logger, p *Progress) (*Store, error) {
	return OpenWith(cfg, log, Options{Progress: p})
}
