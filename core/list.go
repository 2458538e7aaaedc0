package core

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/silt-io/silt/core/catalog"
)

// Paginated listings.
//
// Both listings are one range scan of the catalog's ordered keys, starting
// just after the name a page resumes from, so a page costs what it returns
// whether the node holds a thousand streams or a million: nothing is
// collected from memory or sorted. The catalog is the source of truth for
// what exists (a stream's record is written after its logs and deleted
// before them), so a listing does not need a stream to be loaded.

// MaxListLimit bounds one page of ListTenantsPage and ListStreamsPage.
const MaxListLimit = 10_000

// scanner is the one catalog method the listings need (a seam for tests
// that count the records a page reads).
type scanner interface {
	Scan(prefix, start []byte, fn func(key, value []byte) error) error
}

// ListTenantsPage returns up to limit tenants whose names sort after
// after, in name order. A page shorter than limit is the last one. limit
// must be between 1 and MaxListLimit.
func (s *Store) ListTenantsPage(ctx context.Context, after string, limit int) ([]Tenant, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	return tenantsPage(s.cat, after, limit)
}

// ListStreamsPage returns up to limit streams of tenant whose names sort
// after after, in name order and without segments. A page shorter than
// limit is the last one. limit must be between 1 and MaxListLimit.
func (s *Store) ListStreamsPage(ctx context.Context, tenant, after string, limit int) ([]Stream, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if _, ok, err := s.cat.Get([]byte(keyTenant + tenant)); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
	}
	return streamsPage(s.cat, tenant, after, limit)
}

func checkLimit(limit int) error {
	if limit < 1 || limit > MaxListLimit {
		return fmt.Errorf("%w: list limit %d: want 1 to %d", ErrInvalid, limit, MaxListLimit)
	}
	return nil
}

func tenantsPage(sc scanner, after string, limit int) ([]Tenant, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out []Tenant
	err := scanAfter(sc, keyTenant, after, limit, func(v []byte) error {
		var t Tenant
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode tenant record: %w", err)
		}
		out = append(out, t)
		return nil
	})
	return out, err
}

func streamsPage(sc scanner, tenant, after string, limit int) ([]Stream, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	var out []Stream
	err := scanAfter(sc, keyStream+tenant+"/", after, limit, func(v []byte) error {
		var r streamRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode stream record: %w", err)
		}
		st := r.Stream
		st.Segments = nil
		out = append(out, st)
		return nil
	})
	return out, err
}

// scanAfter calls fn with the values of the first limit keys under prefix
// whose remainder sorts after after. Names hold no NUL byte, so
// prefix+after+"\x00" is the smallest key past after and every key the
// scan visits is one fn is given.
func scanAfter(sc scanner, prefix, after string, limit int, fn func(v []byte) error) error {
	var start []byte
	if after != "" {
		start = []byte(prefix + after + "\x00")
	}
	n := 0
	return sc.Scan([]byte(prefix), start, func(_, v []byte) error {
		if err := fn(v); err != nil {
			return err
		}
		if n++; n == limit {
			return catalog.ErrStop
		}
		return nil
	})
}

// StreamInfo describes a stream from its catalog record alone, without
// segment state: what a listing needs for each entry (incarnation, group),
// at the cost of one catalog read and without touching the stream's logs.
func (s *Store) StreamInfo(ctx context.Context, tenant, name string) (Stream, error) {
	if s.isClosed() {
		return Stream{}, ErrClosed
	}
	v, ok, err := s.cat.Get([]byte(keyStream + tenant + "/" + name))
	if err != nil {
		return Stream{}, err
	}
	if !ok {
		return Stream{}, fmt.Errorf("%w: stream %q in tenant %q", ErrNotFound, name, tenant)
	}
	var r streamRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return Stream{}, fmt.Errorf("decode stream record: %w", err)
	}
	st := r.Stream
	st.Segments = nil
	return st, nil
}
