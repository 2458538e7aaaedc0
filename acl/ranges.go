package acl

import (
	"context"
	"slices"
	"strings"

	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/view"
)

// Bounded listings for principals who may see little.
//
// Filtering a listing by grants costs what it reads, not what it shows: a
// device principal granted its own stream in a tenant of 100,000 would
// read the whole tenant for every page, and so would a principal granted
// one tenant of a million. A Ranger names the part of the namespace a
// principal's grants can reach, so that Wrap reads only that part: the
// named tenants, the exact streams, the names that start with a glob's
// literal prefix. Grants that cannot be bounded by name (every tenant, a
// whole tenant, a stream set, a glob that starts with a metacharacter) fall
// back to reading everything and filtering.

// NameRange is the names n with From <= n < To ("" To: no upper bound).
type NameRange struct{ From, To string }

// Ranger is implemented by Authorizers that can bound what a principal's
// grants reach. *Store and AllowAll implement it.
type Ranger interface {
	// VisibleTenants returns the tenants p holds grants in, or all=true
	// when a grant reaches every tenant.
	VisibleTenants(p Principal) (tenants []string, all bool)
	// StreamRanges returns name ranges that hold every stream of tenant
	// on which p may do a, or all=true when they cannot be bounded.
	StreamRanges(p Principal, a Action, tenant string) (ranges []NameRange, all bool)
}

var (
	_ Ranger = (*Store)(nil)
	_ Ranger = AllowAll{}
)

// VisibleTenants implements Ranger.
func (AllowAll) VisibleTenants(Principal) ([]string, bool) { return nil, true }

// StreamRanges implements Ranger.
func (AllowAll) StreamRanges(Principal, Action, string) ([]NameRange, bool) { return nil, true }

// VisibleTenants implements Ranger.
func (s *Store) VisibleTenants(p Principal) ([]string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, e := range s.mu.byPrincipal[p.Name] {
		if e.pat.Kind == PatternAll {
			return nil, true
		}
		out = append(out, e.pat.Tenant)
	}
	if len(s.adminTenantsLocked(p)) > 0 {
		out = append(out, names.SystemTenant)
	}
	slices.Sort(out)
	return slices.Compact(out), false
}

// StreamRanges implements Ranger.
func (s *Store) StreamRanges(p Principal, a Action, tenant string) ([]NameRange, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []NameRange
	for _, e := range s.mu.byPrincipal[p.Name] {
		if !e.grant.Action.implies(a) || !e.pat.Touches(tenant) {
			continue
		}
		switch e.pat.Kind {
		case PatternStream:
			out = append(out, NameRange{From: e.pat.Name, To: e.pat.Name + "\x00"})
		case PatternGlob:
			lit := e.pat.Name
			if i := strings.IndexAny(lit, `*?[\`); i >= 0 {
				lit = lit[:i]
			}
			if lit == "" {
				return nil, true
			}
			out = append(out, NameRange{From: lit, To: nameAfterPrefix(lit)})
		default: // every tenant, the whole tenant, a stream set
			return nil, true
		}
	}
	if tenant == names.SystemTenant && a == Read {
		for _, t := range s.adminTenantsLocked(p) {
			out = append(out, NameRange{From: t + ".", To: nameAfterPrefix(t + ".")})
		}
	}
	slices.SortFunc(out, func(a, b NameRange) int { return strings.Compare(a.From, b.From) })
	return out, false
}

// nameAfterPrefix is the smallest string above every name starting with p.
// Stream names are ASCII, so the last byte can always be raised.
func nameAfterPrefix(p string) string { return p[:len(p)-1] + string(p[len(p)-1]+1) }

// readRanges lists up to limit entries of dir after after that lie in
// ranges (sorted by From) and that keep accepts. Each range is read from
// its start, so what lies between ranges is never read; after only moves
// forward, so overlapping ranges show an entry once.
func (w *wrapped) readRanges(ctx context.Context, dir string, ranges []NameRange, after string, limit int, keep func(string) bool) ([]view.FileInfo, error) {
	var out []view.FileInfo
	for _, rg := range ranges {
		if rg.To != "" && rg.To <= after {
			continue
		}
		from := max(after, names.Before(rg.From))
		for {
			// An exact name needs one entry; a prefix range what is left
			// of the page and one more.
			n := min(limit-len(out)+1, view.DefaultPageSize)
			if rg.To == rg.From+"\x00" {
				n = 1
			}
			page, err := w.v.ReadDir(ctx, dir, from, n)
			if err != nil {
				return nil, err
			}
			done := len(page) < n
			for _, fi := range page {
				if rg.To != "" && fi.Name >= rg.To {
					done = true
					break
				}
				from = fi.Name
				if keep(fi.Name) {
					if len(out) == limit {
						return out, nil
					}
					out = append(out, fi)
				}
			}
			if from > after {
				after = from
			}
			if done {
				break
			}
		}
	}
	return out, nil
}

// readTenants lists up to limit of the given tenants (sorted) after after
// that exist in the root of the view.
func (w *wrapped) readTenants(ctx context.Context, tenants []string, after string, limit int) ([]view.FileInfo, error) {
	var out []view.FileInfo
	for _, t := range tenants {
		if t <= after {
			continue
		}
		page, err := w.v.ReadDir(ctx, "/", names.Before(t), 1)
		if err != nil {
			return nil, err
		}
		if len(page) == 1 && page[0].Name == t {
			out = append(out, page[0])
			if len(out) == limit {
				return out, nil
			}
		}
	}
	return out, nil
}
