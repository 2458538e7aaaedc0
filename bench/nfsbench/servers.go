package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/silt-io/silt/bench/internal/benchdata"
	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"github.com/willscott/go-nfs-client/nfs/xdr"
)

// server is one NFS server under test.
type server struct {
	name string
	pid  int // whose RSS is reported
	// nfsAddr and mountAddr are host:port; root is the MNT path whose
	// tree holds data.chunk and data.list.
	nfsAddr, mountAddr, root string
	// catQuery is appended to nfs-cat URLs.
	catQuery string
	stop     func()
}

// mount mounts the server's root with the Go client: MOUNT on one
// connection, NFS on another unless they share a port.
func (s server) mount() (*nfsc.Target, func(), error) {
	auth := rpc.NewAuthUnix("nfsbench", 0, 0).Auth()
	mc, err := rpc.DialTCP("tcp", s.mountAddr, false)
	if err != nil {
		return nil, nil, err
	}
	if s.mountAddr == s.nfsAddr {
		t, err := (&nfsc.Mount{Client: mc}).Mount(s.root, auth)
		if err != nil {
			mc.Close()
			return nil, nil, err
		}
		return t, mc.Close, nil
	}
	defer mc.Close()
	fh, err := rawMount(mc, s.root, auth)
	if err != nil {
		return nil, nil, err
	}
	nc, err := rpc.DialTCP("tcp", s.nfsAddr, false)
	if err != nil {
		return nil, nil, err
	}
	t, err := nfsc.NewTargetWithClient(nc, auth, fh, s.root, 0)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return t, nc.Close, nil
}

// rawMount calls MNT and returns the root file handle. (The client's
// Mount would also ask FSINFO over the MOUNT connection, which a server
// with separate ports does not answer.)
func rawMount(c *rpc.Client, dir string, auth rpc.Auth) ([]byte, error) {
	type mnt struct {
		rpc.Header
		Dirpath string
	}
	res, err := c.Call(&mnt{rpc.Header{Rpcvers: 2, Prog: nfsc.MountProg, Vers: nfsc.MountVers, Proc: nfsc.MountProc3MNT, Cred: auth, Verf: rpc.AuthNull}, dir})
	if err != nil {
		return nil, err
	}
	var r struct {
		Status uint32
		FH     []byte
	}
	if err := xdr.Read(res, &r); err != nil {
		return nil, err
	}
	if r.Status != 0 {
		return nil, fmt.Errorf("MNT %s: status %d", dir, r.Status)
	}
	return r.FH, nil
}

// waitMount retries mounting until the server answers.
func (s server) waitMount(timeout time.Duration) error {
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		var t *nfsc.Target
		var closeFn func()
		if t, closeFn, err = s.mount(); err == nil {
			_, _, err = t.Lookup(strings.TrimPrefix(listDir, "/"))
			closeFn()
			if err == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("%s did not come up: %w", s.name, err)
}

// child starts a server process and returns a stop function that ends it
// and waits for it.
func child(cmd *exec.Cmd, logPath string) (func(), error) {
	if logPath != "" {
		f, err := os.Create(logPath)
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = f, f
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}, nil
}

func startSilt(o options, d data) (server, error) {
	self, err := os.Executable()
	if err != nil {
		return server{}, err
	}
	addr := listenAddr(o, 20490)
	cmd := exec.Command(self, "-serve-silt", "-dir", o.dir, "-size", fmt.Sprint(o.sizeMiB), "-files", fmt.Sprint(o.files), "-listen", addr, "-cpuprofile", o.profile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return server{}, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return server{}, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return server{}, err
	}
	stop := func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		stop()
		return server{}, fmt.Errorf("silt child: %q", line)
	}
	s := server{name: "silt", pid: cmd.Process.Pid, nfsAddr: addr, mountAddr: addr, root: "/", stop: stop}
	if err := s.waitMount(30 * time.Second); err != nil {
		stop()
		return server{}, err
	}
	return s, nil
}

func startGanesha(o options, d data) (server, error) {
	for _, c := range []string{"ganesha.nfsd", "rpcbind"} {
		if _, err := exec.LookPath(c); err != nil {
			return server{}, fmt.Errorf("%w (install it: apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)", err)
		}
	}
	g := filepath.Join(o.dir, "ganesha")
	if err := os.MkdirAll(g, 0o755); err != nil {
		return server{}, err
	}
	const nfsPort, mntPort = 2049, 20048
	conf := fmt.Sprintf(`NFS_CORE_PARAM { NFS_Port = %d; MNT_Port = %d; Enable_NLM = false; Enable_RQUOTA = false; Protocols = 3; Bind_addr = 127.0.0.1; }
NFSV4 { Graceless = true; }
NFS_KRB5 { Active_krb5 = false; }
EXPORT { Export_Id = 1; Path = %s; Pseudo = /ref; Access_Type = RO; Squash = No_Root_Squash; Protocols = 3; Transports = TCP; SecType = sys; FSAL { Name = VFS; } CLIENT { Clients = 127.0.0.1; Access_Type = RO; } }
LOG { Default_Log_Level = WARN; }
`, nfsPort, mntPort, d.ref)
	if err := os.WriteFile(filepath.Join(g, "ganesha.conf"), []byte(conf), 0o644); err != nil {
		return server{}, err
	}
	stopRPC, err := child(exec.Command("rpcbind", "-f", "-w"), filepath.Join(g, "rpcbind.log"))
	if err != nil {
		return server{}, err
	}
	time.Sleep(300 * time.Millisecond)
	cmd := exec.Command("ganesha.nfsd", "-F", "-f", filepath.Join(g, "ganesha.conf"), "-L", filepath.Join(g, "ganesha.log"), "-p", filepath.Join(g, "ganesha.pid"), "-N", "NIV_WARN")
	stopG, err := child(cmd, filepath.Join(g, "stdout.log"))
	if err != nil {
		stopRPC()
		return server{}, err
	}
	stop := func() { stopG(); stopRPC() }
	s := server{
		name: "nfs-ganesha", pid: cmd.Process.Pid, root: d.ref, // NFSv3 MNT takes the export's real path
		nfsAddr: fmt.Sprintf("127.0.0.1:%d", nfsPort), mountAddr: fmt.Sprintf("127.0.0.1:%d", mntPort),
		stop: stop,
	}
	if err := s.waitMount(60 * time.Second); err != nil {
		stop()
		log, _ := os.ReadFile(filepath.Join(g, "ganesha.log"))
		return server{}, fmt.Errorf("%w (ganesha log: %s)", err, lastLines(string(log), 5))
	}
	return s, nil
}

func startRclone(o options, d data) (server, error) {
	addr := listenAddr(o, 20500)
	cmd := exec.Command(o.rclone, "serve", "nfs", d.ref, "--addr", addr, "--read-only", "--config", "/dev/null")
	stop, err := child(cmd, filepath.Join(o.dir, "rclone.log"))
	if err != nil {
		return server{}, err
	}
	// rclone's go-nfs answers MOUNT EXPORT, which libnfs calls, with a
	// malformed reply: tell libnfs not to.
	s := server{name: "rclone serve nfs", pid: cmd.Process.Pid, nfsAddr: addr, mountAddr: addr, root: "/", catQuery: "&auto-traverse-mounts=0", stop: stop}
	if err := s.waitMount(30 * time.Second); err != nil {
		stop()
		return server{}, err
	}
	return s, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// rss returns a process's current and peak resident set size in bytes.
func rss(pid int) (cur, peak int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(line, "VmRSS: %d kB", &kb); n == 1 {
			cur = kb << 10
		}
		if n, _ := fmt.Sscanf(line, "VmHWM: %d kB", &kb); n == 1 {
			peak = kb << 10
		}
	}
	return cur, peak
}

func runCmd(name string, args ...string) error {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v: %s", name, err, out)
	}
	return nil
}

// cpuTime returns a process's user plus system CPU time so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3, utime and stime fields 14 and 15, in clock ticks (100/s).
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	var u, s int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &s)
	return time.Duration(u+s) * 10 * time.Millisecond
}

// listenAddr is a fixed loopback port inside the benchmark's own network
// namespace, and a free one outside it.
func listenAddr(o options, port int) string {
	if !o.inside {
		if addr, err := benchdata.FreeAddr(); err == nil {
			return addr
		}
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}
