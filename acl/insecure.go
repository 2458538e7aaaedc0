package acl

// InsecureDev is the authorizer of the insecure development mode: requests
// that present no credential (Anonymous) may do anything, and every other
// principal — one that a head authenticated from a token, an access key or
// an export binding — gets exactly what a decides for it. The mode exists
// to try silt without setting up principals; it must not turn a read-only
// token into an admin one, or the grants that token could then give itself
// would outlive the mode.
func InsecureDev(a Authorizer) Authorizer { return insecureDev{a: a} }

type insecureDev struct{ a Authorizer }

func (d insecureDev) Authorize(p Principal, act Action, r Resource) error {
	if p == Anonymous {
		return nil
	}
	return d.a.Authorize(p, act, r)
}

// Covers and Visible keep listings filtered the same way (Lister).
func (d insecureDev) Covers(p Principal, act Action, r Resource) bool {
	if p == Anonymous {
		return true
	}
	if l, ok := d.a.(Lister); ok {
		return l.Covers(p, act, r)
	}
	return d.a.Authorize(p, act, r) == nil
}

func (d insecureDev) Visible(p Principal, tenant string) bool {
	if p == Anonymous {
		return true
	}
	if l, ok := d.a.(Lister); ok {
		return l.Visible(p, tenant)
	}
	return d.a.Authorize(p, Read, Resource{Tenant: tenant}) == nil
}
