package introspect

import (
	"errors"

	"github.com/silt-io/silt/acl"
)

// Authorizer returns a that records every refusal as a denial event of
// head. It keeps a's listing filters (acl.Lister, acl.Ranger), which
// decide what a listing shows rather than refuse anything, so that a
// listing makes no denial events. A nil recorder returns a unchanged.
func (r *Recorder) Authorizer(head string, a acl.Authorizer) acl.Authorizer {
	if r == nil {
		return a
	}
	d := &denials{Authorizer: a, r: r, head: head}
	d.l, _ = a.(acl.Lister)
	d.g, _ = a.(acl.Ranger)
	return d
}

type denials struct {
	acl.Authorizer
	r    *Recorder
	head string
	l    acl.Lister
	g    acl.Ranger
}

func (d *denials) Authorize(p acl.Principal, a acl.Action, res acl.Resource) error {
	err := d.Authorizer.Authorize(p, a, res)
	if err != nil && errors.Is(err, acl.ErrDenied) {
		d.r.Record(Event{Kind: KindDenial, Head: d.head, Principal: p.Name, Tenant: res.Tenant, Stream: res.Stream,
			Action: string(a), Reason: err.Error()})
	}
	return err
}

// Covers implements acl.Lister.
func (d *denials) Covers(p acl.Principal, a acl.Action, res acl.Resource) bool {
	if d.l != nil {
		return d.l.Covers(p, a, res)
	}
	return d.Authorizer.Authorize(p, a, res) == nil
}

// Visible implements acl.Lister.
func (d *denials) Visible(p acl.Principal, tenant string) bool {
	if d.l != nil {
		return d.l.Visible(p, tenant)
	}
	return d.Authorizer.Authorize(p, acl.Read, acl.Resource{Tenant: tenant}) == nil
}

// VisibleTenants implements acl.Ranger.
func (d *denials) VisibleTenants(p acl.Principal) ([]string, bool) {
	if d.g != nil {
		return d.g.VisibleTenants(p)
	}
	return nil, true
}

// StreamRanges implements acl.Ranger.
func (d *denials) StreamRanges(p acl.Principal, a acl.Action, tenant string) ([]acl.NameRange, bool) {
	if d.g != nil {
		return d.g.StreamRanges(p, a, tenant)
	}
	return nil, true
}
