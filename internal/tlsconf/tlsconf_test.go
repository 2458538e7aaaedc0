package tlsconf

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startServer serves HTTPS on 127.0.0.1:0 with cfg and echoes the client
// certificate's common name, if any.
func startServer(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.TLS.PeerCertificates) > 0 {
				io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
				return
			}
			io.WriteString(w, "anonymous")
		}),
		ReadHeaderTimeout: 5 * time.Second,
		// Refused handshakes are the point of some tests; keep them quiet.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(tls.NewListener(ln, cfg)) })
	t.Cleanup(func() {
		srv.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

func get(t *testing.T, url string, cfg *tls.Config) (string, error) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: cfg}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func devSetup(t *testing.T) (Config, string, string) {
	t.Helper()
	dir := t.TempDir()
	cfg, caFile, created, err := GenerateDev(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("first GenerateDev should create files")
	}
	return cfg, caFile, dir
}

func TestDevHandshake(t *testing.T) {
	cfg, caFile, _ := devSetup(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	srvCfg, err := cfg.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, srvCfg)

	trusting, err := ClientConfig(caFile, false)
	if err != nil {
		t.Fatal(err)
	}
	body, err := get(t, "https://"+addr+"/", trusting)
	if err != nil || body != "anonymous" {
		t.Fatalf("GET = %q, %v", body, err)
	}

	tests := map[string]struct {
		serverName string
		caFile     string
		insecure   bool
		wantErr    bool
	}{
		"ipv4":           {serverName: "127.0.0.1", caFile: caFile},
		"ipv6":           {serverName: "::1", caFile: caFile},
		"localhost":      {serverName: "localhost", caFile: caFile},
		"other name":     {serverName: "example.com", caFile: caFile, wantErr: true},
		"untrusted CA":   {serverName: "localhost", wantErr: true},
		"insecure skips": {serverName: "example.com", insecure: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cc, err := ClientConfig(tc.caFile, tc.insecure)
			if err != nil {
				t.Fatal(err)
			}
			cc.ServerName = tc.serverName
			conn, err := tls.Dial("tcp", addr, cc)
			if err == nil {
				conn.Close()
			}
			if (err != nil) != tc.wantErr {
				t.Errorf("handshake err = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestClientCA(t *testing.T) {
	cfg, caFile, dir := devSetup(t)
	cfg.ClientCAFile = caFile
	srvCfg, err := cfg.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	if srvCfg.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatalf("ClientAuth = %v", srvCfg.ClientAuth)
	}
	addr := startServer(t, srvCfg)

	clientCert := func(t *testing.T, caDir string, usage x509.ExtKeyUsage) tls.Certificate {
		t.Helper()
		ca, caKey, err := loadDevCA(filepath.Join(caDir, DevCAFile), filepath.Join(caDir, DevCAKeyFile), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		der, key, err := newLeaf(ca, caKey, "alice", nil, usage, time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	_, _, otherDir := devSetup(t)

	tests := map[string]struct {
		certs   []tls.Certificate
		want    string
		wantErr bool
	}{
		"no client cert":      {wantErr: true},
		"signed by client CA": {certs: []tls.Certificate{clientCert(t, dir, x509.ExtKeyUsageClientAuth)}, want: "alice"},
		"signed by other CA":  {certs: []tls.Certificate{clientCert(t, otherDir, x509.ExtKeyUsageClientAuth)}, wantErr: true},
		"server-only usage":   {certs: []tls.Certificate{clientCert(t, dir, x509.ExtKeyUsageServerAuth)}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cc, err := ClientConfig(caFile, false)
			if err != nil {
				t.Fatal(err)
			}
			cc.Certificates = tc.certs
			body, err := get(t, "https://"+addr+"/", cc)
			if (err != nil) != tc.wantErr {
				t.Fatalf("GET = %q, %v; wantErr %v", body, err, tc.wantErr)
			}
			if body != tc.want {
				t.Errorf("body = %q, want %q", body, tc.want)
			}
		})
	}
}

func TestMinVersion(t *testing.T) {
	cfg, caFile, _ := devSetup(t)
	cfg.MinVersion = "1.3"
	srvCfg, err := cfg.ServerConfig()
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, srvCfg)
	cc, err := ClientConfig(caFile, false)
	if err != nil {
		t.Fatal(err)
	}
	cc.ServerName = "localhost"
	cc.MaxVersion = tls.VersionTLS12
	if conn, err := tls.Dial("tcp", addr, cc); err == nil {
		conn.Close()
		t.Error("TLS 1.2 client accepted with min_version 1.3")
	}
}

// fakeClock is advanced by the test to step past the reload interval.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func servedSerial(t *testing.T, addr string) *big.Int {
	t.Helper()
	// Verification is covered elsewhere; here only the served leaf matters,
	// and the rotated certificate comes from a different CA.
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber
}

func fileSerial(t *testing.T, path string) *big.Int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber
}

// install copies a file over dst and bumps its mtime so the change is
// visible even on filesystems with coarse timestamps.
func install(t *testing.T, dst string, data []byte, mtime time.Time) {
	t.Helper()
	if err := writeFileAtomic(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func TestReload(t *testing.T) {
	cfg, _, _ := devSetup(t)
	next, _, _ := devSetup(t)
	clock := &fakeClock{now: time.Now()}
	const interval = 5 * time.Second
	srvCfg, err := cfg.serverConfig(interval, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, srvCfg)

	oldSerial, newSerial := fileSerial(t, cfg.CertFile), fileSerial(t, next.CertFile)
	if got := servedSerial(t, addr); got.Cmp(oldSerial) != 0 {
		t.Fatalf("serving %v, want %v", got, oldSerial)
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	future := time.Now().Add(time.Minute)

	// Half-done rotation: new key, old certificate. The mismatched pair
	// must not replace the working one.
	clock.Advance(interval)
	install(t, cfg.KeyFile, read(next.KeyFile), future)
	if got := servedSerial(t, addr); got.Cmp(oldSerial) != 0 {
		t.Fatalf("after partial rotation serving %v, want old %v", got, oldSerial)
	}

	install(t, cfg.CertFile, read(next.CertFile), future)
	if got := servedSerial(t, addr); got.Cmp(oldSerial) != 0 {
		t.Fatalf("reloaded before the interval elapsed")
	}
	clock.Advance(interval)
	if got := servedSerial(t, addr); got.Cmp(newSerial) != 0 {
		t.Fatalf("after rotation serving %v, want %v", got, newSerial)
	}

	// Deleted files keep the last good certificate in service.
	os.Remove(cfg.CertFile)
	clock.Advance(interval)
	if got := servedSerial(t, addr); got.Cmp(newSerial) != 0 {
		t.Fatalf("after deletion serving %v, want %v", got, newSerial)
	}
}

func TestValidate(t *testing.T) {
	good, caFile, _ := devSetup(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := map[string]struct {
		cfg      Config
		want     string // "" for valid
		notExist bool
	}{
		"default is disabled": {cfg: DefaultConfig()},
		"zero value":          {cfg: Config{}},
		"dev pair":            {cfg: good},
		"with client CA":      {cfg: Config{CertFile: good.CertFile, KeyFile: good.KeyFile, ClientCAFile: caFile}},
		"tls 1.3":             {cfg: Config{CertFile: good.CertFile, KeyFile: good.KeyFile, MinVersion: "1.3"}},
		"cert only":           {cfg: Config{CertFile: good.CertFile}, want: "set together"},
		"key only":            {cfg: Config{KeyFile: good.KeyFile}, want: "set together"},
		"client CA alone":     {cfg: Config{ClientCAFile: caFile}, want: "needs cert_file"},
		"bad min version":     {cfg: Config{MinVersion: "1.1"}, want: "min_version"},
		"missing cert":        {cfg: Config{CertFile: missing, KeyFile: good.KeyFile}, want: "cert_file", notExist: true},
		"missing key":         {cfg: Config{CertFile: good.CertFile, KeyFile: missing}, want: "key_file", notExist: true},
		"missing client CA":   {cfg: Config{CertFile: good.CertFile, KeyFile: good.KeyFile, ClientCAFile: missing}, want: "client_ca_file", notExist: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
			if tc.notExist && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("err = %v, want it to wrap ErrNotExist", err)
			}
		})
	}
}

func TestServerConfigErrors(t *testing.T) {
	good, _, _ := devSetup(t)
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]Config{
		"disabled":     {},
		"garbage cert": {CertFile: garbage, KeyFile: good.KeyFile},
		"swapped pair": {CertFile: good.KeyFile, KeyFile: good.CertFile},
		"garbage CA":   {CertFile: good.CertFile, KeyFile: good.KeyFile, ClientCAFile: garbage},
		"bad version":  {CertFile: good.CertFile, KeyFile: good.KeyFile, MinVersion: "1.0"},
	}
	for name, cfg := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := cfg.ServerConfig(); err == nil {
				t.Error("want error")
			}
		})
	}
}

func TestClientConfigErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"missing": filepath.Join(t.TempDir(), "missing.pem"),
		"no PEM":  garbage,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ClientConfig(path, false); err == nil {
				t.Error("want error")
			}
		})
	}
}

func TestGenerateDev(t *testing.T) {
	now := time.Now()
	dir := t.TempDir()
	first, caFile, created, err := generateDev(dir, nil, now)
	if err != nil || !created {
		t.Fatalf("first: created=%v err=%v", created, err)
	}
	snapshot := func() map[string][]byte {
		m := map[string][]byte{}
		for _, n := range []string{DevCAFile, DevCAKeyFile, DevServerFile, DevServerKeyFile} {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			m[n] = b
		}
		return m
	}
	orig := snapshot()

	for _, n := range []string{DevCAKeyFile, DevServerKeyFile} {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", n, fi.Mode().Perm())
		}
	}
	if caFile != filepath.Join(dir, DevCAFile) || first.CertFile != filepath.Join(dir, DevServerFile) {
		t.Errorf("unexpected paths %q %+v", caFile, first)
	}

	tests := []struct {
		name      string
		prepare   func()
		hosts     []string
		at        time.Time
		created   bool
		changesCA bool
	}{
		{name: "reuse", at: now},
		{name: "reuse subset of hosts", hosts: []string{"localhost"}, at: now},
		{name: "new host", hosts: []string{"localhost", "silt.test", "[::1]"}, at: now, created: true},
		{name: "server expiring", at: now.Add(devServerValidity - 20*24*time.Hour), created: true},
		{name: "server fine after renewal", at: now.Add(devServerValidity - 20*24*time.Hour)},
		{name: "corrupt server cert", at: now, created: true, prepare: func() {
			os.WriteFile(filepath.Join(dir, DevServerFile), []byte("junk"), 0o644)
		}},
		{name: "mismatched server key", at: now, created: true, prepare: func() {
			os.WriteFile(filepath.Join(dir, DevServerKeyFile), orig[DevCAKeyFile], 0o600)
		}},
		{name: "CA expiring", at: now.Add(devCAValidity - 10*24*time.Hour), created: true, changesCA: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				tc.prepare()
			}
			before := snapshot()
			_, _, created, err := generateDev(dir, tc.hosts, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if created != tc.created {
				t.Errorf("created = %v, want %v", created, tc.created)
			}
			after := snapshot()
			if got := !bytes.Equal(before[DevCAFile], after[DevCAFile]); got != tc.changesCA {
				t.Errorf("CA changed = %v, want %v", got, tc.changesCA)
			}
			if !tc.created && !bytes.Equal(before[DevServerFile], after[DevServerFile]) {
				t.Error("server certificate rewritten although reusable")
			}
			if !devServerValid(filepath.Join(dir, DevServerFile), filepath.Join(dir, DevServerKeyFile),
				mustCA(t, dir, tc.at), hostsOr(tc.hosts), tc.at) {
				t.Error("result is not a valid server certificate")
			}
		})
	}

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Errorf("dir holds %d entries, want 4 (temporary files left behind?)", len(entries))
	}
}

func hostsOr(h []string) []string {
	if len(h) == 0 {
		return DefaultDevHosts()
	}
	var out []string
	for _, x := range h {
		out = append(out, strings.Trim(x, "[]"))
	}
	return out
}

func mustCA(t *testing.T, dir string, now time.Time) *x509.Certificate {
	t.Helper()
	ca, _, err := loadDevCA(filepath.Join(dir, DevCAFile), filepath.Join(dir, DevCAKeyFile), now)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
