package etcdtest

import (
	"os"
	"strings"
	"testing"
)

// Version names the binary `make etcd` builds from etcdbin/go.mod; the two
// must agree or tests look for a file the Makefile never makes.
func TestVersionMatchesEtcdbin(t *testing.T) {
	b, err := os.ReadFile("etcdbin/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	want := "require go.etcd.io/etcd/server/v3 " + Version + "\n"
	if !strings.Contains(string(b), want) {
		t.Errorf("etcdbin/go.mod does not hold %q: update Version with it", strings.TrimSpace(want))
	}
}

func TestStartStopRestart(t *testing.T) {
	srv := Start(t)
	if !srv.healthy() {
		t.Fatal("started server not healthy")
	}
	srv.Stop()
	if srv.healthy() {
		t.Fatal("stopped server still answers")
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if !srv.healthy() {
		t.Fatal("restarted server not healthy")
	}
}
