package main

import (
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/internal/config"
)

// fakeAPI answers GET /v1/tenants with one tenant and records the
// Authorization header of every request.
type fakeAPI struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newFakeAPI(t *testing.T, tls bool) *fakeAPI {
	f := &fakeAPI{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.auths = append(f.auths, r.Header.Get("Authorization"))
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"tenants":[{"name":"acme"}]}`))
	})
	f.Server = httptest.NewUnstartedServer(h)
	// The untrusted-certificate test's handshakes fail by design.
	f.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		f.StartTLS()
	} else {
		f.Start()
	}
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAPI) lastAuth() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.auths) == 0 {
		return "(no request)"
	}
	return f.auths[len(f.auths)-1]
}

// caFile writes the TLS server's certificate as a PEM CA file.
func caFile(t *testing.T, ts *httptest.Server) string {
	path := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Client flags are the root's: they work before the verb, between verb
// and action, and after the action, as do their variables.
func TestCLIClientFlagsAnywhere(t *testing.T) {
	plain := newFakeAPI(t, false)
	secure := newFakeAPI(t, true)
	ca := caFile(t, secure.Server)
	tokFile := filepath.Join(t.TempDir(), "tok")
	os.WriteFile(tokFile, []byte("silt_fromfile\n"), 0o600)
	for name, tc := range map[string]struct {
		args     []string
		env      []string
		api      *fakeAPI
		wantAuth string
		json     bool
	}{
		"before the verb":                {args: []string{"--server", plain.URL, "--token", "silt_a", "tenant", "list"}, api: plain, wantAuth: "Bearer silt_a"},
		"after the action":               {args: []string{"tenant", "list", "--server", plain.URL, "--token", "silt_a"}, api: plain, wantAuth: "Bearer silt_a"},
		"between verb and action":        {args: []string{"tenant", "--server=" + plain.URL, "list", "--token=silt_a"}, api: plain, wantAuth: "Bearer silt_a"},
		"-o json before the verb":        {args: []string{"-o", "json", "--server", plain.URL, "--token", "silt_a", "tenant", "list"}, api: plain, wantAuth: "Bearer silt_a", json: true},
		"-o json after the action":       {args: []string{"tenant", "list", "-ojson", "--server", plain.URL, "--token", "silt_a"}, api: plain, wantAuth: "Bearer silt_a", json: true},
		"ca-file first, as dev-tls says": {args: []string{"--ca-file", ca, "--server", secure.URL, "--token", "silt_a", "tenant", "list"}, api: secure, wantAuth: "Bearer silt_a"},
		"from the environment":           {args: []string{"tenant", "list"}, env: []string{"SILT_SERVER=" + secure.URL, "SILT_CA_FILE=" + ca, "SILT_TOKEN=silt_env"}, api: secure, wantAuth: "Bearer silt_env"},
		"a flag beats the environment":   {args: []string{"--token", "silt_flag", "tenant", "list"}, env: []string{"SILT_SERVER=" + plain.URL, "SILT_TOKEN=silt_env"}, api: plain, wantAuth: "Bearer silt_flag"},
		"--token-file beats SILT_TOKEN":  {args: []string{"--token-file", tokFile, "tenant", "list"}, env: []string{"SILT_SERVER=" + plain.URL, "SILT_TOKEN=silt_env"}, api: plain, wantAuth: "Bearer silt_fromfile"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runSilt(t, invocation{args: tc.args, env: tc.env})
			if r.code != 0 {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if got := tc.api.lastAuth(); got != tc.wantAuth {
				t.Fatalf("Authorization %q, want %q", got, tc.wantAuth)
			}
			var ts []map[string]any
			if err := json.Unmarshal([]byte(r.stdout), &ts); (err == nil) != tc.json {
				t.Fatalf("stdout %q: JSON: %v, want JSON: %v", r.stdout, err, tc.json)
			}
			if !strings.Contains(r.stdout, "acme") {
				t.Fatalf("stdout %q lacks the tenant", r.stdout)
			}
		})
	}
}

// commandPaths lists every verb and action, as typed after "silt".
func commandPaths() [][]string {
	root := (&app{}).rootCmd()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				walk(s, append(append([]string(nil), path...), s.Name()))
			}
		}
	}
	walk(root, nil)
	return paths
}

// Every verb's and group's --help goes to stdout, exits 0 and shows
// examples, as does silt help VERB; a secret in the environment is never
// printed, only where the value comes from.
func TestCLIHelp(t *testing.T) {
	const secret = "silt_secret_never_printed"
	paths := commandPaths()
	if len(paths) < 30 {
		t.Fatalf("only %d commands found", len(paths))
	}
	for _, path := range paths {
		t.Run(strings.Join(append([]string{"silt"}, path...), " "), func(t *testing.T) {
			env := []string{"SILT_TOKEN=" + secret}
			r := runSilt(t, invocation{args: append(append([]string(nil), path...), "--help"), env: env})
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("--help: exit %d, stderr %q", r.code, r.stderr)
			}
			_, examples, _ := strings.Cut(r.stdout, "\nExamples:\n  ")
			examples, _, _ = strings.Cut(examples, "\n\n")
			if !strings.Contains(r.stdout, "Usage:\n  silt") || !strings.Contains(examples, "silt ") {
				t.Errorf("--help lacks a usage line or examples:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, secret) {
				t.Errorf("--help prints SILT_TOKEN's value:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "--token") && !strings.Contains(r.stdout, "(from SILT_TOKEN)") {
				t.Errorf("--help does not say the token comes from SILT_TOKEN:\n%s", r.stdout)
			}
			short := runSilt(t, invocation{args: append(append([]string(nil), path...), "-h"), env: env})
			viaHelp := runSilt(t, invocation{args: append([]string{"help"}, path...), env: env})
			if short.code != 0 || short.stdout != r.stdout || viaHelp.code != 0 || viaHelp.stdout != r.stdout {
				t.Errorf("-h (exit %d) and silt help (exit %d) differ from --help", short.code, viaHelp.code)
			}
		})
	}
}

// silt serve --help lists every config flag under its section's heading,
// in the config's section order.
func TestServeHelpSections(t *testing.T) {
	r := runSilt(t, invocation{args: []string{"serve", "--help"}})
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	keys, err := config.Keys(new(defaultServeConfig()))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]int{}
	last := -1
	for _, k := range keys {
		sec, _, _ := strings.Cut(k.Name, ".")
		if _, ok := headings[sec]; !ok {
			at := strings.Index(r.stdout, "("+sec+".*):\n")
			if at < 0 {
				t.Fatalf("no heading for section %s:\n%s", sec, r.stdout)
			}
			if at < last {
				t.Errorf("section %s is out of the config's order", sec)
			}
			headings[sec], last = at, at
		}
	}
	for _, k := range keys {
		sec, _, _ := strings.Cut(k.Name, ".")
		at := strings.Index(r.stdout, "  "+k.Flag+" ")
		if at < 0 {
			at = strings.Index(r.stdout, "  "+k.Flag+"\n")
		}
		if at < headings[sec] {
			t.Errorf("%s is not listed under its section's heading", k.Flag)
			continue
		}
		for other, h := range headings {
			if other != sec && h > headings[sec] && h < at {
				t.Errorf("%s is listed under section %s, not %s", k.Flag, other, sec)
			}
		}
	}
	if strings.Contains(r.stdout, `\n`) {
		t.Errorf("help has a literal \\n:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "[=true|false]") {
		t.Errorf("bool flags are shown in a second style:\n%s", r.stdout)
	}
}

// How silt is called wrongly: exit status 2, the reason on stderr, and
// nothing on stdout.
func TestCLIUsageErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		want string // in stderr
	}{
		"no verb":                       {nil, "Usage:"},
		"unknown verb, with a guess":    {[]string{"tenat", "list"}, `unknown verb "tenat" (did you mean tenant?)`},
		"group without an action":       {[]string{"stream"}, "silt stream needs an action: create, list, describe, delete"},
		"unknown action, with a guess":  {[]string{"tenant", "craete", "x"}, `silt tenant has no action "craete" (did you mean create?)`},
		"too few arguments":             {[]string{"grant", "etl", "read"}, "want PRINCIPAL read|append|admin RESOURCE, got 2 argument(s)"},
		"unknown flag, with a guess":    {[]string{"read", "acme/x", "--segmnt", "1"}, "did you mean --segment?"},
		"bad -o":                        {[]string{"tenant", "list", "-o", "yaml"}, `-o "yaml": want text, json or raw`},
		"-o raw where it means nothing": {[]string{"tenant", "list", "-o", "raw"}, "-o raw is for read and tail"},
		"--format and -o disagree":      {[]string{"read", "acme/x", "--format", "json", "-o", "text"}, "--format json and -o text disagree"},
		"not TENANT/STREAM":             {[]string{"read", "acme"}, `"acme": want TENANT/STREAM`},
		"client flag to serve":          {[]string{"serve", "--token", "x"}, "--token is a client flag; silt serve does not take it"},
		"argument to serve":             {[]string{"serve", "now"}, "silt serve takes no arguments"},
		"misspelt serve flag":           {[]string{"serve", "--api.lisen", "x"}, "did you mean --api.listen?"},
		"completion for another shell":  {[]string{"completion", "tcsh"}, `"tcsh": want bash, zsh or fish`},
	} {
		t.Run(name, func(t *testing.T) {
			r := runSilt(t, invocation{args: tc.args})
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 and %q on stderr", r.code, r.stdout, r.stderr, tc.want)
			}
			if strings.Count(r.stderr, "silt:") > 1 {
				t.Fatalf("stderr says silt: more than once: %q", r.stderr)
			}
		})
	}
}

func TestCLICompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "complete -o default -F __start_silt silt",
		"zsh":  "#compdef silt",
		"fish": "complete -c silt",
	} {
		t.Run(shell, func(t *testing.T) {
			r := runSilt(t, invocation{args: []string{"completion", shell}})
			if r.code != 0 || !strings.Contains(r.stdout, want) {
				t.Fatalf("exit %d, stderr %q; stdout lacks %q", r.code, r.stderr, want)
			}
		})
	}
	// The scripts ask the binary itself for candidates.
	r := runSilt(t, invocation{args: []string{"__complete", "str"}})
	if r.code != 0 || !strings.Contains(r.stdout, "stream") {
		t.Fatalf("completing 'str': exit %d, %q", r.code, r.stdout)
	}
}

func TestCLIVersion(t *testing.T) {
	r := runSilt(t, invocation{args: []string{"version"}})
	for _, want := range []string{testVersion, testCommit, testDate} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("silt version: exit %d, stdout %q lacks %q", r.code, r.stdout, want)
		}
	}
	r = runSilt(t, invocation{args: []string{"version", "-o", "json"}})
	var v versionInfo
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Version != testVersion || v.Commit != testCommit || v.Date != testDate || v.Go == "" {
		t.Fatalf("silt version -o json: %q (%v)", r.stdout, err)
	}
	r = runSilt(t, invocation{args: []string{"--version"}})
	if r.code != 0 || !strings.Contains(r.stdout, testVersion) {
		t.Fatalf("silt --version: exit %d, %q", r.code, r.stdout)
	}
}

// Without -ldflags (go build, go install) the version comes from Go's
// build information.
func TestVersionFallback(t *testing.T) {
	vcs := func(kv ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
		for i := 0; i < len(kv); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return bi
	}
	installed := vcs()
	installed.Main.Version = "v1.4.0"
	for name, tc := range map[string]struct {
		version, commit, date string
		bi                    *debug.BuildInfo
		want                  versionInfo
	}{
		"make: the link's values win": {"v1", "abc", "2026", vcs("vcs.revision", "def", "vcs.time", "2025"), versionInfo{Version: "v1", Commit: "abc", Date: "2026"}},
		"go build in a checkout":      {"", "", "", vcs("vcs.revision", "def", "vcs.time", "2025-05-05T00:00:00Z"), versionInfo{Version: "dev", Commit: "def", Date: "2025-05-05T00:00:00Z"}},
		"go build with changes":       {"", "", "", vcs("vcs.revision", "def", "vcs.time", "t", "vcs.modified", "true"), versionInfo{Version: "dev", Commit: "def-dirty", Date: "t"}},
		"go install at a version":     {"", "", "", installed, versionInfo{Version: "v1.4.0", Commit: "unknown", Date: "unknown"}},
		"no build information":        {"", "", "", nil, versionInfo{Version: "dev", Commit: "unknown", Date: "unknown"}},
	} {
		t.Run(name, func(t *testing.T) {
			got := versionOf(tc.version, tc.commit, tc.date, tc.bi)
			got.Go = ""
			if got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A server whose certificate the CLI does not trust: the error says how
// to trust it, or, when the certificate is trusted but for other names,
// that a CA file will not help.
func TestCLIUntrustedCertificate(t *testing.T) {
	secure := newFakeAPI(t, true)
	ca := caFile(t, secure.Server)
	// httptest's certificate is for 127.0.0.1 and example.com, not
	// localhost.
	otherName := strings.Replace(secure.URL, "127.0.0.1", "localhost", 1)
	for name, tc := range map[string]struct {
		args      []string
		want, not string
	}{
		"unknown CA":     {[]string{"--server", secure.URL}, "give its CA with --ca-file FILE or SILT_CA_FILE", "other names"},
		"other hostname": {[]string{"--server", otherName, "--ca-file", ca}, "certificate is for other names", "give its CA"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runSilt(t, invocation{args: append([]string{"tenant", "list", "--token", "silt_a"}, tc.args...)})
			if r.code != 1 || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, tc.not) {
				t.Fatalf("exit %d, stderr %q; want %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// With no token anywhere the CLI says so, and where it looked, before an
// answer that would otherwise look like lost data.
func TestCLIAnonymousWarning(t *testing.T) {
	api := newFakeAPI(t, false)
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		env      []string
		rootTok  bool // a silt-data/root.token in the working directory
		wantWarn bool
	}{
		"no token anywhere":         {wantWarn: true},
		"SILT_TOKEN":                {env: []string{"SILT_TOKEN=silt_x"}},
		"the data dir's root token": {rootTok: true},
	} {
		t.Run(name, func(t *testing.T) {
			wd := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			os.MkdirAll(filepath.Join(wd, "silt-data"), 0o700)
			if tc.rootTok {
				os.WriteFile(filepath.Join(wd, "silt-data", "root.token"), []byte("silt_root\n"), 0o600)
			}
			r := runSilt(t, invocation{args: []string{"tenant", "list", "--server", api.URL}, env: tc.env, dir: wd})
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			warned := strings.Contains(r.stderr, "acting as anonymous")
			if warned != tc.wantWarn {
				t.Fatalf("stderr %q: warned %v, want %v", r.stderr, warned, tc.wantWarn)
			}
			if warned {
				for _, where := range []string{"--token", "SILT_TOKEN", "SILT_TOKEN_FILE", filepath.Join(wd, "silt-data", "root.token")} {
					if !strings.Contains(r.stderr, where) {
						t.Errorf("the warning does not say it looked at %s: %q", where, r.stderr)
					}
				}
				if api.lastAuth() != "" {
					t.Errorf("sent Authorization %q", api.lastAuth())
				}
			}
		})
	}
}
