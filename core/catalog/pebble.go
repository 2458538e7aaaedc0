package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleBackend keeps the catalog in the data directory: one node, every
// change made by this process.
type pebbleBackend struct {
	db *pebble.DB
}

func openPebble(dir string) (*pebbleBackend, error) {
	opts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		FS:                 privateFS{vfs.Default},
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", dir, err)
	}
	return &pebbleBackend{db: db}, nil
}

func (p *pebbleBackend) close() error { return p.db.Close() }

func (p *pebbleBackend) get(key []byte) ([]byte, bool, error) {
	v, closer, err := p.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("catalog get: %w", err)
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

func (p *pebbleBackend) scan(prefix, start []byte, fn func(key, value []byte) error) error {
	lower := prefix
	if bytes.Compare(start, prefix) > 0 {
		lower = start
	}
	if len(lower) == 0 {
		// No bound rather than an empty one, which pebble's invariant
		// checks (race builds) index into.
		lower = nil
	}
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return fmt.Errorf("catalog scan: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return fmt.Errorf("catalog scan: %w", err)
		}
		if err := fn(it.Key(), v); err != nil {
			return err
		}
	}
	return it.Error()
}

func (p *pebbleBackend) commit(set map[string][]byte, del []string) error {
	b := p.db.NewBatch()
	defer b.Close()
	for k, v := range set {
		if err := b.Set([]byte(k), v, nil); err != nil {
			return err
		}
	}
	for _, k := range del {
		if err := b.Delete([]byte(k), nil); err != nil {
			return err
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("catalog commit: %w", err)
	}
	return nil
}

func (p *pebbleBackend) deletePrefix(prefix []byte) error {
	end := prefixEnd(prefix)
	if end == nil {
		// DeleteRange needs an end; a prefix of only 0xff bytes is
		// covered by the largest key pebble can order after it.
		end = bytes.Repeat([]byte{0xff}, len(prefix)+1024)
	}
	if err := p.db.DeleteRange(prefix, end, pebble.Sync); err != nil {
		return fmt.Errorf("catalog delete range: %w", err)
	}
	return nil
}

func (p *pebbleBackend) compactPrefix(prefix []byte) error {
	end := prefixEnd(prefix)
	if end == nil {
		return fmt.Errorf("catalog compact: prefix %q has no upper bound", prefix)
	}
	if err := p.db.Compact(context.Background(), prefix, end, false); err != nil {
		return fmt.Errorf("catalog compact %q: %w", prefix, err)
	}
	return nil
}

func (p *pebbleBackend) watch(string, func(string, []byte, bool)) func() { return func() {} }

func (p *pebbleBackend) shared() bool { return false }

func (p *pebbleBackend) txnLimits() (int, int) { return 0, 0 }

// quietLogger drops pebble's informational chatter; errors still surface
// through returned errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(io.Discard, format, args...)
	panic(fmt.Sprintf(format, args...))
}
