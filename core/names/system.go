package names

import (
	"errors"
	"fmt"
	"strings"
)

// SystemTenant is the tenant silt keeps its own telemetry in (the
// introspection streams, introspect/). Only the server writes it: no
// user, admins included, may create, delete or write to it, or create
// streams or reader groups in it; it is read like any other tenant,
// through the same grants.
const SystemTenant = "silt-system"

// ErrReserved is wrapped when a request would change the system tenant.
var ErrReserved = errors.New("reserved name")

// SystemRule states the reservation in error messages and docs.
const SystemRule = "tenant " + SystemTenant + " is reserved for silt's own telemetry: it is read-only to every user, admins included"

// CheckWritable refuses changes to tenant when it is the system tenant;
// what names the change (e.g. "create", "append to") goes into the message.
func CheckWritable(tenant, what string) error {
	if tenant == SystemTenant {
		return fmt.Errorf("%w: cannot %s %s: %s", ErrReserved, what, tenant, SystemRule)
	}
	return nil
}

// SystemStreamTenant is the tenant a stream of the system tenant belongs
// to: its name up to the first '.' when that is a tenant name
// ("acme.requests" is acme's), else "" (server-wide streams, whose prefix
// holds a '_' no tenant name can have). Only the server names these
// streams, so the prefix is trusted.
func SystemStreamTenant(stream string) string {
	t, _, ok := strings.Cut(stream, ".")
	if !ok || Tenant(t) != nil || t == SystemTenant {
		return ""
	}
	return t
}
