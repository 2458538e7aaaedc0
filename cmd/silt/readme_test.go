package main

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/silt-io/silt/internal/config"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the config table in README.md")

const (
	tableStart = "<!-- config-table:start -->"
	tableEnd   = "<!-- config-table:end -->"
)

// TestREADMEConfigTable keeps README's config table equal to the keys the
// code has; run with -update-readme after changing a config struct.
func TestREADMEConfigTable(t *testing.T) {
	cfg := defaultServeConfig()
	keys, err := config.Keys(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := tableStart + "\n" + config.MarkdownTable(keys) + tableEnd
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i, j := strings.Index(readme, tableStart), strings.Index(readme, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the %s … %s markers", tableStart, tableEnd)
	}
	got := readme[i : j+len(tableEnd)]
	if got == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile("../../README.md", []byte(readme[:i]+want+readme[j+len(tableEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("README.md's config table is out of date: run go test ./cmd/silt -run TestREADMEConfigTable -update-readme")
}

// TestPrintConfigRoundTrips feeds --print-config's output back as the
// config file and expects the same output.
func TestPrintConfigRoundTrips(t *testing.T) {
	dir := t.TempDir()
	var out1, out2, errb strings.Builder
	if code := run([]string{"serve", "--print-config", "--api.listen", "127.0.0.1:9999", "--core.limits.max_event_bytes", "4096"}, nil, &out1, &errb); code != 0 {
		t.Fatalf("print-config: %d %s", code, errb.String())
	}
	file := dir + "/silt.yaml"
	if err := os.WriteFile(file, []byte(out1.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"serve", "--print-config", "--config", file}, nil, &out2, &errb); code != 0 {
		t.Fatalf("print-config from file: %d %s", code, errb.String())
	}
	if out1.String() != out2.String() {
		t.Fatalf("round trip differs:\n%s\n---\n%s", out1.String(), out2.String())
	}
	if !strings.Contains(out1.String(), "127.0.0.1:9999") || !strings.Contains(out1.String(), "4096") {
		t.Fatalf("flags not reflected:\n%s", out1.String())
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	var out, errb strings.Builder
	t.Setenv("SILT_API_LISTN", "x")
	code := run([]string{"serve", "--print-config"}, nil, &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "SILT_API_LISTEN") {
		t.Fatalf("misspelt env var: code %d, stderr %q", code, errb.String())
	}
}

// Negative runtime settings are refused, naming the key.
func TestServeRejectsBadRuntimeConfig(t *testing.T) {
	for _, flag := range []string{"--runtime.gc_percent=-1", "--runtime.memory_limit_bytes=-1"} {
		var out, errb strings.Builder
		code := run([]string{"serve", "--print-config", flag}, nil, &out, &errb)
		key := strings.TrimPrefix(strings.SplitN(flag, "=", 2)[0], "--")
		if code == 0 || !strings.Contains(errb.String(), key) {
			t.Errorf("%s: code %d, stderr %q; want a refusal naming %s", flag, code, errb.String(), key)
		}
	}
}
