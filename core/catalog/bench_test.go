package catalog

import (
	"fmt"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
)

// Get is on every request's path (S3 keys, chunk records): on etcd it must
// cost what a map lookup under a lock costs, not a round trip.
func BenchmarkGet(b *testing.B) {
	for name := range backends {
		b.Run(name, func(b *testing.B) {
			c := openForBench(b, name)
			for i := range 1000 {
				if err := c.Set(fmt.Sprintf("k/%04d", i), []byte("value")); err != nil {
					b.Fatal(err)
				}
			}
			for i := 0; b.Loop(); i++ {
				if _, ok, err := c.Get([]byte(fmt.Sprintf("k/%04d", i%1000))); !ok || err != nil {
					b.Fatal(ok, err)
				}
			}
		})
	}
}

// Commit is one fsync on pebble and one etcd transaction (plus its watch
// event) on etcd.
func BenchmarkCommit(b *testing.B) {
	for name := range backends {
		b.Run(name, func(b *testing.B) {
			c := openForBench(b, name)
			for i := 0; b.Loop(); i++ {
				if err := c.Set(fmt.Sprintf("k/%08d", i), []byte("value")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// openForBench opens what backends[name] does, for a benchmark.
func openForBench(b *testing.B, name string) *Catalog {
	b.Helper()
	var c *Catalog
	var err error
	switch name {
	case "pebble":
		c, err = Open(b.TempDir())
	default:
		srv := sharedEtcdTB(b)
		c, err = OpenEtcd(srv.Client(b), EtcdOptions{Prefix: "/bench/" + b.Name() + "/"})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// Close ends the watch goroutine; the client's are the caller's.
func TestEtcdCloseLeavesNoGoroutine(t *testing.T) {
	srv := sharedEtcd(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenEtcd(cli, EtcdOptions{Prefix: "/test/" + t.Name() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	stop := c.Watch("", func(string, []byte, bool) {})
	if err := c.Set("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cli.Close()
}
