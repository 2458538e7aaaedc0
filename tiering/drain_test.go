package tiering

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/silt-io/silt/core"
)

// switchProxy forwards TCP connections to a server until it is switched
// off: then every open connection is cut and new ones are closed at once,
// as a tier 2 that went away is seen from silt.
type switchProxy struct {
	ln     net.Listener
	target string
	mu     struct {
		sync.Mutex
		down  bool
		conns map[net.Conn]struct{}
	}
	wg sync.WaitGroup
}

func startProxy(t *testing.T, target string) *switchProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{ln: ln, target: target}
	p.mu.conns = map[net.Conn]struct{}{}
	p.wg.Add(1)
	go p.run()
	t.Cleanup(func() {
		ln.Close()
		p.setDown(true)
		p.wg.Wait()
	})
	return p
}

func (p *switchProxy) addr() string { return p.ln.Addr().String() }

func (p *switchProxy) run() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.mu.down
		if !down {
			p.mu.conns[c] = struct{}{}
		}
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.forward(c)
	}
}

func (p *switchProxy) forward(c net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.mu.conns[up] = struct{}{}
	p.mu.Unlock()
	defer p.drop(up)
	done := make(chan struct{})
	go func() {
		io.Copy(up, c)
		up.Close()
		close(done)
	}()
	io.Copy(c, up)
	c.Close()
	<-done
}

func (p *switchProxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.mu.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *switchProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.down = down
	if down {
		for c := range p.mu.conns {
			c.Close()
		}
	}
}

// smallDisk stands for a tier-1 filesystem of size bytes holding core.dir:
// its free space is size less what the segment logs and the write-ahead
// log really take on disk (allocated blocks). The catalog is left out: it
// is a few MiB of pebble files whose size tells nothing here.
type smallDisk struct {
	dir  string
	size uint64
}

func (d smallDisk) used() uint64 {
	var n uint64
	for _, sub := range []string{"logs", "wal"} {
		filepath.WalkDir(filepath.Join(d.dir, sub), func(p string, de fs.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return nil
			}
			if info, err := de.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += uint64(st.Blocks) * 512
				}
			}
			return nil
		})
	}
	return n
}

func (d smallDisk) stat(string) (avail, total uint64, err error) {
	u := d.used()
	if u >= d.size {
		return 0, d.size, nil
	}
	return d.size - u, d.size, nil
}

// TestS3DrainsFullTier1: with tier 2 (moto, behind a proxy that is
// switched off) down, appends fill a small tier 1 until backpressure
// refuses them, before the disk is full; once tier 2 is back, tiering
// alone drains tier 1 (uploads need no tier-1 space), appends are
// accepted again, and tier 2 holds every acknowledged event once.
func TestS3DrainsFullTier1(t *testing.T) {
	m := startMoto(t)
	tests := []struct {
		name string
		// segmentFileBytes is core.segment_file_bytes.
		segmentFileBytes int64
	}{
		{"segment files roll within the disk", 64 << 10},
		// Without a roll, the active file keeps everything: tiering
		// must have it rolled to free the space.
		{"one segment file larger than the disk", 64 << 20},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bucket := fmt.Sprintf("drain%d", i)
			if _, err := m.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
				t.Fatal(err)
			}
			proxy := startProxy(t, strings.TrimPrefix(m.endpoint, "http://"))
			cfg := testConfig()
			cfg.Backend, cfg.S3 = "s3", m.config(bucket, "")
			cfg.S3.Endpoint = "http://" + proxy.addr()
			cfg.MaxBacklogBytes = 0 // the share of the disk
			cfg.MaxChunkBytes = 512 << 10
			cfg.MinFreeBytes = 512 << 10
			// One attempt per operation: the Tierer's own retries are
			// what is under test, not the SDK's.
			client := s3.New(s3.Options{
				Region: cfg.S3.Region, BaseEndpoint: aws.String(cfg.S3.Endpoint), UsePathStyle: true,
				Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
				RetryMaxAttempts: 1,
			})
			e := &env{t: t, dir: t.TempDir(), clock: &clock{}, cfg: cfg, be: newS3Backend(client, cfg.S3)}
			disk := smallDisk{dir: e.dir + "/core", size: 8 << 20}
			e.statDisk = disk.stat
			e.storeCfg = func(c *core.Config) {
				c.SegmentFileBytes = tc.segmentFileBytes
				c.WAL.FileBytes, c.WAL.CheckpointBytes, c.WAL.CheckpointInterval = 256<<10, 512<<10, time.Second
			}
			e.open()
			t.Cleanup(e.close)
			segs := []string{"0", "1"}
			e.createStream("acme", "s", core.EncodingLines, len(segs))
			e.scan()
			// Every event is past the seal age at once.
			e.clock.Advance(time.Hour)

			proxy.setDown(true)
			want := map[string][]string{}
			var refused error
			for n := 0; refused == nil; n++ {
				if n == 1000 {
					t.Fatalf("1000 appends of 32 KiB and no refusal; disk %d of %d bytes used", disk.used(), disk.size)
				}
				if refused = e.tr.Backpressure("acme", "s"); refused != nil {
					break
				}
				if avail, _, _ := disk.stat(""); avail == 0 {
					t.Fatalf("append %d accepted on a full tier 1", n)
				}
				seg := segs[n%len(segs)]
				evs := events(fmt.Sprintf("a%d-", n), 32, 1000)
				e.append("acme", "s", seg, evs...)
				want[seg] = append(want[seg], evs...)
				if n%8 == 7 {
					e.scan()
				}
			}
			if !errors.Is(refused, core.ErrUnavailable) {
				t.Fatalf("refusal %v does not map to 503", refused)
			}
			if err := e.tr.AppendsRefused(); err == nil {
				t.Fatal("appends refused, but readiness says they are not")
			}
			full := disk.used()
			if full >= disk.size {
				t.Fatalf("refusals started only once tier 1 was full (%d of %d bytes)", full, disk.size)
			}

			proxy.setDown(false)
			// Nothing is appended from here on; tiering (and the WAL's
			// checkpoints, each second) must free the space.
			drained := false
			for range 300 {
				e.scan()
				if e.tr.AppendsRefused() == nil && e.tr.backlog.Load() == 0 {
					drained = true
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if !drained {
				st, _ := e.tr.Status("acme", "s")
				t.Fatalf("tier 1 did not drain after tier 2 returned: %d of %d bytes used (%d when refusals started), refused: %v, status %+v",
					disk.used(), disk.size, full, e.tr.AppendsRefused(), st)
			}
			// Producers go on with twice the disk's size: tier 1 keeps
			// room for them only if tiered data, active files included,
			// is given back as the space runs short.
			refusals := 0
			for n, sent := 0, uint64(0); sent < 2*disk.size; {
				if err := e.tr.Backpressure("acme", "s"); err != nil {
					if refusals++; refusals == 300 {
						t.Fatalf("appends still refused after %d of %d more bytes: %d of %d bytes of tier 1 used: %v", sent, 2*disk.size, disk.used(), disk.size, err)
					}
					e.scan()
					time.Sleep(100 * time.Millisecond)
					continue
				}
				seg := segs[n%len(segs)]
				evs := events(fmt.Sprintf("b%d-", n), 32, 4000)
				e.append("acme", "s", seg, evs...)
				want[seg] = append(want[seg], evs...)
				sent += 32 * 4000
				n++
				if n%4 == 0 {
					e.scan()
				}
			}
			for range 100 {
				if e.scan(); e.tr.backlog.Load() == 0 {
					break
				}
			}
			rolls := testutil.ToFloat64(e.tr.m.rolls)
			if tc.segmentFileBytes > int64(disk.size) && rolls == 0 {
				t.Errorf("no active file rolled, yet tier 1 took twice its size")
			}
			t.Logf("%d refusals, %d slowed, %v rolls", refusals, int(testutil.ToFloat64(e.tr.m.slowed)), rolls)
			for _, seg := range segs {
				if got, w := e.tier2Bytes("acme", "s", seg), encodeAll(core.EncodingLines, want[seg]); !bytes.Equal(got, w) {
					t.Fatalf("segment %s: tier 2 holds %d bytes, %d were acknowledged", seg, len(got), len(w))
				}
			}
			if err := e.tr.Backpressure("acme", "s"); err != nil {
				t.Fatalf("append after the drain: %v", err)
			}
			e.append("acme", "s", "0", "after")
		})
	}
}
