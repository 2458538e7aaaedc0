package core

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/silt-io/silt/core/names"
)

// CreateTenant creates a tenant.
func (s *Store) CreateTenant(ctx context.Context, name string, metadata map[string]string) (Tenant, error) {
	if err := names.Tenant(name); err != nil {
		return Tenant{}, invalid(err)
	}
	if err := names.Metadata(metadata); err != nil {
		return Tenant{}, invalid(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return Tenant{}, ErrClosed
	}
	if _, ok := s.mu.tenants[name]; ok {
		return Tenant{}, fmt.Errorf("%w: tenant %q", ErrExists, name)
	}
	t := Tenant{Name: name, Created: time.Now().UTC(), Metadata: metadata}
	v, _ := json.Marshal(t)
	if err := s.setRecord(keyTenant+name, v); err != nil {
		return Tenant{}, catalogErr("create tenant", err)
	}
	s.mu.tenants[name] = &tenantState{t: t, streams: map[string]*stream{}}
	return t, nil
}

// catalogErr makes a failed catalog write a temporary refusal: what fails
// it (a full disk, an I/O error) is cured by the operator or a moment,
// and nothing of the change was kept.
func catalogErr(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

// GetTenant returns one tenant.
func (s *Store) GetTenant(ctx context.Context, name string) (Tenant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ts, ok := s.mu.tenants[name]
	if !ok {
		return Tenant{}, fmt.Errorf("%w: tenant %q", ErrNotFound, name)
	}
	return ts.t, nil
}

// ListTenants returns all tenants in name order.
func (s *Store) ListTenants(ctx context.Context) ([]Tenant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Tenant, 0, len(s.mu.tenants))
	for _, ts := range s.mu.tenants {
		out = append(out, ts.t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteTenant removes a tenant that has no streams.
func (s *Store) DeleteTenant(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts, ok := s.mu.tenants[name]
	if !ok {
		return fmt.Errorf("%w: tenant %q", ErrNotFound, name)
	}
	if len(ts.streams)+len(ts.creating) > 0 {
		return fmt.Errorf("%w: tenant %q still has streams (delete them first)", ErrNotEmpty, name)
	}
	// Streams not used since start are only in the catalog.
	if page, err := streamsPage(s.cat, name, "", 1); err != nil {
		return catalogErr("delete tenant", err)
	} else if len(page) > 0 {
		return fmt.Errorf("%w: tenant %q still has streams (delete them first)", ErrNotEmpty, name)
	}
	if err := s.cat.Delete(keyTenant + name); err != nil {
		return catalogErr("delete tenant", err)
	}
	delete(s.mu.tenants, name)
	return nil
}
