// Package core is silt's segment engine: tenants, streams, segments and the
// durable tier-1 logs behind them. core.Store only wires the pieces: the
// catalog (pebble) for metadata and one core/segment log per segment, opened
// on the segment's first use and closed when it idles (lazy.go).
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
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/silt-io/silt/core/catalog"
	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/core/segment"
	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/core/wal"
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
	// IdleClose bounds what an idle stream costs: its segment logs (two
	// descriptors and their in-memory index each) are closed once unused
	// for this long, and reopened, re-reading their files, by the next use.
	IdleClose time.Duration `koanf:"idle_close" help:"close a segment's tier-1 log after it has not been used for this long (its next use opens it again)"`
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Dir:              "silt-data",
		SegmentFileBytes: 64 << 20,
		Limits:           Limits{MaxEventBytes: 1 << 20, MaxBatchBytes: 8 << 20, MaxBatchEvents: 100_000, MaxSegments: 256, MaxStreams: 1_000_000},
		DefaultSegments:  1,
		MaxReadBytes:     4 << 20,
		WAL:              defaultWALConfig(),
		IdleClose:        time.Minute,
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
	if c.IdleClose <= 0 {
		return fmt.Errorf("core: idle_close must be positive")
	}
	return c.Limits.validate()
}

const (
	keyTenant = "core/t/"
	keyStream = "core/s/"
	// keyGone holds the log directories of deleted streams until they are
	// removed: a start finds what a crash left behind without listing
	// every stream's directory.
	keyGone = "core/gone/"
	// keySwept says that the log directories of this data directory have
	// been checked against the catalog once (every later deletion leaves a
	// keyGone record).
	keySwept = "core/swept"
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
	lazy     lazyState
	// setRecord durably writes one catalog record (a seam for tests that
	// make the catalog fail).
	setRecord func(key string, v []byte) error
	// writes counts catalog writes made outside mu, which Close waits for
	// before it closes the catalog.
	writes sync.WaitGroup
	// progress, if set, is told how far Open has got.
	progress *Progress
	// openWALBackend is Options.WAL.
	openWALBackend func(maxFrameBytes int, log *zap.Logger) (wal.Backend, error)
	// sharedWAL is Options.Shared.
	sharedWAL *SharedWAL
	// countDone is closed once the streams are counted after start.
	countDone chan struct{}

	mu struct {
		sync.RWMutex
		tenants map[string]*tenantState
		// streams counts every stream, those being created included,
		// against limits.max_streams, once counted is set: the count is
		// taken from the catalog by the first creation after start, so
		// that start-up does not read every stream record.
		streams int
		counted bool
		closed  bool
	}
}

// tenantState is a tenant and the streams of it loaded so far: those
// created or used since start. The others are read from the catalog on
// their first use (streamLocked), so start-up and memory are in
// proportion to the streams in use, not to those that exist.
type tenantState struct {
	t       Tenant
	streams map[string]*stream
	// creating holds the names whose catalog record is being written.
	creating map[string]struct{}
	// count is the tenant's streams, those being created included, once
	// the store's mu.counted is set.
	count int
}

// stream is a stream's record and its segments' slots; it is kept small,
// since every stream of the node has one whether it is used or not.
type stream struct {
	rec  streamRecord
	segs []segSlot
	rr   atomic.Uint64 // round-robin for appends without a key
	// deleted is set before the slots are closed, so that no use opens a
	// log of a deleted stream.
	deleted  atomic.Bool
	openSegs atomic.Int32
	// version changes whenever a segment's bounds change (a commit, a
	// truncation) or tiering reports a change in tier 2: readers that
	// cache what they derived from the bounds (a group's lag) compare it.
	version  atomic.Uint64
	ownersMu sync.Mutex
	owners   *writerOwners // nil until an owner-checked append needs it
}

func newStream(r streamRecord) *stream {
	st := &stream{rec: r, segs: make([]segSlot, len(r.Segments))}
	for i := range st.segs {
		st.segs[i].known = true
	}
	return st
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
	return OpenWith(cfg, log, Options{FS: fs})
}

// Options are what OpenWith takes besides the configuration.
type Options struct {
	// FS holds the logs; nil is the real filesystem.
	FS vfs.FS
	// Progress, if set, follows the start-up.
	Progress *Progress
	// WAL opens the write-ahead log's backend, given the largest frame
	// body the store writes; nil keeps the log in local files under
	// <core.dir>/wal. Cluster mode passes objects on shared storage
	// (core/wal/objwal), which core does not open itself: it imports
	// neither S3 nor etcd.
	WAL func(maxFrameBytes int, log *zap.Logger) (wal.Backend, error)
	// Shared, with WAL, says that WAL's backend is on shared storage and
	// is the durable copy of every event not yet in tier 2 (cluster
	// durability; see SharedWAL).
	Shared *SharedWAL
}

// OpenWith is Open with options.
func OpenWith(cfg Config, log *zap.Logger, o Options) (*Store, error) {
	if o.FS == nil {
		o.FS = vfs.OS{}
	}
	return openFS(cfg, log, o)
}

func openFS(cfg Config, log *zap.Logger, o Options) (*Store, error) {
	fs, p := o.FS, o.Progress
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
	s := &Store{cfg: cfg, log: log, fs: fs, cat: cat, activity: newActivity(), setRecord: cat.Set, progress: p, openWALBackend: o.WAL, sharedWAL: o.Shared}
	if o.Shared != nil && o.WAL == nil {
		cat.Close()
		return nil, errors.New("core: a shared write-ahead log needs its backend (Options.WAL)")
	}
	s.mu.tenants = map[string]*tenantState{}
	s.lazy.open = map[*segSlot]*stream{}
	s.lazy.gone = make(chan struct{})
	if err := s.openWAL(); err != nil {
		cat.Close()
		return nil, err
	}
	p.set(PhaseStreams)
	if err := s.load(); err != nil {
		s.wal.close()
		cat.Close()
		return nil, err
	}
	s.startLazy()
	s.startCount()
	p.set(PhaseOpen)
	return s, nil
}

// dirOp runs a directory operation under <dir>/logs holding at most n
// descriptors at once, counted against core.max_open_files with the
// segment files, so that nothing the store opens there exceeds it.
func (s *Store) dirOp(n int, fn func() error) error { return s.wal.files.DirOp(n, fn) }

// removeDescriptors is what removing a stream's log directory holds open
// at its deepest: the stream's parent, the stream's and a segment's
// directory.
const removeDescriptors = 3

func (s *Store) logsDir() string { return filepath.Join(s.cfg.Dir, "logs") }

func (s *Store) streamDir(r streamRecord) string {
	return filepath.Join(s.logsDir(), r.Tenant, fmt.Sprintf("%s@%d", r.Name, r.Incarnation))
}

// Close stops the store; later calls fail with ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	s.mu.Unlock()
	s.writes.Wait()
	s.closeAllLogs()
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

// CreateStream creates a stream; zero config fields take the defaults
// (encoding lines, DefaultSegments). It writes the stream's catalog record
// and nothing else: the segments' files are made by their first use, so
// a refused or failed creation leaves nothing behind.
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
	if cfg.Set != "" {
		if err := names.Stream(cfg.Set); err != nil {
			return Stream{}, fmt.Errorf("%w: stream set follows the stream-name rules: %v", ErrInvalid, err)
		}
	}
	ts, err := s.reserve(tenant, name)
	if err != nil {
		return Stream{}, err
	}
	now := time.Now().UTC()
	r := streamRecord{
		Stream:      Stream{Tenant: tenant, Name: name, Config: cfg, Created: now, Segments: segmentRanges(cfg.Segments)},
		Incarnation: now.UnixNano(),
	}
	compact(&r, ts)
	v, _ := json.Marshal(r)
	// The record is written outside mu: a catalog sync would otherwise
	// stall every lookup of every stream, and concurrent creations share
	// pebble's group commit.
	err = s.setRecord(keyStream+tenant+"/"+name, v)
	s.mu.Lock()
	delete(ts.creating, name)
	var st *stream
	if err == nil {
		st = newStream(r)
		ts.streams[name] = st
	} else {
		s.mu.streams--
		ts.count--
	}
	s.mu.Unlock()
	s.writes.Done()
	if err != nil {
		return Stream{}, catalogErr("create stream", err)
	}
	// Tiering records a new stream (the read-only view lists it) when it
	// next takes the set; it learns of streams no other way.
	for _, seg := range st.rec.Segments {
		s.activity.Mark(SegmentRef{Tenant: tenant, Stream: name, Segment: seg.ID, Incarnation: st.rec.Created.UnixNano()})
	}
	return s.describeKnown(st), nil
}

// reserve checks that a stream may be created and holds its name and a
// place under the limits while its record is written; the caller ends
// with s.writes.Done.
func (s *Store) reserve(tenant, name string) (*tenantState, error) {
	s.waitCount()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	ts, ok := s.mu.tenants[tenant]
	if !ok {
		return nil, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
	}
	if err := s.countLocked(); err != nil {
		return nil, err
	}
	existing, err := s.streamLocked(ts, name)
	if err != nil {
		return nil, err
	}
	if _, creating := ts.creating[name]; existing != nil || creating {
		return nil, fmt.Errorf("%w: stream %q in tenant %q", ErrExists, name, tenant)
	}
	// The system tenant's streams (introspect/) count against neither
	// limit: they are the server's, at most a few per tenant, and a user
	// who reached a limit must still be able to see why in them.
	lim := s.cfg.Limits
	system := tenant == names.SystemTenant
	users := s.mu.streams
	if sys, ok := s.mu.tenants[names.SystemTenant]; ok {
		users -= sys.count
	}
	if !system && lim.MaxStreams > 0 && users >= lim.MaxStreams {
		return nil, fmt.Errorf("%w: this node holds %d streams, the most it allows (core.limits.max_streams); delete streams or raise the limit", ErrLimit, users)
	}
	if n := ts.count; !system && lim.MaxStreamsPerTenant > 0 && n >= lim.MaxStreamsPerTenant {
		return nil, fmt.Errorf("%w: tenant %q holds %d streams, the most a tenant may have (core.limits.max_streams_per_tenant); delete streams or raise the limit", ErrLimit, tenant, n)
	}
	if ts.creating == nil {
		ts.creating = map[string]struct{}{}
	}
	ts.creating[name] = struct{}{}
	s.mu.streams++
	ts.count++
	s.writes.Add(1)
	return ts, nil
}

// describe adds the segments' state to a stream's record. A segment whose
// bounds are not known (it has tier-1 files and has not been used since
// start) is opened to learn them.
func (s *Store) describe(st *stream) (Stream, error) {
	out := st.rec.Stream
	out.Segments = make([]SegmentInfo, len(st.rec.Segments))
	for i, seg := range st.rec.Segments {
		state, err := s.learn(st, i)
		if err != nil {
			return Stream{}, err
		}
		seg.FirstOffset, seg.NextOffset, seg.Bytes = state.First, state.Next, state.Bytes
		out.Segments[i] = seg
	}
	return out, nil
}

// describeKnown describes a stream none of whose bounds need learning.
func (s *Store) describeKnown(st *stream) Stream {
	out, _ := s.describe(st)
	return out
}

func (s *Store) stream(tenant, name string) (*stream, error) {
	s.mu.RLock()
	if s.mu.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	ts, ok := s.mu.tenants[tenant]
	if !ok {
		s.mu.RUnlock()
		return nil, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
	}
	st, ok := ts.streams[name]
	s.mu.RUnlock()
	if ok {
		return st, nil
	}
	// Not used since start (or not there): its record is read under the
	// write lock, once.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, ErrClosed
	}
	if ts, ok = s.mu.tenants[tenant]; !ok {
		return nil, fmt.Errorf("%w: tenant %q", ErrNotFound, tenant)
	}
	st, err := s.streamLocked(ts, name)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("%w: stream %q in tenant %q", ErrNotFound, name, tenant)
	}
	return st, nil
}

// GetStream describes a stream including its segments' state. The offsets
// are exact: live for a segment in use, and for an idle one as they were
// when its log was closed, which nothing changes while it is closed.
func (s *Store) GetStream(ctx context.Context, tenant, name string) (Stream, error) {
	st, err := s.stream(tenant, name)
	if err != nil {
		return Stream{}, err
	}
	return s.describe(st)
}

// ListStreams returns a tenant's streams in name order, without segments;
// it opens no segment log. It reads every page of ListStreamsPage: a
// tenant of many streams is better listed a page at a time.
func (s *Store) ListStreams(ctx context.Context, tenant string) ([]Stream, error) {
	var out []Stream
	after := ""
	for {
		page, err := s.ListStreamsPage(ctx, tenant, after, MaxListLimit)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < MaxListLimit {
			return out, nil
		}
		after = page[len(page)-1].Name
	}
}

// DeleteStream removes a stream and its tier-1 data. The catalog entry
// goes first, so a crash part-way leaves only an orphaned directory.
func (s *Store) DeleteStream(ctx context.Context, tenant, name string) error {
	s.waitCount()
	s.mu.Lock()
	ts, ok := s.mu.tenants[tenant]
	var st *stream
	if ok {
		var err error
		if st, err = s.streamLocked(ts, name); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	if st == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: stream %q in tenant %q", ErrNotFound, name, tenant)
	}
	// The record goes with a note of the directory to remove, which a
	// start after a crash part-way finishes (removeGone).
	gone := keyGone + tenant + "/" + fmt.Sprintf("%s@%d", st.rec.Name, st.rec.Incarnation)
	if err := s.cat.Commit(map[string][]byte{gone: []byte("1")}, []string{keyStream + tenant + "/" + name}); err != nil {
		s.mu.Unlock()
		return catalogErr("delete stream", err)
	}
	delete(ts.streams, name)
	if s.mu.counted {
		s.mu.streams--
		ts.count--
	}
	s.mu.Unlock()
	// Tiering learns of the deletion from the set it works from, so that
	// it never has to walk every stream to find the ones that are gone.
	for _, seg := range st.rec.Segments {
		s.activity.Mark(SegmentRef{Tenant: tenant, Stream: name, Segment: seg.ID, Incarnation: st.rec.Created.UnixNano()})
	}
	// Each slot's lock waits for an open in progress; after it no use
	// opens the log again, so the files removed below stay removed.
	st.deleted.Store(true)
	for i := range st.segs {
		sl := &st.segs[i]
		sl.mu.Lock()
		sl.dead = true
		s.closeSlotLocked(st, sl)
		sl.mu.Unlock()
	}
	s.wakeWaiters()
	if s.wal.shared != nil {
		// The log need not keep what tier 2 will never take.
		for i := range st.segs {
			s.wal.shared.forget(st.ref(i))
		}
	}
	if err := s.dirOp(removeDescriptors, func() error { return s.fs.RemoveAll(s.streamDir(st.rec)) }); err != nil {
		s.log.Warn("could not remove deleted stream's logs; retried at next start", zap.String("stream", tenant+"/"+name), zap.Error(err))
		return nil
	}
	if err := s.cat.Delete(gone); err != nil {
		s.log.Warn("could not drop the note of a removed log directory; dropped at next start", zap.String("stream", tenant+"/"+name), zap.Error(err))
	}
	return nil
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
		idx = segmentIndexFor(len(st.segs), KeyHash(req.RoutingKey))
	default:
		idx = int(st.rr.Add(1) % uint64(len(st.segs)))
	}
	// The segment is held before the writer table is consulted, so that
	// the stream cannot go idle and drop the table in between.
	log, err := s.acquire(st, idx)
	if err != nil {
		return AppendResult{}, err
	}
	defer s.release(st, idx)
	if req.WriterID != "" && req.Owner != "" {
		owners, err := s.ownersFor(st)
		if err != nil {
			return AppendResult{}, err
		}
		if err := owners.claim(req.Tenant, req.Stream, req.WriterID, req.Owner, time.Now()); err != nil {
			return AppendResult{}, err
		}
	}
	res, err := log.Append(ctx, segment.Batch{Events: req.Events, WriterID: req.WriterID, Seq: req.Seq, Owner: req.Owner})
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
	maxEvents, maxBytes := req.MaxEvents, req.MaxBytes
	if maxEvents <= 0 {
		maxEvents = 1000
	}
	if maxBytes <= 0 || maxBytes > s.cfg.MaxReadBytes {
		maxBytes = s.cfg.MaxReadBytes
	}
	var out ReadResult
	err := s.withSegment(req.Tenant, req.Stream, req.Segment, func(log *segment.Log) error {
		evs, next, err := log.Read(req.From, maxEvents, maxBytes)
		if err != nil {
			return mapSegmentErr(err)
		}
		out = ReadResult{Events: make([]Event, len(evs)), Next: next}
		for i, e := range evs {
			out.Events[i] = Event{Offset: e.Offset, Time: time.Unix(0, e.Time).UTC(), Data: e.Data}
		}
		return nil
	})
	return out, err
}

// Wait blocks until the segment's NextOffset is above after, ctx ends, or
// the timeout passes; it reports whether new events are there.
func (s *Store) Wait(ctx context.Context, tenant, stream, segmentID string, after uint64, timeout time.Duration) (bool, error) {
	var ok bool
	err := s.withSegment(tenant, stream, segmentID, func(log *segment.Log) error {
		// The log stays open while it is waited on; a deletion or Close
		// ends the wait instead.
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		gone := s.goneCh()
		st, err := s.stream(tenant, stream)
		if err != nil {
			return err
		}
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-gone:
					if s.isClosed() || st.deleted.Load() {
						cancel()
						return
					}
					gone = s.goneCh()
				}
			}
		}()
		ok, err = log.Wait(ctx, after, timeout)
		if ctx.Err() != nil && s.isClosed() {
			return ErrClosed
		}
		if ctx.Err() != nil && st.deleted.Load() {
			return fmt.Errorf("%w: stream %q in tenant %q was deleted", ErrNotFound, stream, tenant)
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return mapSegmentErr(err)
		}
		return err
	})
	return ok, err
}

// WaitStream blocks until some segment of the stream has events at or
// above the offset the caller will read next (next maps segment id to that
// offset; a missing id counts as 0), ctx ends, or the timeout passes. It
// is how a multi-segment follower sleeps without a goroutine per segment.
// The stream's logs stay open while it waits.
func (s *Store) WaitStream(ctx context.Context, tenant, stream string, next map[string]uint64, timeout time.Duration) (bool, error) {
	st, err := s.stream(tenant, stream)
	if err != nil {
		return false, err
	}
	logs := make([]*segment.Log, 0, len(st.segs))
	defer func() {
		for i := range logs {
			s.release(st, i)
		}
	}()
	for i := range st.segs {
		l, err := s.acquire(st, i)
		if err != nil {
			return false, err
		}
		logs = append(logs, l)
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	cases := make([]reflect.SelectCase, len(logs)+3)
	cases[0] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())}
	cases[1] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(timer)}
	for {
		// Logs stay open while they are waited on: a deletion or Close
		// wakes the wait through gone instead.
		cases[len(logs)+2] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(s.goneCh())}
		if s.isClosed() {
			return false, ErrClosed
		}
		if st.deleted.Load() {
			return false, fmt.Errorf("%w: stream %q in tenant %q was deleted", ErrNotFound, stream, tenant)
		}
		for i, l := range logs {
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
