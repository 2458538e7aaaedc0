package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// golden compares got with testdata/name, rewriting it under -rewrite.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -rewrite to update)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	tests := map[string]testConfig{
		"defaults": defaults(),
		"zero":     {},
		"tricky values": {
			Name: "true", // would read back as a bool if left unquoted
			API: apiConfig{
				Listen:           "",
				MaxInflightBytes: -1,
				ReadTimeout:      90*time.Minute + 1500*time.Millisecond,
				AllowedOrigins:   []string{"https://a.example", "123", "null", "a, b", "#x"},
			},
			Store: storeConfig{
				Dir:       "C:\\data: silt",
				SyncEvery: 0,
				Compress:  false,
				Ratio:     1,
				Segments:  1 << 40,
			},
			Labels: map[string]string{"zone": "a", "empty": "", "yes": "no", "multi": "line\nbreak"},
			Mode:   "~",
		},
		"large float": {Store: storeConfig{Ratio: 1e21}},
		"tiny float":  {Store: storeConfig{Ratio: 1.5e-9}},
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			out, err := Dump(&in)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "dump.yaml")
			if err := os.WriteFile(path, out, 0o600); err != nil {
				t.Fatal(err)
			}
			// Start from different values so every key must come from the file.
			got := defaults()
			got.API.AllowedOrigins = []string{"stale"}
			got.Labels = map[string]string{"stale": "1"}
			got.Name = "stale"
			if _, err := Load(&got, []string{"--config", path}, nil); err != nil {
				t.Fatalf("reload: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(got, in) {
				t.Errorf("round trip changed the config\n in: %+v\nout: %+v\nyaml:\n%s", in, got, out)
			}
		})
	}
}

func TestDumpGolden(t *testing.T) {
	cfg := defaults()
	cfg.API.AllowedOrigins = []string{"https://a.example"}
	cfg.Labels = map[string]string{"zone": "a", "rack": "3"}
	out, err := Dump(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "dump.yaml", string(out))
}

func TestKeys(t *testing.T) {
	cfg := defaults()
	keys, err := Keys(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := Key{
		Name:    "api.max_inflight_bytes",
		Env:     "SILT_API_MAX_INFLIGHT_BYTES",
		Flag:    "--api.max_inflight_bytes",
		Type:    "int64",
		Default: "67108864",
		Help:    "Bytes of request bodies held in memory at once.",
	}
	var found bool
	for _, k := range keys {
		if k.Name == want.Name {
			found = true
			if k != want {
				t.Errorf("got %+v\nwant %+v", k, want)
			}
		}
	}
	if !found {
		t.Errorf("key %s missing", want.Name)
	}
	if len(keys) != 12 {
		t.Errorf("len(keys) = %d, want 12", len(keys))
	}
	if _, err := Keys(cfg); err == nil {
		t.Error("Keys on a non-pointer should fail")
	}
}

func TestMarkdownTable(t *testing.T) {
	cfg := defaults()
	cfg.Labels = map[string]string{"zone": "a"}
	keys, err := Keys(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	keys = append(keys, Key{Name: "odd", Type: "string", Default: "a|b", Help: "pipes | and\nnewlines"})
	golden(t, "keys.md", MarkdownTable(keys))
}
