// Package logging builds the process logger from the `log` config block.
// It exists so that every command constructs its logger the same way and
// nothing reaches for a global one: the logger is passed down explicitly.
package logging

import (
	"fmt"
	"io"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Config is the `log` block.
type Config struct {
	Level  string `koanf:"level" help:"Minimum level logged: debug, info, warn or error."`
	Format string `koanf:"format" help:"Output format: json (for log collectors) or console (for people)."`
}

// DefaultConfig logs at info level as JSON. JSON is the default, rather than
// picking by whether stderr is a terminal, so that output never changes
// shape depending on how the process was started.
func DefaultConfig() Config {
	return Config{Level: "info", Format: "json"}
}

// Validate rejects levels and formats New does not accept.
func (c Config) Validate() error {
	if _, err := c.level(); err != nil {
		return err
	}
	switch c.Format {
	case "json", "console":
		return nil
	}
	return fmt.Errorf("log: format %q: want json or console", c.Format)
}

// level accepts only the four levels worth configuring; zap's dpanic, panic
// and fatal would silence errors, which is never what an operator wants.
func (c Config) level() (zapcore.Level, error) {
	switch c.Level {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("log: level %q: want debug, info, warn or error", c.Level)
}

// New returns a logger writing to w (os.Stderr in production). Writes are
// serialised, so w need not be safe for concurrent use. The caller should
// Sync the logger before exiting; Sync on a terminal's stderr can report
// "invalid argument" or "inappropriate ioctl", which is safe to ignore.
func New(cfg Config, w io.Writer) (*zap.Logger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	lvl, _ := cfg.level()

	var enc zapcore.Encoder
	switch cfg.Format {
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.TimeKey = "ts"
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder // readable and sortable, unlike epoch floats
		ec.EncodeDuration = zapcore.StringDurationEncoder
		enc = zapcore.NewJSONEncoder(ec)
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339TimeEncoder
		// No colour: w is often a file or a pipe, where escape codes are noise.
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), lvl)
	return zap.New(core, zap.AddCaller(), zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))), nil
}
