// Package core is silt's segment engine: tenants, streams, segments and the
// durable tier-1 logs behind them. core.Store only wires the pieces: the
// catalog (pebble) for metadata and one core/segment log per segment.
//
// Every acknowledged append has been fdatasynced in the node's write-ahead
// log (core/wal); concurrent appends to any segments share one sync (group
// commit), and segment files are synced by checkpoints.
package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/core/segment"
	"github.com/silt-io/silt/core/vfs"
)

// Config configures the Store.
type Config struct {
	Dir string `koanf:"dir" help:"data directory (catalog, tier-1 logs, keys)"`
	// SegmentFileBytes is the size at which a segment's active log file is
	// rolled over to a new one.
	SegmentFileBytes int64  `koanf:"segment_file_bytes" help:"roll a segment's tier-1 log file at this size, in bytes"`
	Limits           Limits `koanf:"limits"`
	DefaultSegments  int    `koanf:"default_segments" help:"segments of a stream created without a segment count"`
	MaxReadBytes     int    `koanf:"max_read_bytes" help:"largest batch one read returns, in bytes"`
	// MaxOpenFiles is the segment files' descriptor budget (walstore.go).
	MaxOpenFiles int       `koanf:"max_open_files" help:"most segment files kept open at once; 0: half of what the connection caps leave of the file descriptor limit (docs/connections.md)"`
	WAL          WALConfig `koanf:"wal"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Dir:              "silt-data",
		SegmentFileBytes: 64 << 20,
		Limits:           Limits{MaxEventBytes: 1 << 20, MaxBatchBytes: 8 << 20, MaxBatchEvents: 100_000, MaxSegments: 256},
		DefaultSegments:  1,
		MaxReadBytes:     4 << 20,
		WAL:              defaultWALConfig(),
	}
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Dir == "" {
		return fmt.Errorf("core: dir must be set")
	}
	if c.SegmentFileBytes < 4096 {
		return fmt.Errorf("core: segment_file_bytes must be at least 4096")
	}
	if c.DefaultSegments < 1 || c.MaxReadBytes < 1 {
		return fmt.Errorf("core: default_segments and max_read_bytes must be positive")
	}
	if c.MaxOpenFiles < 0 {
		return fmt.Errorf("core: max_open_files must not be negative (0 derives it)")
	}
	if err := c.WAL.validate(); err != nil {
		return err
	}
	return c.Limits.validate()
}

const (
	keyTenant = "core/t/"
	keyStream = "core/s/"
)

// Store is the engine. It is safe for concurrent use.
type Store struct {
	cfg Config
	log *zap.Logger
	fs  vfs.FS
	cat *catalog.Catalog
	// activity holds the segments that may have events not yet in tier 2.
	activity *Activity
	wal      *walState
	// progress, if set, is told how far Open has got.
	progress *Progress

	mu struct {
		sync.RWMutex
		tenants map[string]Tenant
		streams map[string]*stream // key tenant/name
		closed  bool
	}
}

// stream is an open stream: its catalog record and one log per segment.
type stream struct {
	rec     streamRecord
	logs    []*segment.Log
	rr      atomic.Uint64 // round-robin for appends without a key
	writers *writerOwners
}

// streamRecord is what the catalog keeps for a stream. Incarnation names
// the stream's log directory, so that a stream deleted and re-created under
// the same name never sees its predecessor's files.
type streamRecord struct {
	Stream
	Incarnation int64 `json:"incarnation"`
}

// Open opens or creates the store in cfg.Dir, recovering every segment log.
func Open(cfg Config, log *zap.Logger) (*Store, error) {
	return OpenFS(cfg, log, vfs.OS{})
}

// OpenFS is Open with a given filesystem for the logs (crash tests). The
// catalog always lives on the real filesystem.
func OpenFS(cfg Config, log *zap.Logger, fs vfs.FS) (*Store, error) {
	return openFS(cfg, log, fs, nil)
}

func openFS(cfg Config, log *zap.Logger, fs vfs.FS, p *Progress) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = zap.NewNop()
	}
	if err := vfs.MkdirAllDurable(vfs.OS{}, cfg.Dir); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.Dir, err)
	}
	p.set(PhaseCatalog)
	cat, err := catalog.Open(filepath.Join(cfg.Dir, "catalog"))
	if err != nil {
		return nil, err
	}
	p.set(PhaseWAL)
	s := &Store{cfg: cfg, log: log, fs: fs, cat: cat, activity: newActivity(), progress: p}
	s.mu.tenants = map[string]Tenant{}
	s.mu.streams = map[string]*stream{}
	if err := s.openWAL(); err != nil {
		cat.Close()
		return nil, err
	}
	p.set(PhaseStreams)
	if err := s.load(); err != nil {
		s.closeLogs()
		s.wal.close()
		cat.Close()
		return nil, err
	}
	p.set(PhaseOpen)
	return s, nil
}

func (s *Store) logsDir() string { return filepath.Join(s.cfg.Dir, "logs") }

func (s *Store) streamDir(r streamRecord) string {
	return filepath.Join(s.logsDir(), r.Tenant, fmt.Sprintf("%s@%d", r.Name, r.Incarnation))
}

// load reads the catalog, opens every segment log and removes log
// directories that no catalog entry owns (left by an interrupted delete).
func (s *Store) load() error {
	err := s.cat.Scan([]byte(keyTenant), nil, func(_, v []byte) error {
		var t Tenant
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decode tenant record: %w", err)
		}
		s.mu.tenants[t.Name] = t
		return nil
	})
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	err = s.cat.Scan([]byte(keyStream), nil, func(_, v []byte) error {
		var r streamRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode stream record: %w", err)
		}
		st, err := s.openStream(r)
		if err != nil {
			return err
		}
		s.mu.streams[r.Tenant+"/"+r.Name] = st
		owned[s.streamDir(r)] = true
		return nil
	})
	if err != nil {
		return err
	}
	tenants, err := s.fs.List(s.logsDir())
	if err != nil {
		return err
	}
	for _, t := range tenants {
		dirs, err := s.fs.List(filepath.Join(s.logsDir(), t))
		if err != nil {
			return err
		}
		for _, d := range dirs {
			p := filepath.Join(s.logsDir(), t, d)
			if !owned[p] {
				s.log.Info("removing log directory of a deleted stream", zap.String("dir", p))
				if err := s.fs.RemoveAll(p); err != nil {
					return fmt.Errorf("remove orphaned %s: %w", p, err)
				}
			}
		}
	}
	return nil
}

func (s *Store) openStream(r streamRecord) (*stream, error) {
	st := &stream{rec: r}
	for _, seg := range r.Segments {
		ref := SegmentRef{Tenant: r.Tenant, Stream: r.Name, Segment: seg.ID, Incarnation: r.Created.UnixNano()}
		l, err := segment.Open(s.wal.segmentOptions(segment.Options{
			OnCommit:        func() { s.activity.Mark(ref) },
			FS:              s.fs,
			Dir:             filepath.Join(s.streamDir(r), seg.ID),
			FileBytes:       s.cfg.SegmentFileBytes,
			MaxRecordBytes:  s.cfg.Limits.MaxBatchBytes + 64<<10,
			WriterRetention: writerRetention,
			Log:             s.log.With(zap.String("tenant", r.Tenant), zap.String("stream", r.Name), zap.String("segment", seg.ID)),
		}, r, seg.ID, ref))
		if err != nil {
			for _, o := range st.logs {
				o.Close()
			}
			return nil, fmt.Errorf("open stream %s/%s segment %s: %w", r.Tenant, r.Name, seg.ID, err)
		}
		st.logs = append(st.logs, l)
		// Anything in tier 1 may not be in tier 2 yet: tiering decides.
		if state := l.State(); state.Next > state.First {
			s.activity.Mark(ref)
		}
	}
	st.writers = newWriterOwners(st.logs)
	return st, nil
}

func (s *Store) closeLogs() {
	for _, st := range s.mu.streams {
		for _, l := range st.logs {
			l.Close()
		}
	}
}

// Close stops the store; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	s.closeLogs()
	werr := s.wal.close()
	if err := s.cat.Close(); err != nil {
		return err
	}
	return werr
}

// Catalog gives other packages (acl, tiering) the shared metadata store.
func (s *Store) Catalog() *catalog.Catalog { return s.cat }

// Dir returns the data directory, as configured.
func (s *Store) Dir() string { return s.cfg.Dir }

// Limits returns the request limits in force.
func (s *Store) Limits() Limits { return s.cfg.Limits }

func invalid(err error) error { return fmt.Errorf("%w: %v", ErrInvalid, err) }

// CreateTenant creates a tenant.
func (s *Store) CreateTenant(ctx context.Context, name string, metadata map[string]string) (Tenant, error) {
	if err := names.Tenant(name); err != nil {
		return Tenant{}, invalid(err)
	}
	if err := names.Metadata(metadata); err != nil {
		return Tenant{}, invalid(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return Tenant{}, ErrClosed
	}
	if _, ok := s.mu.tenants[name]; ok {
		return Tenant{}, fmt.Errorf("%w: tenant %q", ErrExists, name)
	}
	t := Tenant{Name: name, Created: time.Now().UTC(), Metadata: metadata}
	v, _ := json.Marshal(t)
	if err := s.cat.Set(keyTenant+name, v); err != nil {
		return Tenant{}, err
	}
	s.mu.tenants[name] = t
	return t, nil
}

// GetTenant returns one tenant.
func (s *Store) GetTenant(ctx context.Context, name string) (Tenant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.mu.tenants[name]
	if !ok {
		return Tenant{}, fmt.Errorf("%w: tenant %q", ErrNotFound, name)
	}
	return t, nil
}

// ListTenants returns all tenants in name order.
func (s *Store) ListTenants(ctx context.Context) ([]Tenant, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Tenant, 0, len(s.mu.tenants))
	for _, t := range s.mu.tenants {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteTenant removes a tenant that has no streams.
func (s *Store) DeleteTenant(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.mu.tenants[name]; !ok {
		return fmt.Errorf("%w: tenant %q", ErrNotFound, name)
	}
	for _, st := range s.mu.streams {
		if st.rec.Tenant == name {
			return fmt.Errorf("%w: tenant %q still has streams (delete them first)", ErrNotEmpty, name)
		}
	}
	if err := s.cat.Delete(keyTenant + name); err != nil {
		return err
	}
	delete(s.mu.tenants, name)
	return nil
}

// CreateStream creates a stream; zero config fields take the defaults
// (encoding lines, DefaultSegments).
func (s *Store) CreateStream(ctx context.Context, tenant, name string, cfg StreamConfig) (Stream, error) {
	if err := names.Stream(name); err != nil {
		return Stream{}, invalid(err)
	}
	if cfg.Encoding == "" {
		cfg.Encoding = EncodingLines
	}
	if !cfg.Encoding.Valid() {
		return Stream{}, fmt.Errorf("%w: encoding %q: use %q or %q", ErrInvalid, cfg.Encoding, EncodingLines, EncodingFramed)
	}
	if cfg.Segments == 0 {
		cfg.Segments = s.cfg.DefaultSegments
	}
	if cfg.Segments < 1 || cfg.Segments > s.cfg.Limits.MaxSegments {
		return Stream{}, fmt.Errorf("%w: segments must be between 1 and %d", ErrInvalid, s.cfg.Limits.MaxSegments)
	}
	if err := names.Metadata(cfg.Metadata); err != nil {
		return Stream{}, invalid(err)
	}
	if cfg.Retention.MaxAge < 0 {
		return Stream{}, fmt.Errorf("%w: retention max_age must not be negative (0 keeps forever)", ErrInvalid)
	}
	if cfg.Retention.MaxBytes < 0 {
		return Stream{}, fmt.Errorf("%w: retention max_bytes must not be negative (0 keeps forever)", ErrInvalid)
	}
	if cfg.TierPrefix != "" {
		if err := names.TierPrefix(cfg.TierPrefix); err != nil {
			return Stream{}, invalid(err)
		}
	}
	if cfg.Group != "" {
		if err := names.Stream(cfg.Group); err != nil {
			return Stream{}, fmt.Errorf("%w: group follows the stream-name rules: %v", ErrInvalid, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return Stream{}, ErrClosed
	}
	if _, ok := s.mu.tenants[tenant]; !ok {
		return Stream{}, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
	}
	key := tenant + "/" + name
	if _, ok := s.mu.streams[key]; ok {
		return Stream{}, fmt.Errorf("%w: stream %q in tenant %q", ErrExists, name, tenant)
	}
	now := time.Now().UTC()
	r := streamRecord{
		Stream:      Stream{Tenant: tenant, Name: name, Config: cfg, Created: now, Segments: segmentRanges(cfg.Segments)},
		Incarnation: now.UnixNano(),
	}
	// Logs first, then the catalog entry: a crash in between leaves an
	// orphaned directory, which the next start removes.
	st, err := s.openStream(r)
	if err != nil {
		return Stream{}, err
	}
	v, _ := json.Marshal(r)
	if err := s.cat.Set(keyStream+key, v); err != nil {
		for _, l := range st.logs {
			l.Close()
		}
		return Stream{}, err
	}
	s.mu.streams[key] = st
	// Tiering records a new stream (the read-only view lists it) when it
	// next takes the set; it learns of streams no other way.
	for _, seg := range st.rec.Segments {
		s.activity.Mark(SegmentRef{Tenant: tenant, Stream: name, Segment: seg.ID, Incarnation: st.rec.Created.UnixNano()})
	}
	return s.describe(st), nil
}

// describe adds the live segment state to a stream's record.
func (s *Store) describe(st *stream) Stream {
	out := st.rec.Stream
	out.Segments = make([]SegmentInfo, len(st.rec.Segments))
	for i, seg := range st.rec.Segments {
		state := st.logs[i].State()
		seg.FirstOffset, seg.NextOffset, seg.Bytes = state.First, state.Next, state.Bytes
		out.Segments[i] = seg
	}
	return out
}

func (s *Store) stream(tenant, name string) (*stream, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	st, ok := s.mu.streams[tenant+"/"+name]
	if !ok {
		if _, ok := s.mu.tenants[tenant]; !ok {
			return nil, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
		}
		return nil, fmt.Errorf("%w: stream %q in tenant %q", ErrNotFound, name, tenant)
	}
	return st, nil
}

// GetStream describes a stream including its segments' current state.
func (s *Store) GetStream(ctx context.Context, tenant, name string) (Stream, error) {
	st, err := s.stream(tenant, name)
	if err != nil {
		return Stream{}, err
	}
	return s.describe(st), nil
}

// ListStreams returns a tenant's streams in name order, without segments.
func (s *Store) ListStreams(ctx context.Context, tenant string) ([]Stream, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.mu.tenants[tenant]; !ok {
		return nil, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
	}
	var out []Stream
	for _, st := range s.mu.streams {
		if st.rec.Tenant == tenant {
			r := st.rec.Stream
			r.Segments = nil
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// DeleteStream removes a stream and its tier-1 data. The catalog entry
// goes first, so a crash part-way leaves only an orphaned directory.
func (s *Store) DeleteStream(ctx context.Context, tenant, name string) error {
	s.mu.Lock()
	key := tenant + "/" + name
	st, ok := s.mu.streams[key]
	if !ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: stream %q in tenant %q", ErrNotFound, name, tenant)
	}
	if err := s.cat.Delete(keyStream + key); err != nil {
		s.mu.Unlock()
		return err
	}
	delete(s.mu.streams, key)
	s.mu.Unlock()
	// Tiering learns of the deletion from the set it works from, so that
	// it never has to walk every stream to find the ones that are gone.
	for _, seg := range st.rec.Segments {
		s.activity.Mark(SegmentRef{Tenant: tenant, Stream: name, Segment: seg.ID, Incarnation: st.rec.Created.UnixNano()})
	}
	for _, l := range st.logs {
		l.Close()
	}
	if err := s.fs.RemoveAll(s.streamDir(st.rec)); err != nil {
		s.log.Warn("could not remove deleted stream's logs; retried at next start", zap.String("stream", key), zap.Error(err))
	}
	return nil
}

// segmentLog resolves a segment of a stream to its log.
func (s *Store) segmentLog(tenant, stream, segmentID string) (*segment.Log, error) {
	st, err := s.stream(tenant, stream)
	if err != nil {
		return nil, err
	}
	idx, err := st.segmentIndex(segmentID)
	if err != nil {
		return nil, err
	}
	return st.logs[idx], nil
}

// segmentIndex resolves an explicit segment id.
func (st *stream) segmentIndex(id string) (int, error) {
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= len(st.logs) || strconv.Itoa(i) != id {
		return 0, fmt.Errorf("%w: segment %q in stream %s/%s (segments are 0 to %d)", ErrNotFound, id, st.rec.Tenant, st.rec.Name, len(st.logs)-1)
	}
	return i, nil
}

// Append durably appends a batch and returns once it is fsynced.
func (s *Store) Append(ctx context.Context, req AppendRequest) (AppendResult, error) {
	st, err := s.stream(req.Tenant, req.Stream)
	if err != nil {
		return AppendResult{}, err
	}
	if len(req.Events) == 0 {
		return AppendResult{}, fmt.Errorf("%w: a batch needs at least one event", ErrInvalid)
	}
	if len(req.Events) > s.cfg.Limits.MaxBatchEvents {
		return AppendResult{}, fmt.Errorf("%w: batch has %d events; the limit is %d (limits.max_batch_events)", ErrTooLarge, len(req.Events), s.cfg.Limits.MaxBatchEvents)
	}
	total := 0
	for i, e := range req.Events {
		if len(e) > s.cfg.Limits.MaxEventBytes {
			return AppendResult{}, fmt.Errorf("%w: event %d is %d bytes; the limit is %d (limits.max_event_bytes)", ErrTooLarge, i, len(e), s.cfg.Limits.MaxEventBytes)
		}
		if st.rec.Config.Encoding == EncodingLines && bytes.IndexByte(e, '\n') >= 0 {
			return AppendResult{}, fmt.Errorf("%w: event %d contains a newline, which a %q stream cannot store (use a %q stream for binary events)", ErrInvalid, i, EncodingLines, EncodingFramed)
		}
		total += len(e)
	}
	if total > s.cfg.Limits.MaxBatchBytes {
		return AppendResult{}, fmt.Errorf("%w: batch is %d bytes; the limit is %d (limits.max_batch_bytes)", ErrTooLarge, total, s.cfg.Limits.MaxBatchBytes)
	}
	var idx int
	switch {
	case req.Segment != "":
		if idx, err = st.segmentIndex(req.Segment); err != nil {
			return AppendResult{}, err
		}
	case req.RoutingKey != "":
		idx = segmentIndexFor(len(st.logs), KeyHash(req.RoutingKey))
	default:
		idx = int(st.rr.Add(1) % uint64(len(st.logs)))
	}
	if req.WriterID != "" && req.Owner != "" {
		if err := st.writers.claim(req.Tenant, req.Stream, req.WriterID, req.Owner, time.Now()); err != nil {
			return AppendResult{}, err
		}
	}
	res, err := st.logs[idx].Append(ctx, segment.Batch{Events: req.Events, WriterID: req.WriterID, Seq: req.Seq, Owner: req.Owner})
	if errors.Is(err, segment.ErrWriterOwned) {
		return AppendResult{}, writerOwnedErr(req)
	}
	if err != nil {
		return AppendResult{}, mapSegmentErr(err)
	}
	return AppendResult{Segment: st.rec.Segments[idx].ID, FirstOffset: res.FirstOffset, Count: res.Count, Duplicate: res.Duplicate}, nil
}

func mapSegmentErr(err error) error {
	switch {
	case errors.Is(err, segment.ErrClosed):
		return fmt.Errorf("%w: %v", ErrClosed, err)
	case errors.Is(err, segment.ErrUnavailable):
		// %w: the I/O cause (a *fs.PathError, ENOSPC) stays reachable.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case errors.Is(err, segment.ErrOutOfRange):
		return fmt.Errorf("%w: %v", ErrOutOfRange, err)
	case errors.Is(err, segment.ErrSeqConflict):
		return fmt.Errorf("%w: %v", ErrSeqConflict, err)
	}
	return err
}

// Read returns events of one segment from req.From.
func (s *Store) Read(ctx context.Context, req ReadRequest) (ReadResult, error) {
	log, err := s.segmentLog(req.Tenant, req.Stream, req.Segment)
	if err != nil {
		return ReadResult{}, err
	}
	maxEvents, maxBytes := req.MaxEvents, req.MaxBytes
	if maxEvents <= 0 {
		maxEvents = 1000
	}
	if maxBytes <= 0 || maxBytes > s.cfg.MaxReadBytes {
		maxBytes = s.cfg.MaxReadBytes
	}
	evs, next, err := log.Read(req.From, maxEvents, maxBytes)
	if err != nil {
		return ReadResult{}, mapSegmentErr(err)
	}
	out := ReadResult{Events: make([]Event, len(evs)), Next: next}
	for i, e := range evs {
		out.Events[i] = Event{Offset: e.Offset, Time: time.Unix(0, e.Time).UTC(), Data: e.Data}
	}
	return out, nil
}

// Wait blocks until the segment's NextOffset is above after, ctx ends, or
// the timeout passes; it reports whether new events are there.
func (s *Store) Wait(ctx context.Context, tenant, stream, segmentID string, after uint64, timeout time.Duration) (bool, error) {
	log, err := s.segmentLog(tenant, stream, segmentID)
	if err != nil {
		return false, err
	}
	ok, err := log.Wait(ctx, after, timeout)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return false, mapSegmentErr(err)
	}
	return ok, err
}

// WaitStream blocks until some segment of the stream has events at or
// above the offset the caller will read next (next maps segment id to that
// offset; a missing id counts as 0), ctx ends, or the timeout passes. It
// is how a multi-segment follower sleeps without a goroutine per segment.
func (s *Store) WaitStream(ctx context.Context, tenant, stream string, next map[string]uint64, timeout time.Duration) (bool, error) {
	st, err := s.stream(tenant, stream)
	if err != nil {
		return false, err
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	cases := make([]reflect.SelectCase, len(st.logs)+2)
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	cases[1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)}
	for {
		for i, l := range st.logs {
			// Take the channel before the state so that a commit between
			// the two still wakes us.
			ch := l.Changed()
			if l.State().Next > next[st.rec.Segments[i].ID] {
				return true, nil
			}
			cases[i+2] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
		}
		switch chosen, _, _ := reflect.Select(cases); chosen {
		case 0:
			return false, ctx.Err()
		case 1:
			return false, nil
		}
		if s.isClosed() {
			return false, ErrClosed
		}
	}
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.mu.closed
}

// Encode returns the tier-2 bytes of one event in the given encoding.
func Encode(enc Encoding, dst, event []byte) []byte {
	if enc == EncodingFramed {
		n := len(event)
		dst = append(dst, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		return append(dst, event...)
	}
	dst = append(dst, event...)
	return append(dst, '\n')
}
