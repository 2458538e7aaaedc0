// Package tierview serves the tier-2 chunk catalog as a view.View: the
// namespace every head shows. Tenants come from core; streams, segment
// directories and chunks from the tiering catalog; chunk bytes from the
// tier-2 backend. Every listing is one range scan from the requested
// position, so a page costs the same wherever it is in a large directory.
package tierview

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/tiering"
	"github.com/silt-io/silt/view"
)

// View is the tier-2 view. It is safe for concurrent use.
type View struct {
	store *core.Store
	cat   *catalog.Catalog
	be    tiering.Backend
}

// New returns the view of what store's tierer has put into be.
func New(store *core.Store, be tiering.Backend) *View {
	return &View{store: store, cat: store.Catalog(), be: be}
}

var (
	_ view.View       = (*View)(nil)
	_ view.StreamSets = (*View)(nil)
)

// StreamSet implements view.StreamSets from the stream's config in
// core's catalog record (no segment state is read).
func (v *View) StreamSet(ctx context.Context, tenant, stream string) string {
	st, err := v.store.StreamInfo(ctx, tenant, stream)
	if err != nil {
		return ""
	}
	return st.Config.Set
}

// epoch is the root's ModTime: fixed, so that it is stable.
var epoch = time.Unix(0, 0).UTC()

func notFound(p string) error { return fmt.Errorf("%w: %s", view.ErrNotFound, p) }

func dirInfo(p, name string, mtime time.Time) view.FileInfo {
	return view.FileInfo{Name: name, ModTime: mtime, IsDir: true, ID: view.PathID(p)}
}

func chunkInfo(p string, c tiering.ChunkRecord) view.FileInfo {
	return view.FileInfo{Name: c.Name, Size: c.Size, ModTime: c.Sealed, ETag: c.MD5, ID: view.PathID(p)}
}

// stream returns a stream's tiering record if it belongs to the stream's
// current incarnation in core; records of a deleted stream wait for the
// tierer to remove them and are not shown meanwhile.
func (v *View) stream(ctx context.Context, tenant, name string) (tiering.StreamRecord, bool, error) {
	r, ok, err := tiering.GetStream(v.cat, tenant, name)
	if err != nil {
		return r, false, err
	}
	st, err := v.store.StreamInfo(ctx, tenant, name)
	if errors.Is(err, core.ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if !ok {
		// The tierer records a stream when it first has work for it; one
		// that never had an event is shown as it is, empty.
		r = tiering.StreamRecord{Tenant: tenant, Stream: name, Encoding: st.Config.Encoding, Created: st.Created, Incarnation: st.Incarnation(), Prefix: st.Config.TierPrefix}
		for _, seg := range st.Segments {
			r.Segments = append(r.Segments, seg.ID)
		}
	}
	return r, st.Incarnation() == r.Incarnation, nil
}

func segmentID(r tiering.StreamRecord, dirName string) (string, bool) {
	id, ok := strings.CutPrefix(dirName, view.SegmentPrefix)
	if !ok {
		return "", false
	}
	for _, s := range r.Segments {
		if s == id {
			return id, true
		}
	}
	return "", false
}

// Stat implements view.View.
func (v *View) Stat(ctx context.Context, p string) (view.FileInfo, error) {
	parts, err := view.Split(p)
	if err != nil {
		return view.FileInfo{}, err
	}
	if len(parts) == 0 {
		return dirInfo("/", "/", epoch), nil
	}
	t, err := v.store.GetTenant(ctx, parts[0])
	if errors.Is(err, core.ErrNotFound) {
		return view.FileInfo{}, notFound(p)
	}
	if err != nil {
		return view.FileInfo{}, err
	}
	if len(parts) == 1 {
		return dirInfo(p, t.Name, t.Created), nil
	}
	r, ok, err := v.stream(ctx, parts[0], parts[1])
	if err != nil {
		return view.FileInfo{}, err
	}
	if !ok {
		return view.FileInfo{}, notFound(p)
	}
	if len(parts) == 2 {
		return dirInfo(p, r.Stream, r.Created), nil
	}
	if len(parts) == 3 && parts[2] == view.ManifestName {
		m, ok, err := tiering.GetManifest(v.cat, r.Tenant, r.Stream)
		if err != nil {
			return view.FileInfo{}, err
		}
		if !ok {
			return view.FileInfo{}, notFound(p)
		}
		return manifestInfo(p, m), nil
	}
	id, ok := segmentID(r, parts[2])
	if !ok {
		return view.FileInfo{}, notFound(p)
	}
	if len(parts) == 3 {
		return dirInfo(p, parts[2], r.Created), nil
	}
	if len(parts) > 4 {
		return view.FileInfo{}, notFound(p)
	}
	c, ok, err := tiering.GetChunk(v.cat, r.Tenant, r.Stream, id, parts[3])
	if err != nil {
		return view.FileInfo{}, err
	}
	if !ok {
		return view.FileInfo{}, notFound(p)
	}
	return chunkInfo(p, c), nil
}

// ReadDir implements view.View.
func (v *View) ReadDir(ctx context.Context, dir, after string, limit int) ([]view.FileInfo, error) {
	fi, err := v.Stat(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir {
		return nil, fmt.Errorf("%w: %s", view.ErrNotDir, dir)
	}
	limit = view.Limit(limit)
	parts, _ := view.Split(dir)
	switch len(parts) {
	case 0:
		return v.listTenants(ctx, after, limit)
	case 1:
		return v.listStreams(ctx, dir, parts[0], after, limit)
	case 2:
		return v.listStream(ctx, dir, parts[0], parts[1], after, limit)
	default:
		r, _, err := v.stream(ctx, parts[0], parts[1])
		if err != nil {
			return nil, err
		}
		id, _ := segmentID(r, parts[2])
		cs, err := tiering.ListChunks(v.cat, parts[0], parts[1], id, after, limit)
		if err != nil {
			return nil, err
		}
		out := make([]view.FileInfo, len(cs))
		for i, c := range cs {
			out[i] = chunkInfo(view.Join(dir, c.Name), c)
		}
		return out, nil
	}
}

// listTenants reads the tenants from core's catalog a page at a time, from
// the requested position: a page costs what it returns however many
// tenants the node holds.
func (v *View) listTenants(ctx context.Context, after string, limit int) ([]view.FileInfo, error) {
	var out []view.FileInfo
	for len(out) < limit {
		want := min(limit-len(out), core.MaxListLimit)
		ts, err := v.store.ListTenantsPage(ctx, after, want)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out = append(out, dirInfo("/"+t.Name, t.Name, t.Created))
		}
		if len(ts) < want {
			break
		}
		after = ts[len(ts)-1].Name
	}
	return out, nil
}

func (v *View) listStreams(ctx context.Context, dir, tenant, after string, limit int) ([]view.FileInfo, error) {
	var out []view.FileInfo
	for len(out) < limit {
		want := limit - len(out)
		rs, err := tiering.ListStreams(v.cat, tenant, after, want)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			// Skip records left by a deleted stream; keep filling the page,
			// since a short page means the listing ended.
			if _, ok, err := v.stream(ctx, tenant, r.Stream); err != nil {
				return nil, err
			} else if ok {
				out = append(out, dirInfo(view.Join(dir, r.Stream), r.Stream, r.Created))
			}
			after = r.Stream
		}
		if len(rs) < want {
			break
		}
	}
	return out, nil
}

// listStream lists a stream directory: the manifest and one directory per
// segment (a stream has at most core's max_segments of them).
func (v *View) listStream(ctx context.Context, dir, tenant, stream, after string, limit int) ([]view.FileInfo, error) {
	r, _, err := v.stream(ctx, tenant, stream)
	if err != nil {
		return nil, err
	}
	m, hasManifest, err := tiering.GetManifest(v.cat, r.Tenant, r.Stream)
	if err != nil {
		return nil, err
	}
	var names []string
	if hasManifest {
		names = append(names, view.ManifestName)
	}
	for _, id := range r.Segments {
		names = append(names, view.SegmentPrefix+id)
	}
	sort.Strings(names)
	var out []view.FileInfo
	for i := sort.SearchStrings(names, after); i < len(names) && len(out) < limit; i++ {
		if names[i] <= after {
			continue
		}
		p := view.Join(dir, names[i])
		if names[i] == view.ManifestName {
			out = append(out, manifestInfo(p, m))
			continue
		}
		out = append(out, dirInfo(p, names[i], r.Created))
	}
	return out, nil
}

// Open implements view.View.
func (v *View) Open(ctx context.Context, p string) (view.File, error) {
	fi, err := v.Stat(ctx, p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir {
		return nil, fmt.Errorf("%w: %s", view.ErrIsDir, p)
	}
	parts, _ := view.Split(p)
	r, _, err := v.stream(ctx, parts[0], parts[1])
	if err != nil {
		return nil, err
	}
	if len(parts) == 3 {
		return v.openManifest(ctx, p, r)
	}
	id, _ := segmentID(r, parts[2])
	c, ok, err := tiering.GetChunk(v.cat, r.Tenant, r.Stream, id, parts[3])
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound(p)
	}
	o, err := v.be.Open(ctx, c.Key)
	if errors.Is(err, tiering.ErrNotExist) {
		// Removed by the tierer (stream deleted) since the Stat.
		return nil, notFound(p)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return o, nil
}

// manifestInfo describes the manifest object a record names. Its ModTime
// is the latest change it reflects, so it is stable until the next one.
func manifestInfo(p string, m tiering.ManifestRecord) view.FileInfo {
	return view.FileInfo{Name: view.ManifestName, Size: m.Size, ModTime: m.Modified, ETag: m.MD5, ID: view.PathID(p)}
}

// openManifest opens the stream's manifest object in tier 2.
func (v *View) openManifest(ctx context.Context, p string, r tiering.StreamRecord) (view.File, error) {
	m, ok, err := tiering.GetManifest(v.cat, r.Tenant, r.Stream)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound(p)
	}
	o, err := v.be.Open(ctx, m.Key)
	if errors.Is(err, tiering.ErrNotExist) {
		return nil, notFound(p)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	// The object may already be a rewrite newer than the record (its
	// record follows the upload); the heads take the size from the open
	// object, so what they serve is always one whole manifest.
	return o, nil
}

// Manifest is the content of a stream's _manifest.json.
type Manifest = tiering.Manifest
