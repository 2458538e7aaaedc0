// Command nfsbench compares silt's NFSv3 head with nfs-ganesha and
// `rclone serve nfs` serving the same bytes from a directory, in one run
// (see BENCHMARKS.md): sequential read of one large chunk with the Go
// client (github.com/willscott/go-nfs-client), 8 concurrent readers on one
// connection, nfs-cat of the chunk, and listing a 100,000-entry directory,
// with each server's peak RSS.
//
// silt serves the chunk the real way (appended through core, sealed by
// the tierer into the fs backend, read through the tier-2 view) and the
// listing from an in-memory view of the same names (100,000 chunks sealed
// one by one would take the tierer far longer than the benchmark); both
// are served by one silt NFS server in a child process, so its RSS is its
// own. ganesha and rclone serve a directory holding a copy of the chunk
// and 100,000 empty files with the same names.
//
// ganesha needs rpcbind, which binds every address (its -h aborts here),
// so the whole benchmark re-runs itself inside new network and mount
// namespaces (`unshare --net --mount`, with /run and /var/lib/nfs on
// tmpfs), where every server and client see only their own loopback.
// Where that is not possible, the ganesha rows are skipped.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

type options struct {
	dir     string
	sizeMiB int
	files   int
	readers int
	rounds  int
	rclone  string
	listCap time.Duration
	inside  bool
	serve   bool
	listen  string
	servers string
	profile string
}

func main() {
	var o options
	flag.StringVar(&o.dir, "dir", ".bench-data-nfs", "directory on the disk to measure (not tmpfs)")
	flag.IntVar(&o.sizeMiB, "size", 256, "chunk size in MiB")
	flag.IntVar(&o.files, "files", 100_000, "entries in the listed directory")
	flag.IntVar(&o.readers, "readers", 8, "concurrent readers on one connection")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of timed reads (each server in turn); figures are medians")
	flag.StringVar(&o.rclone, "rclone", defaultRclone(), "rclone binary with `serve nfs` (1.65 or later); empty skips rclone")
	flag.DurationVar(&o.listCap, "list-timeout", 3*time.Minute, "give up listing after this long")
	flag.BoolVar(&o.inside, "inside", false, "already inside the benchmark's namespaces (set by the re-run)")
	flag.BoolVar(&o.serve, "serve-silt", false, "run as the silt NFS server child")
	flag.StringVar(&o.listen, "listen", "127.0.0.1:20490", "silt child: address to serve on")
	flag.StringVar(&o.servers, "servers", "silt,ganesha,rclone", "servers to measure")
	flag.StringVar(&o.profile, "cpuprofile", "", "write the silt server's CPU profile to this file")
	flag.Parse()
	var err error
	switch {
	case o.serve:
		err = serveSilt(o)
	case !o.inside && namespacesUsable():
		err = reRunInside()
	default:
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nfsbench:", err)
		os.Exit(1)
	}
}

// defaultRclone is where the benchmark's instructions install rclone
// (Debian's 1.60 has no `serve nfs`).
func defaultRclone() string {
	if c, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(c, "silt-bench", "rclone")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func namespacesUsable() bool {
	if _, err := exec.LookPath("unshare"); err != nil {
		return false
	}
	return exec.Command("unshare", "--net", "--mount", "true").Run() == nil
}

// reRunInside runs this program again, with the same flags, in new
// network and mount namespaces.
func reRunInside() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	args := append([]string{"--net", "--mount", self, "-inside"}, os.Args[1:]...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		os.Exit(ee.ExitCode())
	}
	return err
}

// setUpNamespace makes the new namespaces usable: loopback up (with a
// second address: ganesha resolves Bind_addr with AI_ADDRCONFIG, which
// ignores loopback-only hosts), and private /run and /var/lib/nfs so that
// rpcbind's socket and ganesha's state never meet another instance's.
func setUpNamespace() error {
	for _, c := range [][]string{
		{"mount", "--make-rprivate", "/"},
		{"mount", "-t", "tmpfs", "tmpfs", "/run"},
		{"mkdir", "-p", "/var/lib/nfs"},
		{"mount", "-t", "tmpfs", "tmpfs", "/var/lib/nfs"},
		{"ip", "link", "set", "lo", "up"},
		{"ip", "addr", "add", "10.255.255.1/32", "dev", "lo"},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	return nil
}

func run(o options) error {
	ganeshaOK := o.inside
	if o.inside {
		if err := setUpNamespace(); err != nil {
			fmt.Fprintln(os.Stderr, "nfsbench: namespace setup failed, skipping ganesha:", err)
			ganeshaOK = false
		}
	}
	abs, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	o.dir = abs
	os.RemoveAll(o.dir)
	defer os.RemoveAll(o.dir)
	d, err := prepare(o)
	if err != nil {
		return err
	}

	want := func(name string) bool { return strings.Contains(","+o.servers+",", ","+name+",") }
	var servers []server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	s, err := startSilt(o, d)
	if err != nil {
		return err
	}
	servers = append(servers, s)
	if ganeshaOK && want("ganesha") {
		if s, err := startGanesha(o, d); err != nil {
			fmt.Fprintln(os.Stderr, "nfsbench: ganesha skipped:", err)
		} else {
			servers = append(servers, s)
		}
	}
	if o.rclone != "" && want("rclone") {
		s, err := startRclone(o, d)
		if err != nil {
			return err
		}
		servers = append(servers, s)
	}
	results, err := measureAll(o, d, servers)
	if err != nil {
		return err
	}
	report(o, results)
	return nil
}
