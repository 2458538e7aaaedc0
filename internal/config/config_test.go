package config

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata")

type mode string

type apiConfig struct {
	Listen           string        `koanf:"listen" help:"Address the HTTP API listens on."`
	MaxInflightBytes int64         `koanf:"max_inflight_bytes" help:"Bytes of request bodies held in memory at once."`
	ReadTimeout      time.Duration `koanf:"read_timeout" help:"Deadline for reading a request."`
	AllowedOrigins   []string      `koanf:"allowed_origins" help:"CORS origins; empty allows none."`
}

type storeConfig struct {
	Dir       string        `koanf:"dir" help:"Data directory."`
	SyncEvery time.Duration `koanf:"sync_every" help:"Group commit window."`
	Compress  bool          `koanf:"compress" help:"Compress sealed segments."`
	Ratio     float64       `koanf:"ratio" help:"Compaction trigger ratio."`
	Segments  int           `koanf:"segments" help:"Segments kept open."`
}

type testConfig struct {
	Name     string            `koanf:"name" help:"Node name."`
	API      apiConfig         `koanf:"api"`
	Store    storeConfig       `koanf:"store"`
	Labels   map[string]string `koanf:"labels" help:"Labels attached to metrics."`
	Mode     mode              `koanf:"mode" help:"Run mode."`
	Internal string            `koanf:"-"`
}

func defaults() testConfig {
	return testConfig{
		Name: "node-1",
		API: apiConfig{
			Listen:           "127.0.0.1:8080",
			MaxInflightBytes: 64 << 20,
			ReadTimeout:      30 * time.Second,
		},
		Store: storeConfig{
			Dir:       "/var/lib/silt",
			SyncEvery: 2 * time.Millisecond,
			Compress:  true,
			Ratio:     0.5,
			Segments:  16,
		},
		Mode: "normal",
	}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "silt.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "api:\n  listen: file:1\n")
	tests := map[string]struct {
		args    []string
		environ []string
		want    string
		source  Source
	}{
		"default":       {want: "127.0.0.1:8080", source: SourceDefault},
		"file":          {args: []string{"--config", file}, want: "file:1", source: SourceFile},
		"env":           {environ: []string{"SILT_API_LISTEN=env:1"}, want: "env:1", source: SourceEnv},
		"flag":          {args: []string{"--api.listen=flag:1"}, want: "flag:1", source: SourceFlag},
		"env over file": {args: []string{"--config", file}, environ: []string{"SILT_API_LISTEN=env:1"}, want: "env:1", source: SourceEnv},
		"flag over env": {args: []string{"--api.listen", "flag:1"}, environ: []string{"SILT_API_LISTEN=env:1"}, want: "flag:1", source: SourceFlag},
		"flag over all": {
			args:    []string{"--config", file, "--api.listen", "flag:1"},
			environ: []string{"SILT_API_LISTEN=env:1"},
			want:    "flag:1", source: SourceFlag,
		},
		"file via env": {environ: []string{"SILT_CONFIG=" + file}, want: "file:1", source: SourceFile},
		"last env wins": {
			environ: []string{"SILT_API_LISTEN=env:1", "SILT_API_LISTEN=env:2"},
			want:    "env:2", source: SourceEnv,
		},
		"last flag wins": {args: []string{"--api.listen=a", "--api.listen=b"}, want: "b", source: SourceFlag},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := defaults()
			loaded, err := Load(&cfg, tc.args, tc.environ)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.API.Listen != tc.want {
				t.Errorf("api.listen = %q, want %q", cfg.API.Listen, tc.want)
			}
			if got := loaded.Source("api.listen"); got != tc.source {
				t.Errorf("source = %v, want %v", got, tc.source)
			}
			// Keys nobody set keep their defaults.
			if cfg.Store.Dir != "/var/lib/silt" {
				t.Errorf("store.dir = %q, want default", cfg.Store.Dir)
			}
		})
	}
}

func TestConfigFileSelection(t *testing.T) {
	a := writeFile(t, "name: from-a\n")
	b := writeFile(t, "name: from-b\n")
	cfg := defaults()
	loaded, err := Load(&cfg, []string{"--config=" + a}, []string{"SILT_CONFIG=" + b})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "from-a" || loaded.File != a {
		t.Errorf("name = %q, file = %q; want the --config file to win over SILT_CONFIG", cfg.Name, loaded.File)
	}

	missing := filepath.Join(t.TempDir(), "nope.yaml")
	cfg = defaults()
	_, err = Load(&cfg, nil, []string{"SILT_CONFIG=" + missing})
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing named file: err = %v, want ErrNotExist", err)
	}
}

func TestEnvMapping(t *testing.T) {
	tests := map[string]struct {
		env   string
		check func(testConfig) bool
	}{
		"underscores in key": {"SILT_API_MAX_INFLIGHT_BYTES=1024", func(c testConfig) bool { return c.API.MaxInflightBytes == 1024 }},
		"hex int":            {"SILT_API_MAX_INFLIGHT_BYTES=0x10", func(c testConfig) bool { return c.API.MaxInflightBytes == 16 }},
		"duration":           {"SILT_API_READ_TIMEOUT=1m30s", func(c testConfig) bool { return c.API.ReadTimeout == 90*time.Second }},
		"bool":               {"SILT_STORE_COMPRESS=false", func(c testConfig) bool { return !c.Store.Compress }},
		"float":              {"SILT_STORE_RATIO=0.25", func(c testConfig) bool { return c.Store.Ratio == 0.25 }},
		"int":                {"SILT_STORE_SEGMENTS=3", func(c testConfig) bool { return c.Store.Segments == 3 }},
		"list": {"SILT_API_ALLOWED_ORIGINS=a.example, b.example", func(c testConfig) bool {
			return reflect.DeepEqual(c.API.AllowedOrigins, []string{"a.example", "b.example"})
		}},
		"empty list": {"SILT_API_ALLOWED_ORIGINS=", func(c testConfig) bool { return c.API.AllowedOrigins == nil }},
		"map": {"SILT_LABELS=zone=a,rack=3", func(c testConfig) bool {
			return reflect.DeepEqual(c.Labels, map[string]string{"zone": "a", "rack": "3"})
		}},
		"named string type": {"SILT_MODE=safe", func(c testConfig) bool { return c.Mode == "safe" }},
		"value with equals": {"SILT_NAME=a=b", func(c testConfig) bool { return c.Name == "a=b" }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := defaults()
			if _, err := Load(&cfg, nil, []string{tc.env}); err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("%s not applied: %+v", tc.env, cfg)
			}
		})
	}
}

func TestUnknownKeys(t *testing.T) {
	tests := map[string]struct {
		file       string
		environ    []string
		opts       []Option
		wantName   string // "" means no error expected
		wantSugg   string
		wantSource Source
		wantWhere  string // suffix, for file errors
	}{
		"file typo": {
			file: "api:\n  listn: x\n", wantName: "api.listn", wantSugg: "api.listen",
			wantSource: SourceFile, wantWhere: ":2",
		},
		"file missing section": {
			file: "max_inflight_bytes: 5\n", wantName: "max_inflight_bytes", wantSugg: "api.max_inflight_bytes",
			wantSource: SourceFile, wantWhere: ":1",
		},
		"file unknown section": {
			file: "apii:\n  listen: x\n", wantName: "apii", wantSugg: "api", wantSource: SourceFile,
		},
		"env typo": {
			environ: []string{"SILT_API_LISTN=x"}, wantName: "SILT_API_LISTN", wantSugg: "SILT_API_LISTEN", wantSource: SourceEnv,
		},
		"env top-level typo": {
			environ: []string{"SILT_NAM=x"}, wantName: "SILT_NAM", wantSugg: "SILT_NAME", wantSource: SourceEnv,
		},
		"env inside known section": {
			environ: []string{"SILT_STORE_SOMETHING_ELSE=x"}, wantName: "SILT_STORE_SOMETHING_ELSE", wantSource: SourceEnv,
		},
		"env unrelated is ignored": {environ: []string{"SILT_TOKEN_FILE_FOR_CLI=x", "HOME=/root", "API_LISTEN=x"}},
		"env ignored by option": {
			environ: []string{"SILT_NAM=x"}, opts: []Option{WithIgnoredEnv("SILT_NAM")},
		},
		"other prefix": {
			environ: []string{"SILT_API_LISTN=x", "ACME_API_LISTN=x"}, opts: []Option{WithEnvPrefix("ACME")},
			wantName: "ACME_API_LISTN", wantSugg: "ACME_API_LISTEN", wantSource: SourceEnv,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var args []string
			if tc.file != "" {
				args = []string{"--config", writeFile(t, tc.file)}
			}
			cfg := defaults()
			_, err := Load(&cfg, args, tc.environ, tc.opts...)
			if tc.wantName == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var uk *UnknownKeyError
			if !errors.As(err, &uk) {
				t.Fatalf("err = %v, want UnknownKeyError", err)
			}
			if uk.Name != tc.wantName || uk.Suggestion != tc.wantSugg || uk.Source != tc.wantSource {
				t.Errorf("got name=%q suggestion=%q source=%v, want %q %q %v",
					uk.Name, uk.Suggestion, uk.Source, tc.wantName, tc.wantSugg, tc.wantSource)
			}
			if !strings.HasSuffix(uk.Where, tc.wantWhere) {
				t.Errorf("where = %q, want suffix %q", uk.Where, tc.wantWhere)
			}
			if tc.wantSugg != "" && !strings.Contains(err.Error(), "did you mean") {
				t.Errorf("message %q lacks a suggestion", err)
			}
		})
	}
}

func TestUnknownFlagSuggestion(t *testing.T) {
	cfg := defaults()
	_, err := Load(&cfg, []string{"--api.listn=x"}, nil)
	if err == nil || !strings.Contains(err.Error(), "did you mean --api.listen?") {
		t.Errorf("err = %v, want a suggestion for --api.listen", err)
	}
}

func TestBadValues(t *testing.T) {
	tests := map[string]struct {
		file    string
		environ []string
		args    []string
		key     string
		source  Source
		value   string
		where   string // substring
	}{
		"file duration without unit": {file: "api:\n  read_timeout: 5\n", key: "api.read_timeout", source: SourceFile, value: "5", where: ".yaml:2"},
		"file bool":                  {file: "store:\n  compress: yes\n", key: "store.compress", source: SourceFile, value: "yes"},
		"file list given scalar":     {file: "api:\n  allowed_origins: a.example\n", key: "api.allowed_origins", source: SourceFile, value: "a.example"},
		"file scalar given list":     {file: "name: [a, b]\n", key: "name", source: SourceFile, value: "[a, b]"},
		"file map given list":        {file: "labels: [a]\n", key: "labels", source: SourceFile, value: "[a]"},
		"env int":                    {environ: []string{"SILT_API_MAX_INFLIGHT_BYTES=lots"}, key: "api.max_inflight_bytes", source: SourceEnv, value: "lots", where: "SILT_API_MAX_INFLIGHT_BYTES"},
		"env int overflow":           {environ: []string{"SILT_API_MAX_INFLIGHT_BYTES=99999999999999999999"}, key: "api.max_inflight_bytes", source: SourceEnv, value: "99999999999999999999"},
		"env map":                    {environ: []string{"SILT_LABELS=zone"}, key: "labels", source: SourceEnv, value: "zone"},
		"flag bool":                  {args: []string{"--store.compress=maybe"}, key: "store.compress", source: SourceFlag, value: "maybe", where: "--store.compress"},
		"flag float":                 {args: []string{"--store.ratio", "half"}, key: "store.ratio", source: SourceFlag, value: "half"},
		"flag duration":              {args: []string{"--store.sync_every=soon"}, key: "store.sync_every", source: SourceFlag, value: "soon"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			args := tc.args
			if tc.file != "" {
				args = append(args, "--config", writeFile(t, tc.file))
			}
			cfg := defaults()
			_, err := Load(&cfg, args, tc.environ)
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want ValueError", err)
			}
			if ve.Key != tc.key || ve.Source != tc.source || ve.Value != tc.value {
				t.Errorf("got key=%q source=%v value=%q, want %q %v %q", ve.Key, ve.Source, ve.Value, tc.key, tc.source, tc.value)
			}
			msg := err.Error()
			for _, want := range []string{tc.key, tc.source.String(), tc.value, tc.where} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if !reflect.DeepEqual(cfg, defaults()) {
				t.Errorf("target modified despite error: %+v", cfg)
			}
		})
	}
}

func TestAllErrorsReported(t *testing.T) {
	file := writeFile(t, "api:\n  listn: x\n  read_timeout: soon\n")
	cfg := defaults()
	_, err := Load(&cfg, []string{"--config", file, "--store.segments=many"}, []string{"SILT_STORE_DIRR=x"})
	if err == nil {
		t.Fatal("want error")
	}
	for _, want := range []string{"api.listn", "api.read_timeout", "store.segments", "SILT_STORE_DIRR"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestFileForms(t *testing.T) {
	tests := map[string]struct {
		file    string
		wantErr string
		check   func(testConfig) bool
	}{
		"empty file":       {file: "", check: func(c testConfig) bool { return reflect.DeepEqual(c, defaults()) }},
		"comments only":    {file: "# nothing\n", check: func(c testConfig) bool { return reflect.DeepEqual(c, defaults()) }},
		"empty section":    {file: "api:\n", check: func(c testConfig) bool { return reflect.DeepEqual(c, defaults()) }},
		"dotted key":       {file: "api.listen: dotted\n", check: func(c testConfig) bool { return c.API.Listen == "dotted" }},
		"number as string": {file: "name: 123\n", check: func(c testConfig) bool { return c.Name == "123" }},
		"null resets":      {file: "name:\n", check: func(c testConfig) bool { return c.Name == "" }},
		"anchors": {
			file:  "name: &n shared\napi:\n  listen: *n\n",
			check: func(c testConfig) bool { return c.API.Listen == "shared" },
		},
		"map": {
			file: "labels:\n  zone: a\n  rack: 3\n",
			check: func(c testConfig) bool {
				return reflect.DeepEqual(c.Labels, map[string]string{"zone": "a", "rack": "3"})
			},
		},
		"duplicate via dotted key": {file: "api:\n  listen: a\napi.listen: b\n", wantErr: "already set on line 2"},
		"section given scalar":     {file: "api: 5\n", wantErr: "api is a section"},
		"top level list":           {file: "- a\n", wantErr: "top level must be a mapping"},
		"two documents":            {file: "name: a\n---\nname: b\n", wantErr: "exactly one YAML document"},
		"syntax error":             {file: "api: [\n", wantErr: "parse config file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := defaults()
			_, err := Load(&cfg, []string{"--config", writeFile(t, tc.file)}, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg) {
				t.Errorf("unexpected result %+v", cfg)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	cfg := defaults()
	l, err := NewLoader(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	printConfig := fs.Bool("print-config", false, "print the effective config and exit")
	if err := l.RegisterFlags(fs); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--print-config",
		"--store.compress=false",
		"--api.allowed_origins=a,b", "--api.allowed_origins", "c",
		"--labels", "zone=a", "--labels", "rack=3,zone=b",
		"--store.segments", "4",
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(nil); err != nil {
		t.Fatal(err)
	}
	if !*printConfig {
		t.Error("caller's own flag not parsed")
	}
	want := defaults()
	want.Store.Compress = false
	want.API.AllowedOrigins = []string{"a", "b", "c"}
	want.Labels = map[string]string{"zone": "b", "rack": "3"}
	want.Store.Segments = 4
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}

	usage := fs.FlagUsages()
	for _, s := range []string{
		"--api.listen string",
		`Address the HTTP API listens on. (env SILT_API_LISTEN) (default "127.0.0.1:8080")`,
		"--api.read_timeout duration",
		"(default 30s)",
		"--store.compress",
		"--config string",
		"SILT_CONFIG",
	} {
		if !strings.Contains(usage, s) {
			t.Errorf("usage lacks %q:\n%s", s, usage)
		}
	}

	if err := l.RegisterFlags(pflag.NewFlagSet("x", pflag.ContinueOnError)); err == nil {
		t.Error("registering twice should fail")
	}
	other, _ := NewLoader(&cfg)
	clash := pflag.NewFlagSet("x", pflag.ContinueOnError)
	clash.String("api.listen", "", "")
	if err := other.RegisterFlags(clash); err == nil {
		t.Error("clashing flag should fail")
	}
}

func TestLoadBeforeParse(t *testing.T) {
	cfg := defaults()
	l, err := NewLoader(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RegisterFlags(pflag.NewFlagSet("x", pflag.ContinueOnError)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load(nil); err == nil {
		t.Error("Load before Parse should fail")
	}
}

func TestLoadWithoutFlags(t *testing.T) {
	cfg := defaults()
	l, err := NewLoader(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load([]string{"SILT_NAME=env"}); err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "env" {
		t.Errorf("name = %q", cfg.Name)
	}
}
