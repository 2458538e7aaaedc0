// Package acl is silt's one access-control model: principals, their bearer
// tokens, and grants of actions on tenants and streams. Every protocol head
// (S3, NFS, WebHDFS, the native API) turns its own credentials into a
// Principal and asks the same Authorizer, so a rule means the same thing
// whichever head a request arrives through. Protocol-specific
// authentication (SigV4, NFS export rules, OAuth2) lives in the heads; the
// Store only keeps silt's own bearer tokens, which heads may check with
// Store.Authenticate.
//
// # Actions
//
// There are three actions: read, append and admin. Admin implies read and
// append on whatever the grant covers; read and append are independent of
// each other (a producer that may append cannot read back, a reader may not
// append).
//
// # Grant resources
//
// A grant names a principal, an action and a resource pattern:
//
//	"*"                   everything, including server-wide operations
//	                      (Resource{Tenant: ""}: creating tenants, managing
//	                      principals, tokens and grants)
//	"<tenant>"            the tenant itself and every stream in it
//	"<tenant>/<stream>"   exactly that stream
//	"<tenant>/<glob>"     streams whose names match the path.Match pattern,
//	                      e.g. "acme/click*"; the tenant itself is not covered
//	"<tenant>/set:<s>"    streams in stream set s (created with that Set);
//	                      "<tenant>/group:<s>" is its deprecated spelling
//
// Tenant names follow S3 bucket rules (3–63 characters of lowercase letters,
// digits and '-', starting and ending with a letter or digit). Stream and
// stream-set names are 1–200 characters of [A-Za-z0-9._-] starting with a letter
// or digit. There is no wildcard over tenants other than "*": a tenant is
// the isolation unit, and "acme/clicks" never covers "other/clicks".
//
// # Decisions
//
// Access is denied unless a grant allows it. Authorize allows an action on
// a resource when one of the principal's grants covers it (Covers), or when
// the tenant-listing rule applies: reading a tenant itself
// (Resource{Tenant: t}, e.g. listing its streams) is allowed to anyone who
// holds any grant inside t, so that a principal granted one stream can find
// it; the caller filters the listing with Covers. Visible reports the same
// "any grant inside the tenant" condition for filtering lists of tenants.
//
// Creating or deleting a stream is an admin action. Callers should pass the
// stream's name (and set) in the Resource: then admin on the tenant, on a
// glob matching the new name, on the set, or on exactly that stream name
// allows it, while admin on some other stream does not. Passing only
// Resource{Tenant: t} demands admin on the tenant (or "*").
//
// # The system tenant
//
// The tenant silt-system (core/names.SystemTenant) holds silt's own
// telemetry, one stream per tenant and kind ("acme.requests"). One rule is
// derived from the grants for it: whoever holds admin on a tenant (the
// tenant pattern, or "*") may read that tenant's streams there, and list
// the system tenant to find them (Visible, VisibleTenants, StreamRanges
// follow). No grant is stored for it, so it comes and goes with the admin
// grant. Grants on silt-system itself work as on any tenant.
//
// # Anonymous
//
// Unauthenticated requests act as Anonymous. It may be granted like any
// principal (without being created), and is denied everything else. Grants
// to Anonymous apply to unauthenticated requests only; an authenticated
// principal gets exactly its own grants. A denial of Anonymous also wraps
// ErrUnauthenticated, so a head can answer with an authentication challenge
// instead of a plain refusal.
package acl

import (
	"errors"
	"fmt"
	"github.com/silt-io/silt/core/names"
	"strings"
)

// Errors returned by the package; callers map them to protocol errors with
// errors.Is. The wrapping message names the principal, action and resource
// involved, or the naming rule that was broken.
var (
	ErrDenied          = errors.New("acl: access denied")
	ErrUnauthenticated = errors.New("acl: not authenticated")
	ErrNotFound        = errors.New("acl: not found")
	ErrExists          = errors.New("acl: already exists")
	ErrInvalid         = errors.New("acl: invalid")
)

// Action is what an operation does to a resource.
type Action string

// The actions. Admin implies Read and Append on what it covers.
const (
	Read   Action = "read"
	Append Action = "append"
	Admin  Action = "admin"
)

// ParseAction parses an action name, ignoring case and surrounding spaces
// so that CLI and config input need not be exact.
func ParseAction(s string) (Action, error) {
	switch a := Action(strings.ToLower(strings.TrimSpace(s))); a {
	case Read, Append, Admin:
		return a, nil
	}
	return "", fmt.Errorf("%w: action %q: want read, append or admin", ErrInvalid, s)
}

func (a Action) valid() bool { return a == Read || a == Append || a == Admin }

// implies reports whether holding a grants b.
func (a Action) implies(b Action) bool { return a == b || (a == Admin && b.valid()) }

// Principal is who is asking. Heads build it from whatever credential their
// protocol carries.
type Principal struct{ Name string }

// Anonymous is the principal of unauthenticated requests. It is denied
// everything unless granted explicitly.
var Anonymous = Principal{Name: "anonymous"}

// Resource is what an operation touches. Tenant "" means the whole server
// (creating tenants, managing principals and grants). Stream "" means the
// tenant itself. Set is the stream's stream set, if any; it is what
// "<tenant>/set:<s>" grants match, so callers must fill it in for
// operations on a stream in a set.
type Resource struct{ Tenant, Stream, Set string }

// String describes r for error messages.
func (r Resource) String() string {
	switch {
	case r.Tenant == "":
		return "the server"
	case r.Stream == "":
		return "tenant " + r.Tenant
	case r.Set != "":
		return fmt.Sprintf("stream %s/%s (set %s)", r.Tenant, r.Stream, r.Set)
	}
	return fmt.Sprintf("stream %s/%s", r.Tenant, r.Stream)
}

// grantString is the narrowest grant resource that would cover r; denials
// quote it so that the user knows what to ask an admin for.
func (r Resource) grantString() string {
	switch {
	case r.Tenant == "":
		return "*"
	case r.Stream == "":
		return r.Tenant
	}
	return r.Tenant + "/" + r.Stream
}

// Authorizer decides whether p may do a on r. It returns nil or an error
// wrapping ErrDenied that says who, what and where.
type Authorizer interface {
	Authorize(p Principal, a Action, r Resource) error
}

// AllowAll allows everything. It exists for the insecure development mode,
// which the caller must log loudly; never use it otherwise.
type AllowAll struct{}

// Authorize always allows.
func (AllowAll) Authorize(Principal, Action, Resource) error { return nil }

// Covers always reports true, matching Store.Covers for listing filters.
func (AllowAll) Covers(Principal, Action, Resource) bool { return true }

// Visible always reports true, matching Store.Visible for listing filters.
func (AllowAll) Visible(Principal, string) bool { return true }

// deny builds the error for a refused request. Anonymous denials also wrap
// ErrUnauthenticated: presenting credentials is the likely fix.
func deny(p Principal, a Action, r Resource) error {
	if p == Anonymous {
		return fmt.Errorf("%w: %w: anonymous requests may not %s %s; authenticate, or have an admin grant %s on %q to anonymous",
			ErrDenied, ErrUnauthenticated, a, r, a, r.grantString())
	}
	if p.Name == "" {
		return fmt.Errorf("%w: no principal given for %s on %s", ErrDenied, a, r)
	}
	if !a.valid() {
		return fmt.Errorf("%w: principal %q asked for unknown action %q on %s", ErrDenied, p.Name, a, r)
	}
	return fmt.Errorf("%w: principal %q may not %s %s; it needs a grant of %s (or admin) on %q or wider",
		ErrDenied, p.Name, a, r, a, r.grantString())
}

const (
	maxPrincipalLen = 64
	minTenantLen    = 3
	maxTenantLen    = 63
	maxStreamLen    = 200
)

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// checkPrincipalName enforces the principal naming rule. The character set
// is small so that names are safe in URLs, file names, logs and the
// SigV4/Kerberos-style user fields heads map them from.
func checkPrincipalName(name string) error {
	if name == Anonymous.Name {
		return fmt.Errorf("%w: principal name %q is reserved for unauthenticated requests", ErrInvalid, name)
	}
	return checkGrantee(name)
}

// checkGrantee is checkPrincipalName without the reservation: anonymous may
// hold grants.
func checkGrantee(name string) error {
	const rule = "want 1-64 characters of a-z, 0-9, '.', '_', '@', '-', starting with a letter or digit"
	if name == "" || len(name) > maxPrincipalLen {
		return fmt.Errorf("%w: principal name %q: %s", ErrInvalid, name, rule)
	}
	if !isLower(name[0]) && !isDigit(name[0]) {
		return fmt.Errorf("%w: principal name %q: %s", ErrInvalid, name, rule)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !isLower(c) && !isDigit(c) && c != '.' && c != '_' && c != '@' && c != '-' {
			return fmt.Errorf("%w: principal name %q: %s", ErrInvalid, name, rule)
		}
	}
	return nil
}

// checkTenantName applies the shared tenant rule (S3 bucket names, since
// tenants are served as buckets).
func checkTenantName(name string) error {
	if err := names.Tenant(name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}

// checkStreamName applies the shared stream rule; what (a stream or a
// stream set) goes into the message.
func checkStreamName(what, name string) error {
	if err := names.Stream(name); err != nil {
		return fmt.Errorf("%w: %s name: %v", ErrInvalid, what, err)
	}
	return nil
}

func isStreamChar(c byte) bool {
	return isLower(c) || isUpper(c) || isDigit(c) || c == '.' || c == '_' || c == '-'
}
