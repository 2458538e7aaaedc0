// Package tierview serves the tier-2 chunk catalog as a view.View: the
// namespace every head shows. Tenants come from core; streams, segment
// directories and chunks from the tiering catalog; chunk bytes from the
// tier-2 backend. Every listing is one range scan from the requested
// position, so a page costs the same wherever it is in a large directory.
package tierview

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
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

var _ view.View = (*View)(nil)

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
	if err != nil || !ok {
		return r, false, err
	}
	st, err := v.store.GetStream(ctx, tenant, name)
	if errors.Is(err, core.ErrNotFound) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
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
		m, err := v.manifest(p, r)
		if err != nil {
			return view.FileInfo{}, err
		}
		return m.info, nil
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

func (v *View) listTenants(ctx context.Context, after string, limit int) ([]view.FileInfo, error) {
	// Tenants live in core's memory, already sorted.
	ts, err := v.store.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	i := sort.Search(len(ts), func(i int) bool { return ts[i].Name > after })
	var out []view.FileInfo
	for ; i < len(ts) && len(out) < limit; i++ {
		out = append(out, dirInfo("/"+ts[i].Name, ts[i].Name, ts[i].Created))
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
	names := []string{view.ManifestName}
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
			m, err := v.manifest(p, r)
			if err != nil {
				return nil, err
			}
			out = append(out, m.info)
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
		m, err := v.manifest(p, r)
		if err != nil {
			return nil, err
		}
		return memFile{bytes.NewReader(m.data)}, nil
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

type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// Manifest is the content of a stream's _manifest.json.
type Manifest struct {
	Format   int               `json:"format"`
	Tenant   string            `json:"tenant"`
	Stream   string            `json:"stream"`
	Encoding core.Encoding     `json:"encoding"`
	Created  time.Time         `json:"created"`
	Segments []ManifestSegment `json:"segments"`
}

// ManifestSegment lists one segment's chunks in offset order.
type ManifestSegment struct {
	Segment string `json:"segment"`
	Path    string `json:"path"`
	// TieredOffset is the offset after the last chunk's last event.
	TieredOffset uint64          `json:"tiered_offset"`
	Chunks       []ManifestChunk `json:"chunks"`
}

// ManifestChunk describes one chunk file.
type ManifestChunk struct {
	Name        string    `json:"name"`
	FirstOffset uint64    `json:"first_offset"`
	LastOffset  uint64    `json:"last_offset"`
	Events      int       `json:"events"`
	Size        int64     `json:"size"`
	MD5         string    `json:"md5"`
	CRC32C      uint32    `json:"crc32c"`
	FirstTime   time.Time `json:"first_time"`
	LastTime    time.Time `json:"last_time"`
	Sealed      time.Time `json:"sealed"`
}

type manifest struct {
	info view.FileInfo
	data []byte
}

// manifest generates a stream's manifest from the catalog. Its bytes
// depend only on the committed chunks, so they are stable until the next
// chunk; its ModTime is the latest seal.
func (v *View) manifest(p string, r tiering.StreamRecord) (manifest, error) {
	m := Manifest{Format: 1, Tenant: r.Tenant, Stream: r.Stream, Encoding: r.Encoding, Created: r.Created}
	mtime := r.Created
	for _, id := range r.Segments {
		seg := ManifestSegment{Segment: id, Path: view.SegmentPrefix + id, Chunks: []ManifestChunk{}}
		err := tiering.ScanChunks(v.cat, r.Tenant, r.Stream, id, func(c tiering.ChunkRecord) error {
			seg.Chunks = append(seg.Chunks, ManifestChunk{
				Name: c.Name, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset, Events: c.Events,
				Size: c.Size, MD5: c.MD5, CRC32C: c.CRC32C, FirstTime: c.FirstTime, LastTime: c.LastTime, Sealed: c.Sealed,
			})
			seg.TieredOffset = c.LastOffset + 1
			if c.Sealed.After(mtime) {
				mtime = c.Sealed
			}
			return nil
		})
		if err != nil {
			return manifest{}, err
		}
		m.Segments = append(m.Segments, seg)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return manifest{}, err
	}
	data = append(data, '\n')
	sum := md5.Sum(data)
	return manifest{
		info: view.FileInfo{Name: view.ManifestName, Size: int64(len(data)), ModTime: mtime, ETag: hex.EncodeToString(sum[:]), ID: view.PathID(p)},
		data: data,
	}, nil
}
