// Package catalog is silt's metadata store: a thin layer over pebble that
// makes every change durable (pebble.Sync) before it returns, so that a
// tenant, stream, principal or grant that was acknowledged survives a crash.
//
// Keys are byte strings with a one-word prefix per kind of record (see the
// users of the package); values are whatever the caller encodes. The catalog
// knows nothing about what it stores.
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

// Catalog is safe for concurrent use.
type Catalog struct {
	db *pebble.DB
}

// Open opens (creating if needed) the catalog in dir.
func Open(dir string) (*Catalog, error) {
	opts := &pebble.Options{
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		FS:                 privateFS{vfs.Default},
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", dir, err)
	}
	return &Catalog{db: db}, nil
}

// Close flushes and closes the catalog.
func (c *Catalog) Close() error { return c.db.Close() }

// Get returns a copy of the value stored at key; ok is false when the key is
// absent.
func (c *Catalog) Get(key []byte) (value []byte, ok bool, err error) {
	v, closer, err := c.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("catalog get: %w", err)
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

// Scan calls fn for each key with the given prefix, in key order, starting
// at the first key >= start (start may be nil). fn's slices are only valid
// during the call. Returning ErrStop from fn ends the scan without error.
func (c *Catalog) Scan(prefix, start []byte, fn func(key, value []byte) error) error {
	lower := prefix
	if bytes.Compare(start, prefix) > 0 {
		lower = start
	}
	it, err := c.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(prefix)})
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
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return it.Error()
}

// ErrStop ends a Scan early.
var ErrStop = errors.New("catalog: stop scan")

// Commit atomically and durably applies puts (key → value) and deletes.
func (c *Catalog) Commit(set map[string][]byte, del []string) error {
	b := c.db.NewBatch()
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

// Set durably stores one key.
func (c *Catalog) Set(key string, value []byte) error {
	return c.Commit(map[string][]byte{key: value}, nil)
}

// Delete durably removes one key.
func (c *Catalog) Delete(key string) error { return c.Commit(nil, []string{key}) }

// DeletePrefix durably removes every key with the given prefix.
func (c *Catalog) DeletePrefix(prefix string) error {
	p := []byte(prefix)
	if err := c.db.DeleteRange(p, prefixEnd(p), pebble.Sync); err != nil {
		return fmt.Errorf("catalog delete range: %w", err)
	}
	return nil
}

// CompactPrefix rewrites the catalog's tables under prefix, so that the
// values overwritten or deleted there no longer sit in any file once the
// superseded files are removed (in the background, or by Close). Callers
// use it after replacing values that must not stay on disk, such as
// secrets written in clear by an earlier version.
func (c *Catalog) CompactPrefix(prefix string) error {
	p := []byte(prefix)
	end := prefixEnd(p)
	if end == nil {
		return fmt.Errorf("catalog compact: prefix %q has no upper bound", prefix)
	}
	if err := c.db.Compact(context.Background(), p, end, false); err != nil {
		return fmt.Errorf("catalog compact %q: %w", prefix, err)
	}
	return nil
}

// prefixEnd returns the smallest key greater than every key with prefix p,
// or nil when p is all 0xff (no upper bound).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// quietLogger drops pebble's informational chatter; errors still surface
// through returned errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{})  {}
func (quietLogger) Errorf(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	fmt.Fprintf(io.Discard, format, args...)
	panic(fmt.Sprintf(format, args...))
}
