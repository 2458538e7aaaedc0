package main

import (
	"context"
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

	"github.com/spf13/pflag"

	"github.com/silt-io/silt/client"
	"github.com/silt-io/silt/internal/tlsconf"
)

// cli holds what every client verb shares: the flag set with the
// connection flags, and the streams to talk through.
type cli struct {
	fs                    *pflag.FlagSet
	server, token, caFile string
	tokenFile             string
	output                string
	stdin                 io.Reader
	stdout, stderr        io.Writer
}

func newCLI(name, synopsis string, stdin io.Reader, stdout, stderr io.Writer) *cli {
	c := &cli{fs: pflag.NewFlagSet("silt "+name, pflag.ContinueOnError), stdin: stdin, stdout: stdout, stderr: stderr}
	c.fs.SetOutput(stderr)
	c.fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: silt %s\n\nFlags:\n", synopsis)
		c.fs.PrintDefaults()
	}
	c.fs.StringVar(&c.server, "server", envOr("SILT_SERVER", "http://127.0.0.1:7070"), "API address (env SILT_SERVER)")
	c.fs.StringVar(&c.token, "token", os.Getenv("SILT_TOKEN"), "bearer token (env SILT_TOKEN)")
	c.fs.StringVar(&c.tokenFile, "token-file", envOr("SILT_TOKEN_FILE", filepath.Join("silt-data", rootTokenFile)), "file holding the token, used when --token is empty (env SILT_TOKEN_FILE)")
	c.fs.StringVar(&c.caFile, "ca-file", os.Getenv("SILT_CA_FILE"), "PEM CA certificate to trust for https (env SILT_CA_FILE)")
	c.fs.StringVarP(&c.output, "output", "o", "text", "output format: text or json")
	return c
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// parse parses args and checks the positional argument count.
func (c *cli) parse(args []string, minArgs, maxArgs int) ([]string, error) {
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, errHelp
		}
		return nil, usageError{err}
	}
	rest := c.fs.Args()
	if len(rest) < minArgs || (maxArgs >= 0 && len(rest) > maxArgs) {
		c.fs.Usage()
		return nil, usageError{fmt.Errorf("wrong number of arguments")}
	}
	if c.output != "text" && c.output != "json" {
		return nil, usageError{fmt.Errorf("--output must be text or json")}
	}
	return rest, nil
}

var errHelp = errors.New("help shown")

// connect parses args like parse and returns a client for the server.
func (c *cli) connect(args []string, minArgs, maxArgs int) ([]string, *client.Client, error) {
	rest, err := c.parse(args, minArgs, maxArgs)
	if err != nil {
		return nil, nil, err
	}
	cl, err := c.client()
	if err != nil {
		return nil, nil, err
	}
	return rest, cl, nil
}

func (c *cli) client() (*client.Client, error) {
	tok := c.token
	if tok == "" && c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		switch {
		case err == nil:
			tok = strings.TrimSpace(string(b))
		case c.fs.Changed("token-file") || os.Getenv("SILT_TOKEN_FILE") != "":
			// A file someone named must be there; only the default
			// (a server's data dir under the working directory) may be
			// missing, for anonymous use.
			return nil, fmt.Errorf("read the token file: %w (set --token-file or SILT_TOKEN_FILE to a readable file, or give --token)", err)
		}
	}
	opts := []client.Option{client.WithUserAgent("silt-cli/" + version)}
	if tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	if c.caFile != "" {
		tc, err := tlsconf.ClientConfig(c.caFile, false)
		if err != nil {
			return nil, err
		}
		opts = append(opts, client.WithTLSConfig(tc))
	}
	return client.New(c.server, opts...)
}

// print writes v as JSON with -o json, or runs text otherwise.
func (c *cli) print(v any, text func(w io.Writer)) error {
	if c.output == "json" {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	text(tw)
	return tw.Flush()
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

func runClient(verb string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var err error
	switch verb {
	case "tenant":
		err = runTenant(args, stdin, stdout, stderr)
	case "stream":
		err = runStream(args, stdin, stdout, stderr)
	case "append":
		err = runAppend(args, stdin, stdout, stderr)
	case "read":
		err = runRead(args, stdin, stdout, stderr, false)
	case "tail":
		err = runRead(args, stdin, stdout, stderr, true)
	case "principal":
		err = runPrincipal(args, stdin, stdout, stderr)
	case "token":
		err = runToken(args, stdin, stdout, stderr)
	case "grant", "revoke", "grants":
		err = runGrant(verb, args, stdin, stdout, stderr)
	case "whoami":
		err = runWhoami(args, stdin, stdout, stderr)
	case "s3-key":
		err = runS3Key(args, stdin, stdout, stderr)
	case "delegation-token":
		err = runDelegationToken(args, stdin, stdout, stderr)
	default:
		return usageError{fmt.Errorf("unknown verb %q (see silt help)", verb)}
	}
	if errors.Is(err, errHelp) {
		return nil
	}
	return explain(err)
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
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) && strings.Contains(err.Error(), "connection refused") {
		return fmt.Errorf("%w\n  is the server running? start it with: silt serve (or point --server / SILT_SERVER at it)", err)
	}
	return err
}

// sub dispatches "silt NOUN ACTION ...".
func sub(noun string, args []string, actions map[string]func([]string) error) error {
	if len(args) == 0 || actions[args[0]] == nil {
		var names []string
		for n := range actions {
			names = append(names, n)
		}
		return usageError{fmt.Errorf("silt %s needs one of: %s", noun, strings.Join(sortStrings(names), ", "))}
	}
	return actions[args[0]](args[1:])
}
