package acl

import (
	"context"
	"fmt"

	"github.com/silt-io/silt/view"
)

// Lister is what Wrap uses, when the Authorizer has it, to filter listings
// without building a denial error per hidden entry. *Store and AllowAll
// implement it.
type Lister interface {
	Covers(p Principal, a Action, r Resource) bool
	Visible(p Principal, tenant string) bool
}

// Wrap returns a View that shows v as p may see it: every operation is
// checked for Read against a, so that the heads never check access
// themselves.
//
//   - "/" can always be listed, but shows only the tenants that are
//     Visible to p (hold any grant of p).
//   - "/<tenant>" needs Read on the tenant (which the tenant-listing rule
//     allows to anyone who holds a grant inside it) and lists only the
//     streams p Covers for Read.
//   - Anything at or below "/<tenant>/<stream>" needs Read on the stream.
//
// A denial wraps view.ErrPermission together with the Authorizer's error
// (so acl.ErrDenied and, for Anonymous, acl.ErrUnauthenticated stay
// visible to errors.Is). Access is decided from the path alone, before v
// is asked anything, so a denied request learns nothing about whether the
// entry exists: a missing and an existing stream the principal may not
// read both answer ErrPermission. That is why denial never turns into
// ErrNotFound here, and why heads can report a plain "access denied".
//
// Stream-set grants ("<tenant>/set:<s>") apply when v is a
// view.StreamSets (the tier-2 view is): the stream's set fills
// Resource.Set, as the native API does. Without it only tenant, name,
// glob and "*" grants take effect.
func Wrap(v view.View, a Authorizer, p Principal) view.View {
	w := &wrapped{v: v, a: a, p: p}
	w.l, _ = a.(Lister)
	w.r, _ = a.(Ranger)
	w.g, _ = v.(view.StreamSets)
	return w
}

type wrapped struct {
	v view.View
	a Authorizer
	l Lister          // nil when a cannot filter cheaply
	r Ranger          // nil when a cannot bound what p may see
	g view.StreamSets // nil when v does not know stream sets
	p Principal
}

// resource is the ACL resource of a tenant's stream, with its stream set.
func (w *wrapped) resource(ctx context.Context, tenant, stream string) Resource {
	r := Resource{Tenant: tenant, Stream: stream}
	if w.g != nil {
		r.Set = w.g.StreamSet(ctx, tenant, stream)
	}
	return r
}

// check authorizes access to path. It returns the path's elements.
func (w *wrapped) check(ctx context.Context, p string) ([]string, error) {
	parts, err := view.Split(p)
	if err != nil {
		return nil, err
	}
	var r Resource
	switch len(parts) {
	case 0:
		return parts, nil // the root is listable by everyone; ReadDir filters it
	case 1:
		r = Resource{Tenant: parts[0]}
	default:
		r = w.resource(ctx, parts[0], parts[1])
	}
	if err := w.a.Authorize(w.p, Read, r); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", view.ErrPermission, p, err)
	}
	return parts, nil
}

func (w *wrapped) visible(tenant string) bool {
	if w.l != nil {
		return w.l.Visible(w.p, tenant)
	}
	return w.a.Authorize(w.p, Read, Resource{Tenant: tenant}) == nil
}

func (w *wrapped) covers(ctx context.Context, tenant, stream string) bool {
	r := w.resource(ctx, tenant, stream)
	if w.l != nil {
		return w.l.Covers(w.p, Read, r)
	}
	return w.a.Authorize(w.p, Read, r) == nil
}

// Stat implements view.View.
func (w *wrapped) Stat(ctx context.Context, p string) (view.FileInfo, error) {
	if _, err := w.check(ctx, p); err != nil {
		return view.FileInfo{}, err
	}
	return w.v.Stat(ctx, p)
}

// Open implements view.View.
func (w *wrapped) Open(ctx context.Context, p string) (view.File, error) {
	if _, err := w.check(ctx, p); err != nil {
		return nil, err
	}
	return w.v.Open(ctx, p)
}

// ReadDir implements view.View. Filtered listings keep the paging
// contract (a short page means the end): hidden entries are skipped by
// reading further pages until limit visible entries are found or the
// underlying listing ends.
func (w *wrapped) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	parts, err := w.check(ctx, dir)
	if err != nil {
		return nil, err
	}
	limit = view.Limit(limit)
	var keep func(name string) bool
	switch len(parts) {
	case 0:
		keep = w.visible
		if w.r != nil {
			if tenants, all := w.r.VisibleTenants(w.p); !all {
				return w.readTenants(ctx, tenants, after, limit)
			}
		}
	case 1:
		tenant := parts[0]
		keep = func(name string) bool { return w.covers(ctx, tenant, name) }
		if w.r != nil {
			if ranges, all := w.r.StreamRanges(w.p, Read, tenant); !all {
				return w.readRanges(ctx, dir, ranges, after, limit, keep)
			}
		}
	default:
		return w.v.ReadDir(ctx, dir, after, limit)
	}
	var out []view.FileInfo
	for {
		page, err := w.v.ReadDir(ctx, dir, after, limit)
		if err != nil {
			return nil, err
		}
		for _, fi := range page {
			if keep(fi.Name) {
				out = append(out, fi)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		if len(page) < limit {
			return out, nil
		}
		after = page[len(page)-1].Name
	}
}

var (
	_ Lister = (*Store)(nil)
	_ Lister = AllowAll{}
)
