package segment

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/silt-io/silt/core/vfs"
)

// writersFile is the writer-table checkpoint in a segment's directory. The
// table is otherwise rebuilt from the records; TruncateBefore writes the
// checkpoint (temp file, fsync, rename, directory fsync) before it removes
// any file, so the writers whose last batch lived in removed files are
// still known after a restart. Recovery loads it first and lets the
// records still on disk, which are all newer, override it.
const (
	writersFile = "writers.json"
	writersTemp = "writers.json.tmp"
)

type writersCheckpoint struct {
	Version int            `json:"version"`
	Writers []writerRecord `json:"writers"`
}

type writerRecord struct {
	ID    string `json:"id"`
	Owner string `json:"owner,omitempty"`
	Seq   uint64 `json:"seq"`
	First uint64 `json:"first"`
	Count int    `json:"count"`
	Time  int64  `json:"time"` // unix nanoseconds of the batch
}

// committedWritersLocked returns the committed writer states, dropping
// from memory those idle for longer than the retention.
func (l *Log) committedWritersLocked() []writerRecord {
	cutoff := l.opts.Now().Add(-l.opts.WriterRetention).UnixNano()
	out := make([]writerRecord, 0, len(l.mu.writers))
	for id, ws := range l.mu.writers {
		if ws.g != nil {
			// In flight: its record lands in the active file, which is
			// never truncated, and the next checkpoint has it.
			continue
		}
		if ws.time < cutoff {
			delete(l.mu.writers, id)
			continue
		}
		out = append(out, writerRecord{ID: id, Owner: ws.owner, Seq: ws.seq, First: ws.first, Count: ws.count, Time: ws.time})
	}
	return out
}

func (l *Log) saveWriters(ws []writerRecord) error {
	data, err := json.Marshal(writersCheckpoint{Version: 1, Writers: ws})
	if err != nil {
		return err
	}
	if err := vfs.WriteFileDurable(l.opts.FS, l.opts.Dir, writersTemp, writersFile, data); err != nil {
		return fmt.Errorf("write writer checkpoint in %s: %w", l.opts.Dir, err)
	}
	return nil
}

// loadWriters fills the writer table from the checkpoint, if there is one,
// leaving out writers idle for longer than the retention.
func (l *Log) loadWriters() error {
	f, err := l.opts.FS.Open(filepath.Join(l.opts.Dir, writersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open writer checkpoint: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("stat writer checkpoint: %w", err)
	}
	data := make([]byte, size)
	if _, err := f.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read writer checkpoint: %w", err)
	}
	var c writersCheckpoint
	if err := json.Unmarshal(data, &c); err != nil || c.Version != 1 {
		// The checkpoint is renamed into place only once synced, so this
		// is damage, not a torn write: refuse rather than forget writers.
		return &CorruptionError{Dir: l.opts.Dir, File: writersFile, Err: fmt.Errorf("undecodable writer checkpoint (version %d): %v", c.Version, err)}
	}
	cutoff := l.opts.Now().Add(-l.opts.WriterRetention).UnixNano()
	for _, w := range c.Writers {
		if w.Time >= cutoff {
			l.mu.writers[w.ID] = &writerState{owner: w.Owner, seq: w.Seq, first: w.First, count: w.Count, time: w.Time}
		}
	}
	return nil
}

// WriterOwners calls fn for each remembered writer that has an owner, with
// the time of its last batch, so that the caller can bind writer ids to
// owners across segments.
func (l *Log) WriterOwners(fn func(id, owner string, time int64)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, ws := range l.mu.writers {
		if ws.owner != "" {
			fn(id, ws.owner, ws.time)
		}
	}
}
