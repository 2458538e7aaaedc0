// Command silt is the one binary: `silt serve` runs the server, every other
// verb is a client of its native API (see `silt --help`).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/silt-io/silt/internal/config"
)

// usageError marks errors caused by how silt was called (exit status 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// errUsageShown is a usage error whose explanation (the help) is already
// on stderr.
var errUsageShown = usageError{errors.New("usage shown")}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs silt with args and returns the exit status: 0 for success and
// for --help, 2 for a usage error, 1 for any other failure.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCmd()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		if err != errUsageShown {
			printError(stderr, err)
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
		return 2
	}
	printError(stderr, explain(err))
	return 1
}

// printError writes err as one "silt: ..." message. The SDK's errors begin
// with "silt: " too, so a wrapped one would say it again mid-line.
func printError(w io.Writer, err error) {
	msg := strings.TrimPrefix(err.Error(), "silt: ")
	msg = strings.ReplaceAll(msg, ": silt: ", ": ")
	fmt.Fprintln(w, "silt:", msg)
}

// Command groups of the root help.
const (
	groupData   = "data"
	groupAccess = "access"
	groupOther  = "other"
)

func (a *app) rootCmd() *cobra.Command {
	// Verbs are listed in the order they are added: the common ones first.
	cobra.EnableCommandSorting = false
	root := &cobra.Command{
		Use:   "silt VERB",
		Short: "silt — a stream store with S3, NFS and WebHDFS heads",
		Long: `silt — a stream store with S3, NFS and WebHDFS heads.

silt serve runs the server; every other verb is a client of its native API.
Client flags go before or after the verb.`,
		Example: `  silt serve                                   # start a server in ./silt-data
  silt tenant create acme                      # from the same directory: the root token is found
  silt stream create acme/clicks --segments 4
  printf '{"user":1}\n' | silt append acme/clicks
  silt read acme/clicks -o json
  silt --server https://silt.example:7070 --ca-file ca.pem tenant list`,
		Args:          cobra.ArbitraryArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Without a verb, or with one silt does not have: a usage error.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				a.help(cmd, a.stderr)
				return errUsageShown
			}
			return unknownVerb(cmd, args[0])
		},
		PersistentPreRunE: a.resolveFlags,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{config.FlagError(c.Flags(), err)}
	})
	// Config keys are spelt with underscores (api.max_wait) in the file,
	// the environment and their flags; --api.max-wait is taken too,
	// since every other flag of silt is spelt with dashes.
	root.SetGlobalNormalizationFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if strings.Contains(name, ".") {
			name = strings.ReplaceAll(name, "-", "_")
		}
		return pflag.NormalizedName(name)
	})
	root.SetHelpFunc(func(c *cobra.Command, _ []string) { a.help(c, c.OutOrStdout()) })
	root.SetUsageFunc(func(c *cobra.Command) error { a.help(c, c.OutOrStderr()); return nil })
	a.addClientFlags(root)
	root.AddGroup(
		&cobra.Group{ID: groupData, Title: "Streams and events:"},
		&cobra.Group{ID: groupAccess, Title: "Access control:"},
		&cobra.Group{ID: groupOther, Title: "Server and other commands:"},
	)
	root.SetHelpCommand(a.helpCmd(root))
	root.SetHelpCommandGroupID(groupOther)
	for _, c := range []*cobra.Command{a.tenantCmd(), a.streamCmd(), a.groupCmd(), a.appendCmd(), a.readCmd(false), a.readCmd(true), a.topCmd(), a.queryCmd()} {
		c.GroupID = groupData
		root.AddCommand(c)
	}
	for _, c := range a.accessCmds() {
		c.GroupID = groupAccess
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.serveCmd(), a.clusterCmd(), a.healthCmd(), a.versionCmd(), a.completionCmd(root)} {
		c.GroupID = groupOther
		root.AddCommand(c)
	}
	root.Version = buildVersion().Version
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	return root
}

// group is a verb that only holds actions ("silt tenant"): without one,
// or with one it does not have, it is a usage error.
func group(use, short, example string, actions ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:     use + " ACTION",
		Short:   short,
		Example: example,
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var names []string
			for _, s := range cmd.Commands() {
				if s.IsAvailableCommand() {
					names = append(names, s.Name())
				}
			}
			if len(args) == 0 {
				return usageError{fmt.Errorf("silt %s needs an action: %s", cmd.Name(), strings.Join(names, ", "))}
			}
			return unknownVerb(cmd, args[0])
		},
	}
	c.AddCommand(actions...)
	return c
}

func unknownVerb(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown verb %q", name)
	if cmd.HasParent() {
		msg = fmt.Sprintf("%s has no action %q", cmd.CommandPath(), name)
	}
	cmd.SuggestionsMinimumDistance = 2
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %s?)", strings.Join(s, " or "))
	}
	return usageError{errors.New(msg)}
}

// args checks the count of positional arguments, naming what is wanted.
func args(min, max int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		want := strings.TrimSpace(strings.TrimPrefix(cmd.Use, cmd.Name()))
		if want == "" {
			return usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
		}
		return usageError{fmt.Errorf("want %s, got %d argument(s)", want, len(args))}
	}
}

// helpCmd is "silt help [VERB [ACTION]]", the same as --help.
func (a *app) helpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:         "help [VERB [ACTION]]",
		Short:       "show the help of silt or of a verb",
		Example:     "  silt help\n  silt help stream create",
		Annotations: map[string]string{annotLocal: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || c == nil || len(rest) > 0 {
				return usageError{fmt.Errorf("no help for %q: unknown verb or action", strings.Join(args, " "))}
			}
			c.HelpFunc()(c, nil)
			return nil
		},
	}
}
