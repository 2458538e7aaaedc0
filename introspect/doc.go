// Package introspect keeps silt's own telemetry as events in streams of
// the reserved tenant silt-system (core/names.SystemTenant): one event per
// request answered by every head, ACL denials, tiering outcomes and
// periodic metric snapshots. They are stored like any other stream (JSON
// lines), so they are read over S3, NFS, WebHDFS and the native API under
// the same grants, and bounded by the streams' own retention.
//
// # Layout
//
// One stream per tenant and kind, "<tenant>.<kind>" (acme.requests,
// acme.denials, acme.tiering), and server-wide streams for what belongs to
// no tenant ("server_wide.requests", ".denials", ".tiering", ".metrics"):
// requests with no tenant, naming a tenant that does not exist, or reading
// silt-system itself. '_' cannot occur in a tenant name, so the server-wide
// streams can never be mistaken for a tenant's. The acl package then lets
// whoever holds admin on a tenant read that tenant's system streams, and
// nobody else but admins on "*" (acl.SystemStreamTenant).
//
// # Cost
//
// Recording never waits: Record puts the event on a bounded queue, and
// one goroutine drains it in batches (one append per stream per batch).
// A full queue drops the event and counts it in
// silt_introspect_events_dropped_total. The writes go to the store
// directly, not through a head, so they make no request events themselves.
package introspect
