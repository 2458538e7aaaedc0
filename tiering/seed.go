package tiering

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
)

// SeedChunks records n chunks of segment seg of st in the catalog as the
// tierer would have committed them, each of chunkEvents events and size
// bytes, without writing any tier-2 object. It exists for benchmarks and
// tests of listings far larger than sealing could produce in their time (a
// million chunks): every view lists the chunks, but opening one fails, as
// its object is missing. It must not be used on a stream that a running
// Tierer tiers.
func SeedChunks(cat *catalog.Catalog, st core.Stream, seg string, n, chunkEvents int, size int64) error {
	if n < 0 || chunkEvents < 1 || size < 0 {
		return fmt.Errorf("tiering: SeedChunks needs n >= 0, chunkEvents >= 1, size >= 0")
	}
	found := false
	rec := StreamRecord{Tenant: st.Tenant, Stream: st.Name, Encoding: st.Config.Encoding, Created: st.Created, Incarnation: st.Incarnation()}
	for _, s := range st.Segments {
		rec.Segments = append(rec.Segments, s.ID)
		found = found || s.ID == seg
	}
	if !found {
		return fmt.Errorf("tiering: stream %s/%s has no segment %q", st.Tenant, st.Name, seg)
	}
	sv, _ := json.Marshal(rec)
	if err := cat.Set(streamKey(st.Tenant, st.Name), sv); err != nil {
		return err
	}
	now := time.Now().UTC()
	const perCommit = 10000
	batch := make(map[string][]byte, perCommit)
	var segRec SegmentRecord
	for i := 0; i < n; i++ {
		first := uint64(i) * uint64(chunkEvents)
		c := ChunkRecord{
			Segment: seg, FirstOffset: first, LastOffset: first + uint64(chunkEvents) - 1,
			Events: chunkEvents, Size: size, MD5: "d41d8cd98f00b204e9800998ecf8427e",
			FirstTime: now, LastTime: now, Sealed: now,
		}
		c.Name = ChunkName(rec.Encoding, c.FirstOffset, c.LastOffset)
		c.Key = ObjectKey(st.Tenant, st.Name, seg, c.Name)
		v, _ := json.Marshal(c)
		batch[chunkKey(st.Tenant, st.Name, seg, first)] = v
		segRec = SegmentRecord{Tiered: c.LastOffset + 1, Chunks: i + 1, Bytes: int64(i+1) * size, LastSeal: now}
		if len(batch) == perCommit || i == n-1 {
			gv, _ := json.Marshal(segRec)
			batch[segmentKey(st.Tenant, st.Name, seg)] = gv
			if err := cat.Commit(batch, nil); err != nil {
				return err
			}
			clear(batch)
		}
	}
	return nil
}
