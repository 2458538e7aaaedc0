package tiering

import (
	"encoding/json"
	"slices"

	"fmt"
	"strconv"
	"strings"

	"time"

	"github.com/silt-io/silt/core"
	"github.com/silt-io/silt/core/catalog"
)

// Catalog keys (see docs/format/tier2.md). Each kind has its own prefix so
// that a listing is one ordered range scan:
//
//	tier/s/<tenant>/<stream>                     StreamRecord
//	tier/g/<tenant>/<stream>/<segment>           SegmentRecord
//	tier/c/<tenant>/<stream>/<segment>/<first>   ChunkRecord (first: %020d)
//	tier/u/<tenant>/<stream>/<segment>           uploadIntent
//	tier/d/<tenant>/<stream>/<segment>/<first>   deleteIntent (first: %020d)
//
// Tenant, stream and segment names cannot hold '/', so the separators keep
// one stream's range apart from another's whose name it prefixes.
const (
	keyStream  = "tier/s/"
	keySegment = "tier/g/"
	keyChunk   = "tier/c/"
	keyIntent  = "tier/u/"
	keyDelete  = "tier/d/"
)

// StreamRecord is written when tiering first sees a stream (incarnation).
type StreamRecord struct {
	Tenant      string        `json:"tenant"`
	Stream      string        `json:"stream"`
	Encoding    core.Encoding `json:"encoding"`
	Created     time.Time     `json:"created"`
	Incarnation int64         `json:"incarnation"`
	Segments    []string      `json:"segments"`
	// Prefix is the stream's tier prefix (core.StreamConfig.TierPrefix),
	// kept here so that a deleted stream's objects can still be found.
	Prefix string `json:"prefix,omitempty"`
}

// SegmentRecord is a segment's tiering progress, committed with each chunk.
type SegmentRecord struct {
	// Tiered is the offset after the last tiered event: [0, Tiered) is in
	// tier 2 (or was, before retention).
	Tiered uint64 `json:"tiered"`
	// First is the first offset still in tier 2: retention has deleted
	// the chunks of [0, First). Chunks and Bytes count [First, Tiered).
	First    uint64    `json:"first,omitempty"`
	Chunks   int       `json:"chunks"`
	Bytes    int64     `json:"bytes"`
	LastSeal time.Time `json:"last_seal,omitzero"`
}

// ChunkRecord describes one sealed, durable chunk.
type ChunkRecord struct {
	Segment     string    `json:"segment"`
	Name        string    `json:"name"`
	Key         string    `json:"key"`
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

// uploadIntent names the objects a segment is uploading, committed before
// the uploads start, so that ones interrupted by a crash can be removed.
type uploadIntent struct {
	Keys []string `json:"keys,omitempty"`
	Key  string   `json:"key,omitempty"` // one object, as written before groups of uploads
}

// keys returns every object the intent names.
func (in uploadIntent) keys() []string {
	if in.Key != "" && !slices.Contains(in.Keys, in.Key) {
		return append(slices.Clone(in.Keys), in.Key)
	}
	return in.Keys
}

// deleteIntent names the object of a chunk whose record retention has
// removed, committed with that removal, so that an object left behind by a
// crash before its deletion is deleted at the next start.
type deleteIntent struct {
	Key string `json:"key"`
}

func streamKey(tenant, stream string) string { return keyStream + tenant + "/" + stream }
func segmentKey(tenant, stream, seg string) string {
	return keySegment + tenant + "/" + stream + "/" + seg
}
func intentKey(tenant, stream, seg string) string {
	return keyIntent + tenant + "/" + stream + "/" + seg
}
func chunkPrefix(tenant, stream, seg string) string {
	return keyChunk + tenant + "/" + stream + "/" + seg + "/"
}
func deletePrefix(tenant, stream, seg string) string {
	return keyDelete + tenant + "/" + stream + "/" + seg + "/"
}
func deleteKey(tenant, stream, seg string, first uint64) string {
	return fmt.Sprintf("%s%020d", deletePrefix(tenant, stream, seg), first)
}
func chunkKey(tenant, stream, seg string, first uint64) string {
	return fmt.Sprintf("%s%020d", chunkPrefix(tenant, stream, seg), first)
}

// ChunkName is the file name of a chunk: both offsets zero-padded so that
// names sort in stream order, and an extension by encoding.
func ChunkName(enc core.Encoding, first, last uint64) string {
	ext := "txt"
	if enc == core.EncodingFramed {
		ext = "bin"
	}
	return fmt.Sprintf("%020d-%020d.%s", first, last, ext)
}

// ParseChunkName returns the first offset a chunk name starts with.
func ParseChunkName(name string) (first uint64, ok bool) {
	if len(name) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(name[:20], 10, 64)
	return v, err == nil
}

// ObjectKey is the tier-2 key of a chunk of a stream without a tier
// prefix; it mirrors the view's path.
func ObjectKey(tenant, stream, seg, name string) string {
	return PrefixedObjectKey("", tenant, stream, seg, name)
}

// PrefixedObjectKey is the tier-2 key of a chunk of a stream with tier
// prefix prefix ("" for none): <prefix>/<tenant>/<stream>/segment=<id>/<name>.
func PrefixedObjectKey(prefix, tenant, stream, seg, name string) string {
	return streamObjectPrefix(prefix, tenant, stream) + "segment=" + seg + "/" + name
}

// streamObjectPrefix is what every tier-2 key of a stream starts with.
func streamObjectPrefix(prefix, tenant, stream string) string {
	if prefix != "" {
		prefix += "/"
	}
	return prefix + tenant + "/" + stream + "/"
}

// isStreamObject reports whether key, listed under the stream's object
// prefix, is one of its chunks (<prefix>segment=<id>/<name>) rather than
// an object of another stream whose tier prefix makes its keys start the
// same way (tier prefix "x/acme" and tenant "clicks" start like tier
// prefix "x", tenant "acme", stream "clicks").
func isStreamObject(objPrefix, key string) bool {
	rest, ok := strings.CutPrefix(key, objPrefix)
	seg, name, ok2 := strings.Cut(rest, "/")
	return ok && ok2 && strings.HasPrefix(seg, "segment=") && name != "" && !strings.Contains(name, "/")
}

func getJSON(cat *catalog.Catalog, key string, v any) (bool, error) {
	b, ok, err := cat.Get([]byte(key))
	if err != nil || !ok {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", key, err)
	}
	return true, nil
}

// GetStream returns the tiering record of a stream.
func GetStream(cat *catalog.Catalog, tenant, stream string) (StreamRecord, bool, error) {
	var r StreamRecord
	ok, err := getJSON(cat, streamKey(tenant, stream), &r)
	return r, ok, err
}

// GetSegment returns a segment's tiering progress (zero if none yet).
func GetSegment(cat *catalog.Catalog, tenant, stream, seg string) (SegmentRecord, error) {
	var r SegmentRecord
	_, err := getJSON(cat, segmentKey(tenant, stream, seg), &r)
	return r, err
}

// ListStreams returns up to limit streams of a tenant whose names sort
// after after, from one range scan starting at after.
func ListStreams(cat *catalog.Catalog, tenant, after string, limit int) ([]StreamRecord, error) {
	prefix := keyStream + tenant + "/"
	var out []StreamRecord
	err := cat.Scan([]byte(prefix), startAfter(prefix, after), func(k, v []byte) error {
		if string(k[len(prefix):]) <= after {
			return nil
		}
		if len(out) >= limit {
			return catalog.ErrStop
		}
		var r StreamRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// ListChunks returns up to limit chunks of a segment whose names sort
// after after (any string; it need not name a chunk).
func ListChunks(cat *catalog.Catalog, tenant, stream, seg, after string, limit int) ([]ChunkRecord, error) {
	prefix := chunkPrefix(tenant, stream, seg)
	// Keys end in the 20-digit first offset, which is also how names
	// start, so the names after `after` begin at its first 20 bytes.
	from := after
	if len(from) > 20 {
		from = from[:20]
	}
	var out []ChunkRecord
	err := cat.Scan([]byte(prefix), []byte(prefix+from), func(k, v []byte) error {
		if len(out) >= limit {
			return catalog.ErrStop
		}
		var r ChunkRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		if r.Name > after {
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// GetChunk returns the chunk with the given file name.
func GetChunk(cat *catalog.Catalog, tenant, stream, seg, name string) (ChunkRecord, bool, error) {
	first, ok := ParseChunkName(name)
	if !ok {
		return ChunkRecord{}, false, nil
	}
	var r ChunkRecord
	ok, err := getJSON(cat, chunkKey(tenant, stream, seg, first), &r)
	if err != nil || !ok || r.Name != name {
		return ChunkRecord{}, false, err
	}
	return r, true, nil
}

// ScanChunks calls fn for every chunk of a segment in offset order.
func ScanChunks(cat *catalog.Catalog, tenant, stream, seg string, fn func(ChunkRecord) error) error {
	prefix := chunkPrefix(tenant, stream, seg)
	return cat.Scan([]byte(prefix), nil, func(k, v []byte) error {
		var r ChunkRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		return fn(r)
	})
}

// startAfter is the scan start for names after `after` under prefix.
func startAfter(prefix, after string) []byte {
	if after == "" {
		return nil
	}
	return []byte(prefix + after + "\x00")
}

// streamRecords returns every stream record (at start, to find streams
// whose tier-2 data outlived them).
func streamRecords(cat *catalog.Catalog) ([]StreamRecord, error) {
	var out []StreamRecord
	err := cat.Scan([]byte(keyStream), nil, func(k, v []byte) error {
		var r StreamRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode %s: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}
