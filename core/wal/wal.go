// Package wal is a node's write-ahead log: one log that the appends of
// every segment go to, so that concurrent appends to any number of
// segments share one write and one fdatasync (docs/format/wal.md).
//
// Group commit works as in core/segment before it: the first writer to
// find no flush in flight becomes the leader, takes everything queued,
// writes it with one write, syncs once, acknowledges each writer in log
// order and repeats while more arrived in the meantime. What is queued is
// a Writer (a segment's pending batches), not bytes: the writer keeps
// taking batches until the leader seals it, so a busy segment puts all of
// its batches of one round into one frame.
//
// Acknowledging a round (each writer's Done, which writes its segment's
// file) is pipelined with the next round: the leader hands a durable round
// to the log's applier goroutine and goes on to write and sync the next
// one, so that the many file writes of a round over many segments overlap
// the next sync instead of adding to it. The applier acknowledges one
// round after the other; the writers of a large round (distinct
// segments) are acknowledged by a few goroutines at once.
//
// A failed write or sync poisons the log: every writer of that round and
// every one queued behind it fails, and nothing is acknowledged until a
// later write (after a short pause) has cut the failed one away.
package wal

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Errors.
var (
	ErrClosed      = errors.New("wal: closed")
	ErrUnavailable = errors.New("wal: log unavailable after an I/O error")
)

// retryAfterFailure is how long a poisoned log refuses writers before the
// next round tries the backend again, so that a full disk is not hammered
// by every request.
const retryAfterFailure = time.Second

// Writer is one queued unit of a round: a segment's batches.
type Writer interface {
	// Seal is called once, by the leader that takes the writer; it returns
	// the frame body, after which the writer takes no more batches. A nil
	// body means there is nothing left to log (the writer failed
	// meanwhile); Done is still called.
	Seal() [][]byte
	// Done is called in log order once the round is durable, with the
	// position of the writer's frame, or with the error that failed the
	// round. Done runs on the log's applier, while the next round may be
	// written: it must not block on other writers.
	Done(end uint64, err error)
}

// Options configure a Log.
type Options struct {
	Backend Backend
	Log     *zap.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
	// Linger is how long a leader waits before it takes a round, so
	// that more appends join it: with a backend that costs a request per
	// write (objects), fewer and larger writes. 0: none, the round takes
	// what queued while the last one was written.
	Linger time.Duration
	// LingerBytes ends the wait early once the queued writers that can
	// tell (Sizer) hold this many bytes; 0: the wait is Linger.
	LingerBytes int64
}

// Sizer is a Writer that can tell how many bytes it holds so far, so that
// a lingering leader can stop waiting once a round is large enough.
type Sizer interface {
	PendingBytes() int64
}

// Log is the write-ahead log. It is safe for concurrent use.
type Log struct {
	opts Options
	be   Backend

	// rounds carries written rounds (or failed ones) from the leader to
	// the applier, in log order.
	rounds  chan round
	applied chan struct{} // closed when the applier ends

	mu struct {
		sync.Mutex
		queue    []Writer
		leading  bool
		end      uint64 // position of the next frame
		applied  uint64 // every Done for frames below it has returned
		failed   error
		failedAt time.Time
		closed   bool
		idle     *sync.Cond // signalled when a leader stops
	}
}

// round is one leader's write: its writers, each one's frame position, and
// the error that failed it (then end is unused).
type round struct {
	ws  []Writer
	at  []uint64
	end uint64
	err error
}

// Open returns a Log that writes at end, the position Backend.Recover
// returned. Close stops its applier goroutine.
func Open(opts Options, end uint64) *Log {
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := &Log{opts: opts, be: opts.Backend}
	l.mu.end, l.mu.applied = end, end
	l.mu.idle = sync.NewCond(&l.mu.Mutex)
	l.rounds = make(chan round, 1)
	l.applied = make(chan struct{})
	go l.apply()
	return l
}

// applyWorkers is how many goroutines acknowledge one round's writers
// together when it has many. Each Done writes its segment's file (a
// syscall that does not need this core): with hundreds of segments in a
// round, one goroutine writing them one after the other is what the next
// round waits for.
const (
	applyWorkers  = 4
	applyParallel = 16 // fewer writers than this are acknowledged in line
)

// apply acknowledges rounds in log order. The writers of one round belong
// to distinct segments (a segment queues its next writer only once the
// leader has sealed the last), so they may be acknowledged in any order
// among themselves; rounds are acknowledged one after the other.
func (l *Log) apply() {
	defer close(l.applied)
	for r := range l.rounds {
		done := func(i int) {
			if r.err != nil {
				r.ws[i].Done(0, r.err)
			} else {
				r.ws[i].Done(r.at[i], nil)
			}
		}
		if n := len(r.ws); n < applyParallel {
			for i := range n {
				done(i)
			}
		} else {
			var next atomic.Int64
			var wg sync.WaitGroup
			for range applyWorkers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
						done(i)
					}
				}()
			}
			wg.Wait()
		}
		if r.err == nil {
			l.mu.Lock()
			l.mu.applied = r.end
			l.mu.Unlock()
		}
	}
}

// Enqueue queues w for the next round. It reports whether the caller must
// run Lead (once it holds none of the locks that w's Seal or Done take):
// the first writer to find no leader leads.
func (l *Log) Enqueue(w Writer) (lead bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return false, ErrClosed
	}
	if l.mu.failed != nil {
		if l.opts.Now().Sub(l.mu.failedAt) < retryAfterFailure {
			return false, l.mu.failed
		}
		// The next round tries the backend again; it cuts the failed
		// write away before writing.
		l.mu.failed = nil
	}
	l.mu.queue = append(l.mu.queue, w)
	if l.mu.leading {
		return false, nil
	}
	l.mu.leading = true
	return true, nil
}

// Lead writes rounds until the queue is empty.
func (l *Log) Lead() {
	var hdrs []byte
	var bufs [][]byte
	var bodies [][][]byte
	for {
		if l.opts.Linger > 0 {
			l.linger()
		}
		l.mu.Lock()
		ws := l.mu.queue
		if len(ws) == 0 && !l.mu.closed {
			// Leadership ends under the same lock that found the queue
			// empty: a writer enqueued after an unlock here would be
			// told a leader runs, and wait for a round nobody writes.
			l.mu.leading = false
			l.mu.idle.Broadcast()
			l.mu.Unlock()
			return
		}
		if l.mu.closed {
			// Enqueue refuses writers once closed: none arrives while
			// the queue is failed outside the lock.
			l.mu.queue = nil
			l.mu.Unlock()
			if len(ws) > 0 {
				l.rounds <- round{ws: ws, err: ErrClosed}
			}
			l.mu.Lock()
			l.mu.leading = false
			l.mu.idle.Broadcast()
			l.mu.Unlock()
			return
		}
		l.mu.queue = nil
		pos := l.mu.end
		l.mu.Unlock()

		// Seal outside the log's lock: writers enqueue while holding
		// their own, which Seal takes.
		bodies = bodies[:0]
		need := 0
		for _, w := range ws {
			b := w.Seal()
			bodies = append(bodies, b)
			if b != nil {
				need += FrameHeaderSize
			}
		}
		if cap(hdrs) < need {
			hdrs = make([]byte, need)
		}
		hdrs = hdrs[:need]
		bufs = bufs[:0]
		at := make([]uint64, len(ws))
		p, h := pos, 0
		for i, b := range bodies {
			at[i] = p
			if b != nil {
				hdr := hdrs[h : h+FrameHeaderSize]
				h += FrameHeaderSize
				frameHeader(hdr, p, b)
				bufs = append(bufs, hdr)
				bufs = append(bufs, b...)
				p += FrameHeaderSize
				for _, part := range b {
					p += uint64(len(part))
				}
			}
		}
		var err error
		if p > pos {
			err = l.be.Write(pos, bufs, int64(p-pos))
		}
		clear(bufs) // the bodies belong to their writers
		if err != nil {
			l.fail(ws, err)
			continue
		}
		l.mu.Lock()
		l.mu.end = p
		l.mu.Unlock()
		l.rounds <- round{ws: ws, at: at, end: p}
	}
}

// lingerStep is how often a lingering leader looks at the queued bytes.
const lingerStep = time.Millisecond

// linger waits Linger before a round, or less once the queue holds
// LingerBytes; not at all with nothing queued (the leader then stops) or
// once the log is closed.
func (l *Log) linger() {
	deadline := time.Now().Add(l.opts.Linger)
	for {
		l.mu.Lock()
		ws := append([]Writer(nil), l.mu.queue...)
		closed := l.mu.closed
		l.mu.Unlock()
		if len(ws) == 0 || closed {
			return
		}
		if l.opts.LingerBytes <= 0 {
			time.Sleep(time.Until(deadline))
			return
		}
		var n int64
		for _, w := range ws {
			if s, ok := w.(Sizer); ok {
				n += s.PendingBytes()
			}
		}
		left := time.Until(deadline)
		if n >= l.opts.LingerBytes || left <= 0 {
			return
		}
		time.Sleep(min(lingerStep, left))
	}
}

// fail poisons the log after a failed round: ws and every writer queued
// behind them fail, since their frames would follow bytes of unknown
// durability.
func (l *Log) fail(ws []Writer, err error) {
	err = fmt.Errorf("%w: %w", ErrUnavailable, err)
	l.mu.Lock()
	l.mu.failed = err
	l.mu.failedAt = l.opts.Now()
	ws = append(ws, l.mu.queue...)
	l.mu.queue = nil
	l.mu.Unlock()
	l.opts.Log.Error("write-ahead log write failed; appends fail until it recovers", zap.Error(err))
	l.rounds <- round{ws: ws, err: err}
}

// End returns the position after the last durable frame.
func (l *Log) End() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.end
}

// Applied returns the position below which every frame is durable and its
// writer's Done has returned (a checkpoint may start there).
func (l *Log) Applied() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.applied
}

// Backend returns the log's backend, for checkpoints and truncation, which
// must not run concurrently with each other.
func (l *Log) Backend() Backend { return l.be }

// Close fails writers still queued, waits for the round in flight to be
// written and acknowledged, stops the applier and closes the backend.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return nil
	}
	l.mu.closed = true
	for l.mu.leading {
		l.mu.idle.Wait()
	}
	ws := l.mu.queue
	l.mu.queue = nil
	l.mu.Unlock()
	if len(ws) > 0 {
		l.rounds <- round{ws: ws, err: ErrClosed}
	}
	close(l.rounds)
	<-l.applied
	return l.be.Close()
}
