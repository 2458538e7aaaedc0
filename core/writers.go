package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/silt-io/silt/core/segment"
)

// writerRetention is how long an idle writer id stays bound to its owner.
// It matches the segment logs' memory of writers (segment.Options
// WriterRetention): once a log forgets a writer, its batches are no longer
// recognised as retries, and the id is free to be used again.
const writerRetention = 7 * 24 * time.Hour

// writerOwners binds a stream's writer ids to the principal that first
// used them on any of its segments. Each segment log checks its own
// writers too and keeps the binding durable (in its records and writer
// checkpoint); this table makes the binding stream-wide, so that another
// principal cannot take an id on a segment its owner has not used yet. It
// is rebuilt from the logs on open.
type writerOwners struct {
	mu sync.Mutex
	m  map[string]writerOwner
	// sweepAt is the size at which idle entries are next dropped, so that
	// writer ids that come and go do not grow the table for ever.
	sweepAt int
}

type writerOwner struct {
	owner string
	last  int64 // unix nanoseconds of its last use
}

const minSweep = 1024

func newWriterOwners(logs []*segment.Log) *writerOwners {
	w := &writerOwners{m: map[string]writerOwner{}, sweepAt: minSweep}
	for _, l := range logs {
		l.WriterOwners(func(id, owner string, t int64) {
			// Two owners of one id on two segments can only come from
			// before the stream-wide check; the most recent one keeps it.
			if cur, ok := w.m[id]; !ok || t > cur.last {
				w.m[id] = writerOwner{owner: owner, last: t}
			}
		})
	}
	w.sweepAt = max(minSweep, 2*len(w.m))
	return w
}

// claim binds id to owner, or reports that another owner holds it.
func (w *writerOwners) claim(tenant, stream, id, owner string, now time.Time) error {
	t := now.UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.m[id]; ok && cur.owner != owner && t-cur.last < int64(writerRetention) {
		return writerOwnedErr(AppendRequest{Tenant: tenant, Stream: stream, WriterID: id})
	}
	w.m[id] = writerOwner{owner: owner, last: t}
	if len(w.m) >= w.sweepAt {
		cutoff := t - int64(writerRetention)
		for k, v := range w.m {
			if v.last < cutoff {
				delete(w.m, k)
			}
		}
		w.sweepAt = max(minSweep, 2*len(w.m))
	}
	return nil
}

// writerOwnedErr refuses req's writer id. The owner is not named: the
// caller need not learn who else appends to the stream.
func writerOwnedErr(req AppendRequest) error {
	return fmt.Errorf("%w: writer id %q already belongs to another principal on stream %s/%s; use a writer id of your own",
		ErrWriterOwned, req.WriterID, req.Tenant, req.Stream)
}
