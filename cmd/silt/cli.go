package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/silt-io/silt/client"
	"github.com/silt-io/silt/internal/tlsconf"
)

// app is one run of silt: its streams and the client flags every verb
// shares.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	server, token, tokenFile, caFile string
	output                           string
}

// Command annotations.
const (
	// annotRaw marks the verbs that take -o raw (read, tail).
	annotRaw = "silt/raw"
	// annotLocal marks the verbs that do not talk to a server (serve,
	// version, completion): their help leaves the client flags out.
	annotLocal = "silt/local"
)

const defaultServer = "http://127.0.0.1:7070"

// envFlag is a client flag that the environment can set.
type envFlag struct {
	name, env string
	// secret values are never shown (in help, say).
	secret bool
}

var clientEnv = []envFlag{
	{name: "server", env: "SILT_SERVER"},
	{name: "token", env: "SILT_TOKEN", secret: true},
	{name: "token-file", env: "SILT_TOKEN_FILE"},
	{name: "ca-file", env: "SILT_CA_FILE"},
}

// clientEnvVars are the variables the client flags read; silt serve's
// config loader must not take them for misspelt config keys.
func clientEnvVars() []string {
	var names []string
	for _, f := range clientEnv {
		names = append(names, f.env)
	}
	return names
}

// addClientFlags defines the client flags on the root, as persistent
// flags, so that they go before or after any verb. Their defaults are the
// built-in ones: a value from the environment is applied after parsing
// (resolveFlags), so that help can say where it comes from without
// printing it.
func (a *app) addClientFlags(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&a.server, "server", defaultServer, "`URL` of the silt API "+envNote("SILT_SERVER", false))
	fs.StringVar(&a.token, "token", "", "bearer `TOKEN` to authenticate with "+envNote("SILT_TOKEN", true))
	fs.StringVar(&a.tokenFile, "token-file", "", "`FILE` holding the token, when no token is given "+envNote("SILT_TOKEN_FILE", false)+"; else "+defaultTokenFile()+" if it exists")
	fs.StringVar(&a.caFile, "ca-file", "", "PEM CA certificate `FILE` to trust for https "+envNote("SILT_CA_FILE", false))
	fs.StringVarP(&a.output, "output", "o", "text", "output format `text|json|raw`; raw (the stream's own encoding) is for read and tail")
}

// envNote says which variable sets a flag and, unless it is secret, what
// it holds now.
func envNote(env string, secret bool) string {
	v := os.Getenv(env)
	switch {
	case v == "":
		return "(env " + env + ")"
	case secret:
		return "(from " + env + ")"
	}
	return fmt.Sprintf("(from %s: %q)", env, v)
}

func defaultTokenFile() string { return filepath.Join("silt-data", rootTokenFile) }

// resolveFlags runs before every verb: it fills the client flags not given
// from the environment and checks -o.
func (a *app) resolveFlags(cmd *cobra.Command, _ []string) error {
	fs := cmd.Flags()
	if cmd.Name() == "serve" {
		for _, f := range clientEnv {
			if fs.Changed(f.name) {
				return usageError{fmt.Errorf("--%s is a client flag; silt serve does not take it", f.name)}
			}
		}
		if fs.Changed("output") {
			return usageError{errors.New("-o is a client flag; silt serve does not take it (see --print-config)")}
		}
		return nil
	}
	// The token is looked up later (tokenSource): whether it came from a
	// flag or the environment decides between it and a token file.
	if v := os.Getenv("SILT_SERVER"); v != "" && !fs.Changed("server") {
		a.server = v
	}
	if v := os.Getenv("SILT_CA_FILE"); v != "" && !fs.Changed("ca-file") {
		a.caFile = v
	}
	switch a.output {
	case "text", "json":
	case "raw":
		if cmd.Annotations[annotRaw] == "" {
			return usageError{errors.New("-o raw is for read and tail; use -o text or -o json")}
		}
	default:
		return usageError{fmt.Errorf("-o %q: want text, json or raw", a.output)}
	}
	return nil
}

// tokenSource finds the token the way the flags' help describes: a flag
// wins over the environment, a token over a token file, and the file a
// server writes into its data dir comes last.
func (a *app) tokenSource(cmd *cobra.Command) (string, error) {
	fs := cmd.Flags()
	flagToken, flagFile := fs.Changed("token") && a.token != "", fs.Changed("token-file") && a.tokenFile != ""
	if flagToken && flagFile {
		return "", usageError{errors.New("give --token or --token-file, not both")}
	}
	readFile := func(path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			// A file someone named must be there.
			return "", fmt.Errorf("read the token file: %w (set --token-file or SILT_TOKEN_FILE to a readable file, or give --token)", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("the token file %s is empty", path)
		}
		return tok, nil
	}
	switch {
	case flagToken:
		return a.token, nil
	case flagFile:
		return readFile(a.tokenFile)
	case os.Getenv("SILT_TOKEN") != "":
		return os.Getenv("SILT_TOKEN"), nil
	case os.Getenv("SILT_TOKEN_FILE") != "":
		return readFile(os.Getenv("SILT_TOKEN_FILE"))
	}
	def := defaultTokenFile()
	b, err := os.ReadFile(def)
	if err == nil {
		if tok := strings.TrimSpace(string(b)); tok != "" {
			return tok, nil
		}
		err = errors.New("empty")
	}
	// An empty answer from a server that grants anonymous nothing looks
	// like lost data, unless the user knows no token was sent.
	where := def
	if abs, aerr := filepath.Abs(def); aerr == nil {
		where = abs
	}
	reason := "does not exist"
	if !errors.Is(err, os.ErrNotExist) {
		reason = err.Error()
		if pe := (*os.PathError)(nil); errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
	}
	fmt.Fprintf(a.stderr, "silt: no token found, acting as anonymous (looked at --token, --token-file, SILT_TOKEN, SILT_TOKEN_FILE and %s: %s)\n", where, reason)
	return "", nil
}

// client returns a client for the server the flags name.
func (a *app) client(cmd *cobra.Command) (*client.Client, error) {
	tok, err := a.tokenSource(cmd)
	if err != nil {
		return nil, err
	}
	opts := []client.Option{client.WithUserAgent("silt-cli/" + buildVersion().Version)}
	if tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	if a.caFile != "" {
		tc, err := tlsconf.ClientConfig(a.caFile, false)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithTLSConfig(tc))
	}
	cl, err := client.New(a.server, opts...)
	if err != nil {
		return nil, usageError{fmt.Errorf("--server: %w", err)}
	}
	return cl, nil
}

// print writes v as JSON with -o json, or runs text otherwise.
func (a *app) print(v any, text func(w io.Writer)) error {
	if a.output == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	text(tw)
	return tw.Flush()
}

// done reports a change: msg for people, v for -o json.
func (a *app) done(v any, msg string) error {
	return a.print(v, func(w io.Writer) { fmt.Fprintln(w, msg) })
}

// confirm asks before something that cannot be undone, when a person is
// at a terminal to answer; --yes, or input that is not a terminal (a
// script), goes ahead. A "no" is an error, so the exit status says that
// nothing was done.
func (a *app) confirm(cmd *cobra.Command, question string) error {
	if yes, _ := cmd.Flags().GetBool("yes"); yes || !isTerminal(a.stdin) {
		return nil
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(a.stderr)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errors.New("not confirmed; nothing was deleted (--yes skips the question)")
}

func addYesFlag(c *cobra.Command) {
	c.Flags().BoolP("yes", "y", false, "do not ask for confirmation")
}

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// splitStream parses TENANT/STREAM.
func splitStream(s string) (string, string, error) {
	t, st, ok := strings.Cut(s, "/")
	if !ok || t == "" || st == "" || strings.Contains(st, "/") {
		return "", "", usageError{fmt.Errorf("%q: want TENANT/STREAM", s)}
	}
	return t, st, nil
}

// metaFlag collects repeated key=value flags.
type metaFlag map[string]string

func (m metaFlag) String() string { return "" }
func (m metaFlag) Type() string   { return "key=value" }
func (m metaFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", s)
	}
	m[k] = v
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Local().Format(time.RFC3339)
}

// explain adds what to do to the errors people hit first.
func explain(err error) error {
	switch {
	case err == nil:
		return nil
	case client.IsUnauthenticated(err):
		return fmt.Errorf("%w\n  give a token with --token or SILT_TOKEN, or its file with --token-file (the root token is in <data dir>/root.token)", err)
	case client.IsForbidden(err):
		return fmt.Errorf("%w\n  an admin can grant access: silt grant PRINCIPAL read|append|admin RESOURCE", err)
	}
	var (
		apiErr   *client.APIError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.As(err, &apiErr):
		// A query's mistake: show the line and a caret under it.
		if p := apiErr.Position; p != nil && p.Snippet != "" {
			return fmt.Errorf("%w\n%s", err, p.Snippet)
		}
	case errors.As(err, &hostname):
		return fmt.Errorf("%w\n  the server's certificate is for other names: use one of them in --server (a CA file does not change that)", err)
	case errors.As(err, &unknown), errors.As(err, &verify):
		return fmt.Errorf("%w\n  the server's certificate is not trusted: give its CA with --ca-file FILE or SILT_CA_FILE (silt serve --dev-tls prints where its CA is)", err)
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("%w\n  the server speaks http: use --server http://…", err)
	case strings.Contains(err.Error(), "connection refused"):
		return fmt.Errorf("%w\n  is the server running? start it with: silt serve (or point --server / SILT_SERVER at it)", err)
	}
	return err
}
