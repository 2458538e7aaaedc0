package tiering

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os/user"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/colinmarc/hdfs/v2"
)

// HDFSBackend keeps tier 2 in a directory of an HDFS cluster, through the
// namenode RPC and datanode transfer protocols (no Hadoop install needed).
//
// An upload is written to a temp file beside its target, named by the key
// (".tmp-<chunk>": Hadoop's FileInputFormat and Spark skip names starting
// with "." or "_", so a job never reads a half-written chunk), closed —
// FileWriter.Close waits for every datanode in the pipeline to acknowledge
// the last packet and for the namenode to complete the file, retried while
// the namenode still waits for the minimum replication — and then renamed
// over the final key. Finish returns only after the rename, so a finished
// object is whole and an unfinished one is never visible under its key.
// Because temp names derive from keys, a retried upload replaces its
// predecessor's temp file and Delete finds it; like the fs backend, there
// is no sweep at start (the Tierer's intents name every interrupted upload).
//
// Durability is what HDFS acknowledges: the datanodes of the pipeline hold
// the bytes. They fsync a finalized block only with the datanode setting
// dfs.datanode.synconclose=true, which a cluster that must survive a power
// loss of all replicas sets.
//
// The connection to the namenode is made on first use and remade after a
// network error, so an unreachable namenode at start only delays tiering.
type HDFSBackend struct {
	dir     string // absolute, no trailing slash ("" for /)
	opts    hdfs.ClientOptions
	timeout time.Duration

	mu struct {
		sync.Mutex
		c      *hdfs.Client
		closed bool
	}
}

// OpenHDFS returns an hdfs backend. It does no network I/O, so an
// unreachable namenode is reported by the first operation, not here.
func OpenHDFS(c HDFSConfig) (*HDFSBackend, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	name := c.User
	if name == "" {
		u, err := user.Current()
		if err != nil || u.Username == "" {
			return nil, fmt.Errorf("tiering: cannot tell the OS user for HDFS (%v); set tiering.hdfs.user", err)
		}
		name = u.Username
	}
	b := &HDFSBackend{dir: strings.TrimRight(c.Dir, "/"), timeout: c.Timeout}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{Timeout: min(c.Timeout, 10*time.Second)}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallConn{Conn: conn, timeout: c.Timeout}, nil
	}
	b.opts = hdfs.ClientOptions{
		Addresses:        c.Namenodes,
		User:             name,
		NamenodeDialFunc: dial,
		DatanodeDialFunc: dial,
	}
	return b, nil
}

// client returns the namenode connection, connecting if there is none.
// Connecting under mu keeps concurrent callers from racing to connect;
// the dial is bounded by the timeout.
func (b *HDFSBackend) client() (*hdfs.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.closed {
		return nil, errors.New("hdfs backend is closed")
	}
	if b.mu.c != nil {
		return b.mu.c, nil
	}
	c, err := hdfs.NewClient(b.opts)
	if err != nil {
		return nil, fmt.Errorf("connect to HDFS namenode %s as %s: %w", strings.Join(b.opts.Addresses, ","), b.opts.User, err)
	}
	b.mu.c = c
	return c, nil
}

// check drops the connection after an error that the namenode or a
// datanode did not answer with: colinmarc/hdfs keeps using a connection
// whose response was lost, so the next operation must start afresh.
func (b *HDFSBackend) check(c *hdfs.Client, err error) error {
	if err == nil || answered(err) {
		return err
	}
	b.mu.Lock()
	if b.mu.c == c {
		b.mu.c = nil
		// Close waits for a request in flight, which stallConn bounds;
		// nothing needs to wait for it.
		go c.Close()
	}
	b.mu.Unlock()
	return err
}

// answered reports whether err is a reply from HDFS (a Java exception or
// a status the client decoded), or the caller giving up, rather than a
// broken connection.
func answered(err error) bool {
	var remote hdfs.Error
	return errors.As(err, &remote) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) ||
		errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrInvalid) ||
		errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, hdfs.ErrReplicating)
}

// Close drops the namenode connection (and its lease renewer).
func (b *HDFSBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mu.closed = true
	if b.mu.c == nil {
		return nil
	}
	err := b.mu.c.Close()
	b.mu.c = nil
	return err
}

// path maps a key to an HDFS path, refusing what the fs backend refuses.
func (b *HDFSBackend) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("tier-2 key %q: must be relative and name a file", key)
	}
	for _, e := range strings.Split(key, "/") {
		if e == "" || e == "." || e == ".." || strings.HasPrefix(e, tempPrefix) || strings.Contains(e, ":") {
			return "", fmt.Errorf("tier-2 key %q: invalid element %q", key, e)
		}
	}
	return b.dir + "/" + key, nil
}

func hdfsTempPath(p string) string { return path.Join(path.Dir(p), tempPrefix+path.Base(p)) }

// remove deletes one file; a missing one is not an error.
func remove(c *hdfs.Client, p string) error {
	if err := c.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Create implements Backend. colinmarc/hdfs takes no contexts: ctx is
// checked between steps, and stallConn bounds each step.
func (b *HDFSBackend) Create(ctx context.Context, key string) (Writer, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	c, err := b.client()
	if err != nil {
		return nil, fmt.Errorf("create tier-2 upload %s: %w", key, err)
	}
	tmp := hdfsTempPath(p)
	// An earlier attempt's temp file (possibly still open under a lease
	// of a crashed process) is deleted, which also ends that lease.
	err = c.MkdirAll(path.Dir(p), 0o755)
	if err == nil {
		err = remove(c, tmp)
	}
	var f *hdfs.FileWriter
	if err == nil && ctx.Err() == nil {
		f, err = c.Create(tmp)
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		if f != nil {
			f.SetDeadline(time.Now())
			f.Close()
			remove(c, tmp)
		}
		return nil, fmt.Errorf("create tier-2 upload %s: %w", key, b.check(c, err))
	}
	return &hdfsWriter{b: b, c: c, ctx: ctx, f: f, tmp: tmp, final: p}, nil
}

type hdfsWriter struct {
	b          *HDFSBackend
	c          *hdfs.Client
	ctx        context.Context
	f          *hdfs.FileWriter
	tmp, final string
	done       bool
	err        error // sticky: a failed write fails the upload
}

func (w *hdfsWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("tier-2 upload already finished or aborted")
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = fmt.Errorf("write tier-2 upload %s: %w", w.final, w.b.check(w.c, err))
	}
	return n, w.err
}

// closeRetries bounds Close retries while the namenode waits for the
// datanodes to report the last block (ErrReplicating); the Java client
// retries the same way, with backoff.
const closeRetries = 8

func (w *hdfsWriter) Finish() error {
	if w.done {
		return errors.New("tier-2 upload already finished or aborted")
	}
	err := w.err
	if err == nil {
		err = w.close()
	}
	if err == nil {
		err = w.ctx.Err()
	}
	if err == nil {
		err = w.c.Rename(w.tmp, w.final)
	}
	if err != nil {
		w.Abort()
		return fmt.Errorf("finish tier-2 upload %s: %w", w.final, w.b.check(w.c, err))
	}
	w.done = true
	return nil
}

func (w *hdfsWriter) close() error {
	wait := 50 * time.Millisecond
	for i := 0; ; i++ {
		err := w.f.Close()
		if !hdfs.IsErrReplicating(err) || i == closeRetries {
			return err
		}
		select {
		case <-w.ctx.Done():
			return w.ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// Abort implements Writer: the datanode stream is cut at once (a zero
// deadline fails its pending I/O) and the temp file deleted, which also
// releases its lease.
func (w *hdfsWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.SetDeadline(time.Now())
	w.f.Close()
	if err := remove(w.c, w.tmp); err != nil {
		return fmt.Errorf("abort tier-2 upload %s: %w", w.final, w.b.check(w.c, err))
	}
	return nil
}

// Open implements Backend.
func (b *HDFSBackend) Open(_ context.Context, key string) (Object, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, err
	}
	c, err := b.client()
	if err != nil {
		return nil, fmt.Errorf("open tier-2 object %s: %w", key, err)
	}
	f, err := c.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return nil, fmt.Errorf("open tier-2 object %s: %w", key, b.check(c, err))
	}
	if f.Stat().IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a directory", ErrNotExist, key)
	}
	return &hdfsObject{b: b, c: c, f: f, key: key, size: f.Stat().Size()}, nil
}

// hdfsObject serializes reads: a FileReader's ReadAt is a Seek and a
// Read, which io.ReaderAt's callers may not interleave.
type hdfsObject struct {
	b    *HDFSBackend
	c    *hdfs.Client
	key  string
	size int64
	mu   sync.Mutex
	f    *hdfs.FileReader
}

func (o *hdfsObject) Size() int64 { return o.size }

func (o *hdfsObject) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read tier-2 object %s: negative offset %d", o.key, off)
	}
	if off >= o.size {
		return 0, io.EOF
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		return n, fmt.Errorf("read tier-2 object %s at %d: %w", o.key, off, o.b.check(o.c, err))
	}
	return n, err
}

func (o *hdfsObject) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.f.Close()
}

// Stat implements Backend.
func (b *HDFSBackend) Stat(_ context.Context, key string) (ObjectInfo, error) {
	p, err := b.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	c, err := b.client()
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat tier-2 object %s: %w", key, err)
	}
	st, err := c.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return ObjectInfo{}, fmt.Errorf("%w: %s", ErrNotExist, key)
	}
	if err != nil {
		return ObjectInfo{}, fmt.Errorf("stat tier-2 object %s: %w", key, b.check(c, err))
	}
	if st.IsDir() {
		return ObjectInfo{}, fmt.Errorf("%w: %s is a directory", ErrNotExist, key)
	}
	return ObjectInfo{Key: key, Size: st.Size(), ModTime: st.ModTime()}, nil
}

// Delete implements Backend: the temp file of an unfinished upload, the
// object, then the directories it leaves empty (up to, not including,
// tiering.hdfs.dir), so that a deleted stream leaves no empty
// <tenant>/<stream> tree for Hive or Spark to discover.
func (b *HDFSBackend) Delete(_ context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	c, err := b.client()
	if err != nil {
		return fmt.Errorf("delete tier-2 object %s: %w", key, err)
	}
	for _, x := range []string{hdfsTempPath(p), p} {
		if err := remove(c, x); err != nil {
			return fmt.Errorf("delete tier-2 object %s: %w", key, b.check(c, err))
		}
	}
	for d := path.Dir(p); len(d) > len(b.dir)+1; d = path.Dir(d) {
		// A non-recursive delete of a directory that is not empty fails
		// with ENOTEMPTY: the parents are then not empty either.
		if err := c.Remove(d); err != nil {
			b.check(c, err)
			break
		}
	}
	return nil
}

// List implements Backend. Like the fs backend it reads only the
// directories the prefix can match, so listing one segment does not walk
// the whole tree.
func (b *HDFSBackend) List(_ context.Context, prefix string) ([]string, error) {
	c, err := b.client()
	if err != nil {
		return nil, fmt.Errorf("list tier-2 prefix %q: %w", prefix, err)
	}
	var keys []string
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := c.ReadDir(b.dir + "/" + strings.TrimSuffix(rel, "/"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tempPrefix) {
				continue
			}
			k := rel + e.Name()
			if !e.IsDir() {
				if strings.HasPrefix(k, prefix) {
					keys = append(keys, k)
				}
				continue
			}
			if d := k + "/"; strings.HasPrefix(d, prefix) || strings.HasPrefix(prefix, d) {
				if err := walk(d); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, fmt.Errorf("list tier-2 prefix %q: %w", prefix, b.check(c, err))
	}
	sort.Strings(keys)
	return keys, nil
}

// stallConn fails a Read or Write that makes no progress for timeout:
// colinmarc/hdfs sets no deadlines of its own, and a namenode or datanode
// that stops answering would otherwise block the tiering loop forever.
// A deadline the library sets (FileWriter.SetDeadline) still applies if
// it is sooner.
type stallConn struct {
	net.Conn
	timeout time.Duration
	mu      sync.Mutex
	fixed   time.Time
}

func (c *stallConn) deadline() time.Time {
	d := time.Now().Add(c.timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed.IsZero() && c.fixed.Before(d) {
		return c.fixed
	}
	return d
}

func (c *stallConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(c.deadline()); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

func (c *stallConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(c.deadline()); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *stallConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.fixed = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

var (
	_ Backend   = (*HDFSBackend)(nil)
	_ io.Closer = (*HDFSBackend)(nil)
)
