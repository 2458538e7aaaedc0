package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/silt-io/silt/core/vfs"
	"github.com/silt-io/silt/internal/config"
	"github.com/silt-io/silt/internal/datadir"
	"github.com/silt-io/silt/internal/logging"
	"github.com/silt-io/silt/internal/pidlock"
	"github.com/silt-io/silt/internal/tlsconf"
)

const serveLong = `Runs the silt server: the segment engine, tiering, the native HTTP API and the
read-only S3, NFSv3 and WebHDFS heads, and the Kafka head.

With no flags it uses embedded defaults: data in ./silt-data, API on
http://127.0.0.1:7070, S3 on http://127.0.0.1:9000, NFSv3 (+MOUNT) on
127.0.0.1:20490, WebHDFS on http://127.0.0.1:9870/webhdfs/v1, Kafka on
127.0.0.1:9092, tier 2 in
./silt-data/tier2, JSON logs on stderr. On first start it creates the
principal "root" with admin rights and writes its token to
./silt-data/root.token (the CLI picks it up from there).

Every setting can also come from a YAML file (--config FILE or SILT_CONFIG)
and from SILT_* environment variables; flags win over the environment, which
wins over the file. --print-config shows the result as YAML, which can be
used as a config file as it is. A config flag may be spelt with dashes too
(--auth.insecure-dev for --auth.insecure_dev).`

// serveSections titles the config sections in silt serve --help, in the
// order of the config.
var serveSections = map[string]string{
	"core":    "Segment engine and data directory",
	"api":     "Native HTTP API",
	"s3":      "S3 head",
	"nfs":     "NFSv3 head",
	"webhdfs": "WebHDFS head",
	"kafka":   "Kafka head (docs/kafka.md)",
	"tiering": "Tiering and tier 2",
	"auth":    "Authentication",
	"tls":     "TLS, for the API, every HTTP head and the Kafka head",
	"log":     "Logging",
	"runtime": "Go runtime and profiling",
	"cluster": "Cluster mode: etcd, membership",
}

func (a *app) serveCmd() *cobra.Command {
	cfg := defaultServeConfig()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "run the server",
		Long:  serveLong,
		Example: `  silt serve
  silt serve --config silt.yaml
  silt serve --dev-tls                        # https with a generated CA; prints how to trust it
  silt serve --api.listen 0.0.0.0:7070 --tiering.backend s3 --tiering.s3.bucket silt
  SILT_LOG_LEVEL=debug silt serve --print-config`,
		Args:        args(0, 0),
		Annotations: map[string]string{annotLocal: "true"},
	}
	fl := cmd.Flags()
	printConfig := fl.Bool("print-config", false, "print the effective configuration as YAML and exit (status 2 if it is invalid)")
	devTLS := fl.Bool("dev-tls", false, "generate a self-signed CA and server certificate into <core.dir>/tls and serve HTTPS with them")
	loader, err := config.NewLoader(&cfg, config.WithIgnoredEnv(clientEnvVars()...))
	if err == nil {
		err = loader.RegisterFlags(fl)
	}
	if err != nil {
		// A malformed config struct: a bug, reported when serve runs.
		cmd.RunE = func(*cobra.Command, []string) error { return err }
		return cmd
	}
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { serveHelp(c, c.OutOrStdout()) })
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if _, err := loader.Load(os.Environ()); err != nil {
			return usageError{err}
		}
		if *printConfig {
			out, err := config.Dump(&cfg)
			if err != nil {
				return err
			}
			if _, err := a.stdout.Write(out); err != nil {
				return err
			}
			// The config is printed even when it is invalid, so that the
			// user sees what was read, and the exit status says whether
			// silt would start with it.
			if err := cfg.Validate(); err != nil {
				return usageError{fmt.Errorf("invalid configuration: %w", err)}
			}
			return nil
		}
		if err := cfg.Validate(); err != nil {
			return usageError{fmt.Errorf("invalid configuration: %w", err)}
		}
		log, err := logging.New(cfg.Log, a.stderr)
		if err != nil {
			return err
		}
		defer log.Sync()
		st, err := start(&cfg, *devTLS, a.stderr, log)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serve(ctx, cfg, log, st)
	}
	return cmd
}

// serveHelp groups silt serve's flags by config section: in one
// alphabetical list, eighty flags hide the few a user came for.
func serveHelp(cmd *cobra.Command, w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n\nExamples:\n%s\n", cmd.Long, useLine(cmd), cmd.Example)
	section := func(f *pflag.Flag) string {
		s, _, ok := strings.Cut(f.Name, ".")
		if !ok {
			return ""
		}
		return s
	}
	fmt.Fprintf(w, "\nFlags:\n%s", flagUsages(cmd.LocalNonPersistentFlags(), func(f *pflag.Flag) bool { return section(f) == "" }))
	// The config's order (core first, runtime last) rather than the
	// alphabet's.
	keys, _ := config.Keys(new(defaultServeConfig()))
	var sorted []string
	for _, k := range keys {
		s, _, _ := strings.Cut(k.Name, ".")
		if len(sorted) == 0 || sorted[len(sorted)-1] != s {
			sorted = append(sorted, s)
		}
	}
	for _, s := range sorted {
		title := serveSections[s]
		if title == "" {
			title = s
		}
		fmt.Fprintf(w, "\n%s (%s.*):\n%s", title, s, flagUsages(cmd.LocalNonPersistentFlags(), func(f *pflag.Flag) bool { return section(f) == s }))
	}
}

// startup is what silt serve takes before it writes anything: the data
// dir's lock and the listening ports. A port in use then leaves no data
// dir, root token or keys behind, and a second server on one data dir
// names the first instead of failing inside the catalog.
type startup struct {
	lock                      *pidlock.Lock
	api, s3, nfs, hdfs, kafka net.Listener
	stopPprof                 func()
}

// lockFile is the data dir's lock, holding the server's pid.
const lockFile = "silt.pid"

// start takes the ports and the data dir's lock and, with devTLS,
// generates the dev certificates into the data dir (setting cfg.TLS).
func start(cfg *serveConfig, devTLS bool, stderr io.Writer, log *zap.Logger) (st *startup, err error) {
	// Everything start creates in the data dir is for silt's user alone.
	datadir.RestrictUmask()
	st = &startup{}
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	// An existing data dir is checked first: the usual second server
	// on one data dir also has the first one's ports.
	if fi, serr := os.Stat(cfg.Core.Dir); serr == nil && fi.IsDir() {
		if st.lock, err = lockDataDir(cfg.Core.Dir); err != nil {
			return st, err
		}
	}
	listen := func(addr, key string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("listen on %s (%s): %w", addr, key, err)
		}
		return ln, nil
	}
	if st.api, err = listen(cfg.API.Listen, "api.listen"); err != nil {
		return st, err
	}
	if st.s3, err = listen(cfg.S3.Listen, "s3.listen"); err != nil {
		return st, err
	}
	if st.nfs, err = listen(cfg.NFS.Listen, "nfs.listen"); err != nil {
		return st, err
	}
	if st.hdfs, err = listen(cfg.HDFS.Listen, "webhdfs.listen"); err != nil {
		return st, err
	}
	if st.kafka, err = listen(cfg.Kafka.Listen, "kafka.listen"); err != nil {
		return st, err
	}
	if cfg.Run.PprofListen != "" {
		if st.stopPprof, err = servePprof(cfg.Run.PprofListen, log); err != nil {
			return st, err
		}
	}
	if st.lock == nil {
		if err := vfs.MkdirAllDurable(vfs.OS{}, cfg.Core.Dir); err != nil {
			return st, fmt.Errorf("create data dir %s: %w", cfg.Core.Dir, err)
		}
		if st.lock, err = lockDataDir(cfg.Core.Dir); err != nil {
			return st, err
		}
	}
	if devTLS && !cfg.TLS.Enabled() {
		tc, caFile, created, err := tlsconf.GenerateDev(filepath.Join(cfg.Core.Dir, "tls"), nil)
		if err != nil {
			return st, fmt.Errorf("dev-tls: %w", err)
		}
		cfg.TLS.CertFile, cfg.TLS.KeyFile = tc.CertFile, tc.KeyFile
		// Absolute, so that the command works from any directory.
		if abs, err := filepath.Abs(caFile); err == nil {
			caFile = abs
		}
		verb := "using"
		if created {
			verb = "generated"
		}
		fmt.Fprintf(stderr, "dev-tls: %s a self-signed CA at %s\n  trust it with: silt --ca-file %s …   (or SILT_CA_FILE=%s)   or   curl --cacert %s …\n", verb, caFile, caFile, caFile, caFile)
	}
	return st, nil
}

func lockDataDir(dir string) (*pidlock.Lock, error) {
	l, err := pidlock.Acquire(filepath.Join(dir, lockFile))
	var le *pidlock.LockedError
	switch {
	case errors.As(err, &le) && le.PID != 0:
		return nil, fmt.Errorf("data directory %s is in use by another silt serve (pid %d); stop it first or choose another --core.dir", dir, le.PID)
	case errors.As(err, &le):
		return nil, fmt.Errorf("data directory %s is in use by another silt serve, which is starting; stop it first or choose another --core.dir", dir)
	case err != nil:
		return nil, fmt.Errorf("lock data directory: %w", err)
	}
	return l, nil
}

// close releases what start took; serve's heads close their listeners
// themselves once they serve, so closing them again here is harmless.
func (st *startup) close() {
	for _, ln := range []net.Listener{st.api, st.s3, st.nfs, st.hdfs, st.kafka} {
		if ln != nil {
			ln.Close()
		}
	}
	if st.stopPprof != nil {
		st.stopPprof()
	}
	if st.lock != nil {
		st.lock.Close()
	}
}

func (a *app) completionCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "print a shell completion script",
		Long: `Prints the script that teaches a shell to complete silt's verbs and flags.
Load it in the running shell, or install it where the shell finds it.`,
		Example: `  source <(silt completion bash)
  silt completion bash > /etc/bash_completion.d/silt
  silt completion zsh > "${fpath[1]}/_silt"
  silt completion fish > ~/.config/fish/completions/silt.fish`,
		ValidArgs:   []string{"bash", "zsh", "fish"},
		Args:        args(1, 1),
		Annotations: map[string]string{annotLocal: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(a.stdout, true)
			case "zsh":
				return root.GenZshCompletion(a.stdout)
			case "fish":
				return root.GenFishCompletion(a.stdout, true)
			}
			return usageError{fmt.Errorf("%q: want bash, zsh or fish", args[0])}
		},
	}
}
