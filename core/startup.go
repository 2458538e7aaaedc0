package core

// What a start reads, and streams loaded on first use.
//
// A start reads tenants, the write-ahead log since its checkpoint (walstore.go) and the
// notes of interrupted deletions; a stream's record is read from the catalog when the
// stream is first used, and the streams are counted for the limits in the
// background. Nothing here costs in proportion to the streams a node holds, except
// the one sweep of a data directory from an earlier release.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// load reads the catalog's tenant records; stream records are read on
// first use. A data directory whose log directories have never been
// checked against the catalog (one from a release before keySwept, or
// whose write-ahead log has no checkpoint) is checked now: orphans of
// interrupted deletes are removed and every segment with tier-1 files is
// marked as untiered. Otherwise start-up costs in proportion to the
// write-ahead log since its checkpoint and the directories named by
// keyGone records, whatever the number of streams.
func (s *Store) load() error {
	err := s.cat.Scan([]byte(keyTenant), nil, func(_, v []byte) error {
		var t Tenant
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode tenant record: %w", err)
		}
		s.mu.tenants[t.Name] = &tenantState{t: t, streams: map[string]*stream{}}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.removeGone(); err != nil {
		return err
	}
	_, swept, err := s.cat.Get([]byte(keySwept))
	if err != nil {
		return err
	}
	if swept && !s.wal.fresh {
		return nil
	}
	present, err := s.sweep()
	if err != nil {
		return err
	}
	// Segments with tier-1 files that the write-ahead log does not know
	// to be untiered (written by a release before the log, or before the
	// log recorded them) are marked, and a checkpoint records them, so
	// that later starts can rely on the log alone.
	if err := s.seedFromDirs(present); err != nil {
		return err
	}
	if err := s.wal.checkpoint(s.wal.log.End()); err != nil {
		return err
	}
	return s.cat.Set(keySwept, []byte("1"))
}

// removeGone removes the log directories of deleted streams that a crash
// kept from being removed.
func (s *Store) removeGone() error {
	var gone []string
	err := s.cat.Scan([]byte(keyGone), nil, func(k, _ []byte) error {
		gone = append(gone, string(k))
		return nil
	})
	if err != nil || len(gone) == 0 {
		return err
	}
	for _, k := range gone {
		p := filepath.Join(s.logsDir(), filepath.FromSlash(strings.TrimPrefix(k, keyGone)))
		s.log.Info("removing log directory of a deleted stream", zap.String("dir", p))
		if err := s.dirOp(removeDescriptors, func() error { return s.fs.RemoveAll(p) }); err != nil {
			return fmt.Errorf("remove log directory of deleted stream %s: %w", p, err)
		}
	}
	return s.cat.Commit(nil, gone)
}

// sweep checks every log directory against the catalog, removes those no
// stream owns and returns the streams whose directory is there.
func (s *Store) sweep() ([]*stream, error) {
	var tenants []string
	if err := s.dirOp(1, func() (err error) { tenants, err = s.fs.List(s.logsDir()); return err }); err != nil {
		return nil, err
	}
	var present []*stream
	for _, t := range tenants {
		var dirs []string
		if err := s.dirOp(1, func() (err error) { dirs, err = s.fs.List(filepath.Join(s.logsDir(), t)); return err }); err != nil {
			return nil, err
		}
		for _, d := range dirs {
			p := filepath.Join(s.logsDir(), t, d)
			st, err := s.owner(t, d)
			if err != nil {
				return nil, err
			}
			if st == nil {
				s.log.Info("removing log directory of a deleted stream", zap.String("dir", p))
				if err := s.dirOp(removeDescriptors, func() error { return s.fs.RemoveAll(p) }); err != nil {
					return nil, fmt.Errorf("remove orphaned %s: %w", p, err)
				}
				continue
			}
			present = append(present, st)
		}
	}
	return present, nil
}

// owner returns the stream whose log directory is logs/<tenant>/<dir>
// (named <stream>@<incarnation>), or nil. It runs during load, before the
// store is shared.
func (s *Store) owner(tenant, dir string) (*stream, error) {
	i := strings.LastIndexByte(dir, '@')
	if i < 0 {
		return nil, nil
	}
	ts := s.mu.tenants[tenant]
	if ts == nil {
		return nil, nil
	}
	st, err := s.streamLocked(ts, dir[:i])
	if st == nil || err != nil || strconv.FormatInt(st.rec.Incarnation, 10) != dir[i+1:] {
		return nil, err
	}
	return st, nil
}

// streamLocked returns a tenant's stream, reading its record from the
// catalog on its first use since start; it returns nil for a stream that
// does not exist or is still being created. s.mu is held for writing (or
// the store is not shared yet): a deletion commits under it, so a record
// read here cannot be one deleted meanwhile.
func (s *Store) streamLocked(ts *tenantState, name string) (*stream, error) {
	if st, ok := ts.streams[name]; ok {
		return st, nil
	}
	if _, creating := ts.creating[name]; creating {
		return nil, nil
	}
	v, ok, err := s.cat.Get([]byte(keyStream + ts.t.Name + "/" + name))
	if err != nil {
		return nil, fmt.Errorf("%w: read stream record: %w", ErrUnavailable, err)
	}
	if !ok {
		return nil, nil
	}
	var r streamRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("decode stream record %s/%s: %w", ts.t.Name, name, err)
	}
	compact(&r, ts)
	st := newStream(r)
	for i := range st.segs {
		// Its segments may have tier-1 files; the first description
		// learns their bounds (learn).
		st.segs[i].known = false
	}
	ts.streams[name] = st
	return st, nil
}

// startCount counts the streams of every tenant from the catalog's keys
// in the background after start, so that start-up does not wait for it;
// creations and deletions wait for it instead (countDone), so nothing
// changes the count meanwhile.
func (s *Store) startCount() {
	s.countDone = make(chan struct{})
	s.writes.Add(1)
	go func() {
		defer s.writes.Done()
		defer close(s.countDone)
		counts, err := s.countStreams()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			// The next creation counts again (countLocked).
			s.log.Warn("cannot count the streams; the next stream creation counts them", zap.Error(err))
			return
		}
		s.setCountsLocked(counts)
	}()
}

// waitCount waits for the count of startCount.
func (s *Store) waitCount() {
	if s.countDone != nil {
		<-s.countDone
	}
}

// countStreams reads the number of streams of each tenant from the
// catalog's keys.
func (s *Store) countStreams() (map[string]int, error) {
	counts := map[string]int{}
	err := s.cat.Scan([]byte(keyStream), nil, func(k, _ []byte) error {
		rest := strings.TrimPrefix(string(k), keyStream)
		if i := strings.IndexByte(rest, '/'); i > 0 {
			counts[rest[:i]]++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: count streams: %w", ErrUnavailable, err)
	}
	return counts, nil
}

func (s *Store) setCountsLocked(counts map[string]int) {
	n := 0
	for name, ts := range s.mu.tenants {
		ts.count = counts[name] + len(ts.creating)
		n += ts.count
	}
	s.mu.streams, s.mu.counted = n, true
}

// countLocked counts the streams if startCount could not; s.mu is held
// for writing.
func (s *Store) countLocked() error {
	if s.mu.counted {
		return nil
	}
	counts, err := s.countStreams()
	if err != nil {
		return err
	}
	s.setCountsLocked(counts)
	return nil
}

// compact shares the strings every record repeats (tenant, encoding,
// segment ids), so that the stream table costs little per stream.
func compact(r *streamRecord, ts *tenantState) {
	r.Tenant = ts.t.Name
	switch r.Config.Encoding {
	case EncodingLines:
		r.Config.Encoding = EncodingLines
	case EncodingFramed:
		r.Config.Encoding = EncodingFramed
	}
	r.Segments = slices.Clip(r.Segments)
	for i := range r.Segments {
		if id := strconv.Itoa(i); r.Segments[i].ID == id {
			r.Segments[i].ID = id // small numbers' strings are static
		}
	}
}
