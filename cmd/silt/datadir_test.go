package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/silt-io/silt/internal/datadir/datadirtest"
)

// nobody is the unprivileged user the other-user checks run as.
const nobody = 65534

// TestDataDirPrivate runs a real server under a umask of 0 with the data
// dir's parent open to everyone, so that only silt's own modes keep other
// users out, and checks what it left: every directory 0700, every file
// 0600, no S3 secret in a copy of the data dir, nothing that opens for
// another user, and no start with a wrong or missing secrets key.
func TestDataDirPrivate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real server processes and waits for tiering; runs in the full suite (make go-test)")
	}
	datadirtest.Umask(t, 0)
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "data")
	s3Addr := freeAddr(t)
	c := &child{t: t, dir: dir, addr: freeAddr(t), extra: []string{
		"--s3.listen", s3Addr,
		"--tiering.max_chunk_bytes", "256", "--tiering.max_lag", "200ms", "--tiering.interval", "50ms",
	}}
	c.start()
	running := true
	defer func() {
		if running {
			c.stop()
		}
	}()
	token, err := os.ReadFile(filepath.Join(dir, rootTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	api := apiClient{base: "http://" + c.addr, token: strings.TrimSpace(string(token)), http: &http.Client{}}
	api.mustOK(t, "POST", "/v1/tenants", `{"name":"crash"}`)
	api.mustOK(t, "POST", "/v1/tenants/crash/streams", `{"name":"s","segments":2}`)
	for i := range 40 {
		api.mustOK(t, "POST", "/v1/tenants/crash/streams/s/events?key=k"+string(rune('a'+i%8)), `{"n":"event-payload"}`)
	}
	waitTiered(t, api, 30*time.Second)

	resp, err := api.do("POST", "/v1/principals/root/s3-keys", "application/json", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var key struct {
		ID     string `json:"access_key_id"`
		Secret string `json:"secret_access_key"`
	}
	err = json.NewDecoder(resp.Body).Decode(&key)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 201 && resp.StatusCode != 200 || key.Secret == "" {
		t.Fatalf("issue S3 key: %d %+v %v", resp.StatusCode, key, err)
	}
	// The sealed secret still signs: the S3 head recovers it.
	s3c := awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://" + s3Addr), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(key.ID, key.Secret, ""),
		RetryMaxAttempts: 1,
	})
	out, err := s3c.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("crash")})
	if err != nil || len(out.Contents) == 0 {
		t.Fatalf("list tier 2 with the new S3 key: %v (%d objects)", err, len(out.Contents))
	}
	c.stop()
	running = false

	files, dirs := datadirtest.AssertPrivate(t, dir)
	for _, p := range []string{"catalog", "logs", "tier2/crash/s", "keys/secrets.key", "keys/nfs-handle.key", "keys/webhdfs-signing.key", rootTokenFile} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v; the check above did not cover it", p, err)
		}
	}
	t.Logf("checked the modes of %d files and %d directories", files, dirs)

	t.Run("a copy holds no S3 secret", func(t *testing.T) {
		cp := filepath.Join(t.TempDir(), "copy")
		if out, err := exec.Command("cp", "-a", dir, cp).CombinedOutput(); err != nil {
			t.Fatalf("cp -a: %v %s", err, out)
		}
		n := 0
		err := filepath.WalkDir(cp, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			for form, s := range secretForms(t, key.Secret) {
				if bytes.Contains(b, s) {
					t.Errorf("%s holds the S3 secret (%s)", p, form)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n < files {
			t.Fatalf("grepped %d files of the copy, the data dir has %d", n, files)
		}
	})

	t.Run("nothing opens for another user", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to run commands as uid/gid 65534 (nobody)")
		}
		// The harness can succeed: a world-readable file beside the data
		// dir, and the listing of its parent, open for nobody.
		control := filepath.Join(root, "control.txt")
		if err := os.WriteFile(control, []byte("readable"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := asNobody("cat", control); err != nil || out != "readable" {
			t.Fatalf("nobody cannot read a 0644 file in a 0755 dir (%v %q): the checks below would prove nothing", err, out)
		}
		if out, err := asNobody("ls", root); err != nil || !strings.Contains(out, "data") {
			t.Fatalf("nobody cannot list the data dir's parent (%v %q)", err, out)
		}
		tried := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			cmd := "cat"
			if d.IsDir() {
				cmd = "ls"
			}
			tried++
			if out, err := asNobody(cmd, p); err == nil {
				t.Errorf("nobody can %s %s: %q", cmd, p, out)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if tried != files+dirs {
			t.Fatalf("tried %d paths, the data dir has %d", tried, files+dirs)
		}
	})

	t.Run("wrong or missing secrets key refuses to start", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.key")
		k := make([]byte, 32)
		rand.Read(k)
		if err := os.WriteFile(other, k, 0o600); err != nil {
			t.Fatal(err)
		}
		missing := filepath.Join(t.TempDir(), "missing.key")
		tests := []struct {
			name string
			file string
			says string
		}{
			{"another key", other, "holds another key"},
			{"no key file", missing, "did not exist"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				code, stderr := runServeChild(t, dir, "--auth.secrets_key_file", tc.file)
				if code != 1 || !strings.Contains(stderr, tc.says) || !strings.Contains(stderr, "S3 secrets cannot be decrypted") {
					t.Fatalf("serve exited %d: %s\nwant 1 and an error saying %q", code, stderr, tc.says)
				}
			})
		}
		if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a refused start left a new key at %s (%v)", missing, err)
		}
	})

	// Last: it revokes the key the other subtests use.
	t.Run("a lost key named by its ID revokes its S3 keys", func(t *testing.T) {
		fresh := filepath.Join(t.TempDir(), "fresh.key")
		_, stderr := runServeChild(t, dir, "--auth.secrets_key_file", fresh)
		m := regexp.MustCompile(`sealed with secrets key ([0-9a-f]{16})`).FindStringSubmatch(stderr)
		if m == nil || !strings.Contains(stderr, "auth.lost_secrets_key_id") {
			t.Fatalf("the refusal names no key ID or no way out: %s", stderr)
		}
		c := &child{t: t, dir: dir, addr: freeAddr(t), extra: []string{
			"--s3.listen", s3Addr, "--auth.secrets_key_file", fresh, "--auth.lost_secrets_key_id", m[1],
		}}
		c.start()
		defer c.stop()
		_, err := s3c.ListObjectsV2(context.Background(), &awss3.ListObjectsV2Input{Bucket: aws.String("crash")})
		if err == nil || !strings.Contains(err.Error(), "InvalidAccessKeyId") {
			t.Fatalf("the revoked key: %v, want InvalidAccessKeyId", err)
		}
	})
}

// asNobody runs name with args as uid and gid 65534 and no supplementary
// groups, and returns its output.
func asNobody(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// runServeChild runs `silt serve` on dir in a child process that is
// expected to fail at start, and returns its exit status and stderr. A
// child that is still running after a while started when it should not
// have; it is killed and the test fails.
func runServeChild(t *testing.T, dir string, extra ...string) (int, string) {
	t.Helper()
	args := []string{"-test.run=^$", "--", "serve", "--core.dir", dir, "--api.listen", "127.0.0.1:0", "--s3.listen", "127.0.0.1:0", "--nfs.listen", "127.0.0.1:0", "--webhdfs.listen", "127.0.0.1:0", "--kafka.listen", "127.0.0.1:0"}
	cmd := exec.Command(os.Args[0], append(args, extra...)...)
	cmd.Env = append(os.Environ(), "SILT_TEST_CHILD=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stderr.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, stderr.String()
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("serve kept running; its stderr: %s", stderr.String())
		return 0, ""
	}
}

// secretForms are the ways an S3 secret could be written down: as issued
// (base64 of 30 random bytes), those bytes raw, and in hex.
func secretForms(t *testing.T, secret string) map[string][]byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		t.Fatalf("secret %q is not base64: %v", secret, err)
	}
	return map[string][]byte{
		"as issued":        []byte(secret),
		"raw":              raw,
		"hex of raw":       []byte(hex.EncodeToString(raw)),
		"hex as issued":    []byte(hex.EncodeToString([]byte(secret))),
		"base64 as issued": []byte(base64.StdEncoding.EncodeToString([]byte(secret))),
	}
}

func TestWarnExposedDataDir(t *testing.T) {
	datadirtest.Umask(t, 0)
	base := t.TempDir()
	mk := func(p string, mode os.FileMode, dir bool) string {
		t.Helper()
		p = filepath.Join(base, p)
		var err error
		if dir {
			err = os.MkdirAll(p, mode)
		} else {
			err = os.WriteFile(p, make([]byte, 32), mode)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	data := mk("data", 0o755, true)
	mk("data/root.token", 0o644, false)
	privateData := mk("private", 0o700, true)
	tier := mk("tier2", 0o750, true)
	keyFile := mk("secrets.key", 0o640, false)
	privateKey := mk("ok.key", 0o600, false)

	tests := []struct {
		name string
		set  func(*serveConfig)
		want []string // paths warned about
	}{
		{"private data dir", func(c *serveConfig) { c.Core.Dir = privateData }, nil},
		{"exposed data dir", func(c *serveConfig) { c.Core.Dir = data }, []string{data}},
		{"tier-2 dir outside the data dir", func(c *serveConfig) {
			c.Core.Dir, c.Tier.FS.Dir = privateData, tier
		}, []string{tier}},
		{"tier-2 dir inside is warned about once", func(c *serveConfig) {
			c.Core.Dir, c.Tier.FS.Dir = data, filepath.Join(data, "tier2")
		}, []string{data}},
		{"key file outside the data dir", func(c *serveConfig) {
			c.Core.Dir, c.Auth.SecretsKeyFile = privateData, keyFile
		}, []string{keyFile}},
		{"private key file", func(c *serveConfig) {
			c.Core.Dir, c.Auth.SecretsKeyFile = privateData, privateKey
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultServeConfig()
			tc.set(&cfg)
			core, logs := observer.New(zap.WarnLevel)
			if err := warnExposedDataDir(context.Background(), cfg, zap.New(core)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range logs.All() {
				got = append(got, e.ContextMap()["path"].(string))
				if fix := e.ContextMap()["fix"]; fix != "chmod -R go-rwx "+e.ContextMap()["path"].(string) {
					t.Errorf("fix = %v", fix)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("warned about %v, want %v", got, tc.want)
			}
		})
	}
}
