package tiering

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
)

// ManifestName is the file name of a stream's manifest, in tier 2 next to
// its segment directories and in every view. The '_' makes Hadoop, Spark
// and Hive skip it when they read the stream's directory.
const ManifestName = "_manifest.json"

// keyManifest records the manifest object last written for a stream:
//
//	tier/m/<tenant>/<stream>   ManifestRecord
const keyManifest = "tier/m/"

func manifestKey(tenant, stream string) string { return keyManifest + tenant + "/" + stream }

// ManifestRecord describes the manifest object in tier 2, committed after
// the object is durable, so that a view can describe it without reading it.
type ManifestRecord struct {
	Key     string    `json:"key"`
	Size    int64     `json:"size"`
	MD5     string    `json:"md5"`
	Written time.Time `json:"written"`
	// Modified is the latest seal or retention change it reflects.
	Modified time.Time `json:"modified"`
}

// GetManifest returns a stream's manifest record.
func GetManifest(cat *catalog.Catalog, tenant, stream string) (ManifestRecord, bool, error) {
	var m ManifestRecord
	ok, err := getJSON(cat, manifestKey(tenant, stream), &m)
	return m, ok, err
}

// Manifest is the content of a stream's _manifest.json (docs/format/tier2.md):
// enough for a tool without silt to know what tier 2 holds, resume after
// the last tiered offset and verify every chunk.
type Manifest struct {
	Format   int               `json:"format"`
	Tenant   string            `json:"tenant"`
	Stream   string            `json:"stream"`
	Encoding core.Encoding     `json:"encoding"`
	Created  time.Time         `json:"created"`
	Written  time.Time         `json:"written"`
	Segments []ManifestSegment `json:"segments"`
}

// ManifestSegment lists one segment's chunks in offset order.
type ManifestSegment struct {
	Segment string `json:"segment"`
	Path    string `json:"path"`
	// FirstOffset is the first offset still in tier 2 (retention deleted
	// what was below); TieredOffset the offset after the last tiered event.
	FirstOffset  uint64          `json:"first_offset"`
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

// writeManifest streams r's manifest, built from the catalog, to w: one
// chunk per line, so that it is never held in memory whole however many
// chunks a stream has. It returns the latest seal it lists.
func writeManifest(w io.Writer, cat *catalog.Catalog, r StreamRecord, written time.Time) (time.Time, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	head, _ := json.Marshal(Manifest{Format: 1, Tenant: r.Tenant, Stream: r.Stream, Encoding: r.Encoding, Created: r.Created, Written: written})
	// The head's last bytes are `"segments":null}`; the segments follow
	// in place of the null.
	head = head[:len(head)-len("null}")]
	bw.Write(head)
	bw.WriteString("[\n")
	modified := r.Created
	for i, id := range r.Segments {
		sr, err := GetSegment(cat, r.Tenant, r.Stream, id)
		if err != nil {
			return time.Time{}, err
		}
		if sr.LastSeal.After(modified) {
			modified = sr.LastSeal
		}
		seg, _ := json.Marshal(ManifestSegment{Segment: id, Path: "segment=" + id, FirstOffset: sr.First, TieredOffset: sr.Tiered})
		seg = seg[:len(seg)-len("null}")]
		if i > 0 {
			bw.WriteString(",\n")
		}
		bw.Write(seg)
		bw.WriteString("[")
		n := 0
		err = ScanChunks(cat, r.Tenant, r.Stream, id, func(c ChunkRecord) error {
			line, _ := json.Marshal(ManifestChunk{
				Name: c.Name, FirstOffset: c.FirstOffset, LastOffset: c.LastOffset, Events: c.Events,
				Size: c.Size, MD5: c.MD5, CRC32C: c.CRC32C, FirstTime: c.FirstTime, LastTime: c.LastTime, Sealed: c.Sealed,
			})
			if n > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n")
			_, err := bw.Write(line)
			n++
			return err
		})
		if err != nil {
			return time.Time{}, err
		}
		bw.WriteString("]}")
	}
	bw.WriteString("\n]}\n")
	return modified, bw.Flush()
}

// manifestEvery is how often a stream that seals on every scan, with more
// to seal, gets its manifest rewritten; one that has caught up gets it in
// the same scan. Rewriting costs a pass over the stream's chunk records, so a
// busy stream does not pay it per chunk.
const manifestEvery = 10 * time.Second

// maybeWriteManifest rewrites a stream's manifest in tier 2 when chunks
// changed since it was written and either the stream is not busy (it
// sealed nothing in this pass, or has nothing left to seal) or
// manifestEvery has passed.
func (t *Tierer) maybeWriteManifest(ctx context.Context, ss *streamState, busy bool) {
	now := t.now()
	if !ss.manifestDirty || (busy && now.Sub(ss.manifestWritten) < manifestEvery) || now.Before(ss.manifestRetry) {
		return
	}
	if err := t.writeManifest(ctx, ss, now); err != nil {
		if ctx.Err() == nil {
			ss.manifestRetry = now.Add(t.cfg.Retry.Initial)
			t.m.errors.Inc()
			t.log.Warn("writing the stream manifest failed; will retry", zap.String("stream", ss.tenant+"/"+ss.name), zap.Error(err))
		}
		return
	}
	ss.manifestDirty, ss.manifestWritten = false, now
}

func (t *Tierer) writeManifest(ctx context.Context, ss *streamState, now time.Time) error {
	r, ok, err := GetStream(t.cat, ss.tenant, ss.name)
	if err != nil || !ok || r.Incarnation != ss.incarnation {
		return err
	}
	key := streamObjectPrefix(ss.prefix, ss.tenant, ss.name) + ManifestName
	w, err := t.be.Create(ctx, key)
	if err != nil {
		return fmt.Errorf("upload %s: %w", key, err)
	}
	h := md5.New()
	cw := &countingWriter{w: io.MultiWriter(w, h)}
	modified, err := writeManifest(cw, t.cat, r, now.UTC())
	if err == nil {
		err = w.Finish()
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("upload %s: %w", key, err)
	}
	v, _ := json.Marshal(ManifestRecord{Key: key, Size: cw.n, MD5: hexSum(h), Written: now.UTC(), Modified: modified})
	return t.cat.Set(manifestKey(ss.tenant, ss.name), v)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
