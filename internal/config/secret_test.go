package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type secretConfig struct {
	Auth struct {
		User     string `koanf:"user" help:"who"`
		Password string `koanf:"password" secret:"true" help:"the password"`
	} `koanf:"auth"`
}

// TestDumpHidesSecrets: --print-config output is shown on terminals and
// pasted into issues, so a secret's value never appears in it, and the
// placeholder it prints instead is refused when read back.
func TestDumpHidesSecrets(t *testing.T) {
	var cfg secretConfig
	cfg.Auth.User = "etl"
	cfg.Auth.Password = "hunter2-s3cr3t"
	out, err := Dump(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), cfg.Auth.Password) {
		t.Fatalf("the dump shows the secret:\n%s", out)
	}
	if !strings.Contains(string(out), Redacted) || !strings.Contains(string(out), "SILT_AUTH_PASSWORD") {
		t.Fatalf("the dump does not say the secret was left out, nor how to give it:\n%s", out)
	}
	if !strings.Contains(string(out), "user: etl") {
		t.Fatalf("the dump lost a key that is not secret:\n%s", out)
	}

	path := filepath.Join(t.TempDir(), "dump.yaml")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	var back secretConfig
	_, err = Load(&back, []string{"--config", path}, nil)
	if err == nil || !strings.Contains(err.Error(), "auth.password") || !strings.Contains(err.Error(), "placeholder") {
		t.Fatalf("loading the placeholder: got %v, want an error naming auth.password and the placeholder", err)
	}
	// The secret given again by the environment replaces the placeholder.
	if _, err := Load(&back, []string{"--config", path}, []string{"SILT_AUTH_PASSWORD=" + cfg.Auth.Password}); err != nil {
		t.Fatalf("placeholder overridden by the environment: %v", err)
	}
	if back != cfg {
		t.Fatalf("got %+v, want %+v", back, cfg)
	}

	// An empty secret is printed as empty: nothing to hide, and the
	// output still loads as it is.
	cfg.Auth.Password = ""
	out, err = Dump(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), Redacted) {
		t.Fatalf("an empty secret was printed as the placeholder:\n%s", out)
	}
}

func TestSecretMustBeString(t *testing.T) {
	var bad struct {
		N int `koanf:"n" secret:"true"`
	}
	if _, err := Dump(&bad); err == nil || !strings.Contains(err.Error(), "only string keys") {
		t.Fatalf("got %v, want a refusal of a secret int", err)
	}
}
