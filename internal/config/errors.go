package config

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// Source names the layer a value came from.
type Source int

// Layers in increasing precedence.
const (
	SourceDefault Source = iota
	SourceFile
	SourceEnv
	SourceFlag
)

func (s Source) String() string {
	switch s {
	case SourceDefault:
		return "default"
	case SourceFile:
		return "file"
	case SourceEnv:
		return "env"
	case SourceFlag:
		return "flag"
	}
	return fmt.Sprintf("source(%d)", int(s))
}

// ValueError reports a value that does not parse as its key's type.
type ValueError struct {
	Key    string // dotted config key
	Source Source
	Where  string // "silt.yaml:12", "SILT_API_LISTEN" or "--api.listen"
	Value  string // the offending text as written
	Err    error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("%s: invalid value %q for %s: %v", origin(e.Source, e.Where), e.Value, e.Key, e.Err)
}

// origin prefixes a location with its layer so a message stands on its own.
func origin(s Source, where string) string {
	switch s {
	case SourceFile:
		return "config file " + where
	case SourceEnv:
		return "env " + where
	case SourceFlag:
		return "flag " + where
	}
	return where
}

func (e *ValueError) Unwrap() error { return e.Err }

// UnknownKeyError reports a key in the file, or a prefixed environment
// variable, that matches no config field. Misspelt keys would otherwise be
// ignored silently and the default used, which is worse than refusing to start.
type UnknownKeyError struct {
	Name       string // as written: dotted key for files, variable name for env
	Source     Source
	Where      string // "silt.yaml:12" for files; empty for env
	Suggestion string // closest known name in the same form, or ""
}

func (e *UnknownKeyError) Error() string {
	var msg string
	if e.Source == SourceEnv {
		msg = fmt.Sprintf("unknown environment variable %s", e.Name)
		if e.Suggestion != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", e.Suggestion)
		}
		return msg
	}
	msg = fmt.Sprintf("%s: unknown key %q", origin(e.Source, e.Where), e.Name)
	if e.Suggestion != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Suggestion)
	}
	return msg
}

// FlagError adds a "did you mean" hint to pflag's unknown-flag error, using
// every flag defined on fs as candidates. Other errors are returned as is.
// Callers that parse their own FlagSet should pass Parse's error through it.
func FlagError(fs *pflag.FlagSet, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) || ne.GetSpecifiedShortnames() != "" {
		return err
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := suggest(ne.GetSpecifiedName(), names); s != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return err
}
