// Package config loads a nested config struct from defaults, a YAML file,
// SILT_* environment variables and command-line flags, in that order of
// increasing precedence.
//
// The struct describes itself with two tags: `koanf:"key"` names a field and
// `help:"..."` documents it. Nested structs form dotted keys, so field Listen
// inside field API becomes api.listen, read from
//
//	api:
//	  listen: ":8080"          # YAML file
//	SILT_API_LISTEN=:8080      # environment
//	--api.listen=:8080         # flag
//
// Leaf types are string, bool, int, int64, float64, time.Duration (written as
// a Go duration, "5s"), []string and map[string]string, including named types
// with those underlying kinds. In the environment and on the command line a
// list is comma separated ("a,b") and a map is comma separated key=value pairs
// ("zone=a,rack=3"); values containing commas can only be set in the file.
// Repeating a list or map flag appends to it.
//
// Unknown keys in the file and unknown SILT_* variables that look like config
// keys are errors, with a suggestion for the closest known key: a misspelt
// setting silently falling back to its default is the failure this package
// exists to prevent.
//
// Load does not call Validate on the struct or its sections. The caller
// does, after Load, because only it knows which cross-section rules apply
// (and because --print-config must work on configs that fail validation).
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/pflag"
)

// ConfigFlag is the flag naming the YAML file; PREFIX_CONFIG is its env form.
const ConfigFlag = "config"

// DefaultEnvPrefix is prepended, with an underscore, to every env name.
const DefaultEnvPrefix = "SILT"

type options struct {
	envPrefix  string
	ignoredEnv map[string]bool
}

// Option adjusts a Loader.
type Option func(*options)

// WithEnvPrefix replaces DefaultEnvPrefix.
func WithEnvPrefix(prefix string) Option {
	return func(o *options) { o.envPrefix = prefix }
}

// WithIgnoredEnv exempts variables that share the prefix but are not config
// keys (SILT_TOKEN read by the CLI, say) from the unknown-variable check.
func WithIgnoredEnv(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.ignoredEnv[n] = true
		}
	}
}

func buildOptions(opts []Option) options {
	o := options{envPrefix: DefaultEnvPrefix, ignoredEnv: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Loaded describes the outcome of a successful load.
type Loaded struct {
	// File is the config file that was read, or "" if none was named.
	File string
	// Sources records, for every key not left at its default, the layer
	// that supplied the final value.
	Sources map[string]Source
}

// Source reports which layer set key; SourceDefault if none did.
func (l *Loaded) Source(key string) Source {
	return l.Sources[key]
}

// Loader holds the schema of one target struct. Use it directly when the
// caller owns the FlagSet:
//
//	l, err := config.NewLoader(&cfg)
//	err = l.RegisterFlags(fs)
//	fs.Bool("print-config", false, "...")
//	err = config.FlagError(fs, fs.Parse(args))
//	loaded, err := l.Load(os.Environ())
type Loader struct {
	schema *schema
	target reflect.Value
	opts   options

	fs    *pflag.FlagSet
	flags map[string]*flagValue // by key
}

// NewLoader prepares to load into target, a pointer to a struct already
// holding the defaults. The defaults are read again at Load time, not here.
func NewLoader(target any, opts ...Option) (*Loader, error) {
	o := buildOptions(opts)
	s, v, err := newSchema(target, o.envPrefix)
	if err != nil {
		return nil, err
	}
	if _, clash := s.byKey[ConfigFlag]; clash {
		return nil, fmt.Errorf("config: key %q is reserved for the config file flag", ConfigFlag)
	}
	return &Loader{schema: s, target: v, opts: o}, nil
}

// Load is the one-call form for callers without flags of their own: args
// may contain only the generated flags and --config. Flag parse errors are
// returned rather than printed, including pflag.ErrHelp for --help.
func Load(target any, args, environ []string, opts ...Option) (*Loaded, error) {
	l, err := NewLoader(target, opts...)
	if err != nil {
		return nil, err
	}
	fs := pflag.NewFlagSet("silt", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := l.RegisterFlags(fs); err != nil {
		return nil, err
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("parse flags: %w", FlagError(fs, err))
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("parse flags: unexpected argument %q", fs.Arg(0))
	}
	return l.Load(environ)
}

// EnvConfigVar is the environment variable naming the config file.
func (l *Loader) EnvConfigVar() string {
	return l.opts.envPrefix + "_CONFIG"
}

// RegisterFlags adds --config and one flag per key to fs. Defaults shown in
// the help are the target's values at this moment. Values are only parsed by
// Load, so that a bad flag is reported the same way as a bad env var.
func (l *Loader) RegisterFlags(fs *pflag.FlagSet) error {
	if l.fs != nil {
		return errors.New("config: flags already registered")
	}
	if fs.Lookup(ConfigFlag) != nil {
		return fmt.Errorf("config: flag --%s already defined", ConfigFlag)
	}
	for _, f := range l.schema.fields {
		if fs.Lookup(f.key) != nil {
			return fmt.Errorf("config: flag --%s already defined", f.key)
		}
	}
	fs.String(ConfigFlag, "", fmt.Sprintf("path of the YAML config file (env %s)", l.EnvConfigVar()))
	l.flags = map[string]*flagValue{}
	for _, f := range l.schema.fields {
		fv := &flagValue{f: f, def: formatText(f.kind, getValue(f.leaf(l.target), f.kind))}
		usage := f.help
		if usage != "" {
			usage += " "
		}
		usage += "(env " + f.env + ")"
		pf := fs.VarPF(fv, f.key, "", usage)
		if f.kind == kindBool {
			pf.NoOptDefVal = "true"
		}
		l.flags[f.key] = fv
	}
	l.fs = fs
	return nil
}

// Load applies file, env and flags on top of the target's current values.
// environ is in os.Environ form. If RegisterFlags was called, the FlagSet
// must have been parsed. On error the target is left unchanged; all problems
// found are reported together.
func (l *Loader) Load(environ []string) (*Loaded, error) {
	if l.fs != nil && !l.fs.Parsed() {
		return nil, errors.New("config: Load called before the flag set was parsed")
	}
	env := map[string]string{}
	var envOrder []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := env[name]; !seen {
			envOrder = append(envOrder, name)
		}
		env[name] = val
	}

	path := env[l.EnvConfigVar()]
	if l.fs != nil && l.fs.Changed(ConfigFlag) {
		path, _ = l.fs.GetString(ConfigFlag)
	}

	work := reflect.New(l.target.Type()).Elem()
	work.Set(l.target)
	loaded := &Loaded{File: path, Sources: map[string]Source{}}

	var errs []error
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read config file: %w", err)
		}
		errs = append(errs, l.applyFile(work, path, data, loaded.Sources)...)
	}
	errs = append(errs, l.applyEnv(work, env, envOrder, loaded.Sources)...)
	errs = append(errs, l.applyFlags(work, loaded.Sources)...)
	for _, f := range l.schema.fields {
		if f.secret && getValue(f.leaf(work), f.kind) == Redacted {
			errs = append(errs, fmt.Errorf("%s is %q, the placeholder --print-config writes for a secret: give the secret itself (in the file, by %s or by --%s)", f.key, Redacted, f.env, f.key))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	l.target.Set(work)
	return loaded, nil
}

func (l *Loader) applyEnv(work reflect.Value, env map[string]string, order []string, sources map[string]Source) []error {
	var errs []error
	prefix := l.opts.envPrefix + "_"
	for _, name := range order {
		if !strings.HasPrefix(name, prefix) || name == l.EnvConfigVar() || l.opts.ignoredEnv[name] {
			continue
		}
		f, ok := l.schema.byEnv[name]
		if !ok {
			if s, looks := l.looksLikeKey(name); looks {
				errs = append(errs, &UnknownKeyError{Name: name, Source: SourceEnv, Suggestion: s})
			}
			continue
		}
		val, err := parseText(f.kind, env[name])
		if err != nil {
			errs = append(errs, &ValueError{Key: f.key, Source: SourceEnv, Where: name, Value: env[name], Err: err})
			continue
		}
		setValue(f.leaf(work), f.kind, val)
		sources[f.key] = SourceEnv
	}
	return errs
}

// looksLikeKey decides whether an unknown prefixed variable was meant as a
// config key. Erroring on every SILT_* variable would break tools that share
// the prefix, so only names inside a known section (SILT_API_…) or a typo
// away from a known name count. It also returns the suggestion.
func (l *Loader) looksLikeKey(name string) (string, bool) {
	prefix := l.opts.envPrefix + "_"
	var names []string
	for _, f := range l.schema.fields {
		names = append(names, strings.TrimPrefix(f.env, prefix))
	}
	bare := strings.TrimPrefix(name, prefix)
	s := suggest(bare, names)
	if s != "" {
		s = prefix + s
	}
	for _, sec := range l.schema.topEnv {
		if strings.HasPrefix(name, sec) {
			return s, true
		}
	}
	return s, s != ""
}

func (l *Loader) applyFlags(work reflect.Value, sources map[string]Source) []error {
	if l.fs == nil {
		return nil
	}
	var errs []error
	for _, f := range l.schema.fields {
		fv := l.flags[f.key]
		if len(fv.raws) == 0 {
			continue
		}
		val, err := fv.parse()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		setValue(f.leaf(work), f.kind, val)
		sources[f.key] = SourceFlag
	}
	return errs
}

// flagValue records raw flag text; parsing waits for Load so that flag
// errors carry the same detail as env and file errors.
type flagValue struct {
	f    *field
	def  string
	raws []string
}

func (v *flagValue) String() string {
	if len(v.raws) == 0 {
		return v.def
	}
	return strings.Join(v.raws, ",")
}

func (v *flagValue) Set(s string) error {
	v.raws = append(v.raws, s)
	return nil
}

func (v *flagValue) Type() string {
	switch v.f.kind {
	case kindList:
		return "strings"
	case kindMap:
		return "key=value"
	}
	return v.f.kind.String()
}

// IsBoolFlag lets pflag print bool flags without a value placeholder.
func (v *flagValue) IsBoolFlag() bool { return v.f.kind == kindBool }

// parse combines repeated occurrences: the last wins for scalars, lists
// append and maps merge.
func (v *flagValue) parse() (any, error) {
	var list []string
	var m map[string]string
	var last any
	for _, raw := range v.raws {
		val, err := parseText(v.f.kind, raw)
		if err != nil {
			return nil, &ValueError{Key: v.f.key, Source: SourceFlag, Where: "--" + v.f.key, Value: raw, Err: err}
		}
		switch v.f.kind {
		case kindList:
			list = append(list, val.([]string)...)
		case kindMap:
			for k, x := range val.(map[string]string) {
				if m == nil {
					m = map[string]string{}
				}
				m[k] = x
			}
		default:
			last = val
		}
	}
	switch v.f.kind {
	case kindList:
		return list, nil
	case kindMap:
		return m, nil
	}
	return last, nil
}
