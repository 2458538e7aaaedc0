package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestValidate(t *testing.T) {
	tests := map[string]struct {
		cfg     Config
		wantErr string
	}{
		"default":     {cfg: DefaultConfig()},
		"debug json":  {cfg: Config{Level: "debug", Format: "json"}},
		"error text":  {cfg: Config{Level: "error", Format: "console"}},
		"bad level":   {cfg: Config{Level: "fatal", Format: "json"}, wantErr: `level "fatal"`},
		"empty level": {cfg: Config{Format: "json"}, wantErr: "level"},
		"bad format":  {cfg: Config{Level: "info", Format: "logfmt"}, wantErr: `format "logfmt"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if _, err := New(tc.cfg, &bytes.Buffer{}); err == nil {
				t.Error("New accepted an invalid config")
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := map[string]struct {
		cfg   Config
		check func(t *testing.T, out string)
	}{
		"json filters below level": {
			cfg: Config{Level: "warn", Format: "json"},
			check: func(t *testing.T, out string) {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				if len(lines) != 1 {
					t.Fatalf("got %d lines, want only the warning:\n%s", len(lines), out)
				}
				var rec map[string]any
				if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
					t.Fatal(err)
				}
				if rec["level"] != "warn" || rec["msg"] != "careful" || rec["segment"] != float64(7) {
					t.Errorf("unexpected record %v", rec)
				}
				for _, k := range []string{"ts", "caller"} {
					if _, ok := rec[k]; !ok {
						t.Errorf("record lacks %q: %v", k, rec)
					}
				}
			},
		},
		"console": {
			cfg: Config{Level: "debug", Format: "console"},
			check: func(t *testing.T, out string) {
				for _, want := range []string{"DEBUG", "details", "WARN", "careful", `"segment": 7`} {
					if !strings.Contains(out, want) {
						t.Errorf("output lacks %q:\n%s", want, out)
					}
				}
				if strings.Contains(out, "\x1b[") {
					t.Error("console output is coloured")
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			log, err := New(tc.cfg, &buf)
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("details")
			log.Info("hello")
			log.Warn("careful", zap.Int("segment", 7))
			if err := log.Sync(); err != nil {
				t.Fatal(err)
			}
			tc.check(t, buf.String())
		})
	}
}
