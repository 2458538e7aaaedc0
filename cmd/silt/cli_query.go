package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
)

// queryText is the query of the arguments, or of --file ("-": stdin).
func (a *app) queryText(args []string, file string) (string, error) {
	switch {
	case file != "" && len(args) > 0:
		return "", usageError{errors.New("give the query as an argument or with --file, not both")}
	case file == "-":
		b, err := io.ReadAll(a.stdin)
		return string(b), err
	case file != "":
		b, err := os.ReadFile(file)
		return string(b), err
	case len(args) == 0:
		return "", usageError{errors.New("the query is missing: give it as one argument (quoted) or with --file")}
	}
	return strings.Join(args, " "), nil
}

func (a *app) queryCmd() *cobra.Command {
	// What run and submit share: where the query comes from (text, file
	// or a packaged query) and the webhook.
	type source struct {
		file, hook, name *string
		version          *int
		params           *[]string
	}
	submitFlags := func(c *cobra.Command) source {
		fl := c.Flags()
		return source{
			file:    fl.StringP("file", "f", "", "read the query from `FILE` (- for stdin)"),
			hook:    fl.String("webhook", "", "POST the finished job to `URL`, signed with the secret in SILT_WEBHOOK_SECRET"),
			name:    fl.String("name", "", "run the packaged query `NAME` instead of a text"),
			version: fl.Int("version", 0, "the packaged query's version `N` (default: the latest)"),
			params:  fl.StringArray("param", nil, "a packaged query's parameter, `NAME=VALUE` (repeatable)"),
		}
	}
	// resolve returns the text and options of a submission.
	resolve := func(src source, args []string) (string, client.QueryOptions, error) {
		opt := client.QueryOptions{WebhookURL: *src.hook, WebhookSecret: os.Getenv("SILT_WEBHOOK_SECRET")}
		if *src.name == "" {
			if len(*src.params) > 0 || *src.version != 0 {
				return "", opt, usageError{errors.New("--param and --version go with --name, a packaged query")}
			}
			text, err := a.queryText(args, *src.file)
			return text, opt, err
		}
		if len(args) > 0 || *src.file != "" {
			return "", opt, usageError{errors.New("give a query text or --name, not both")}
		}
		opt.Name, opt.Version, opt.Params = *src.name, *src.version, map[string]string{}
		for _, p := range *src.params {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return "", opt, usageError{fmt.Errorf("--param %q: want NAME=VALUE", p)}
			}
			opt.Params[k] = v
		}
		return "", opt, nil
	}

	run := &cobra.Command{
		Use:   "run QUERY",
		Short: "run a query and print its rows",
		Long: `Submits the query as a job, shows its progress on stderr while it runs, and
prints its rows as JSON lines (or CSV with --format csv) when it has
succeeded. Ctrl-C cancels the job. docs/query.md is the language reference.`,
		Example: `  silt query run 'from acme/clicks since -1h | where status >= 500 | stats count() by head'
  silt query run -f errors.q --format csv > errors.csv`,
	}
	runSrc := submitFlags(run)
	format := run.Flags().String("format", "jsonl", "rows as `jsonl` or csv")
	interval := run.Flags().Duration("interval", 500*time.Millisecond, "poll the job every `DURATION`")
	run.RunE = func(cmd *cobra.Command, args []string) error {
		if *format != "jsonl" && *format != "csv" {
			return usageError{fmt.Errorf("--format %q: want jsonl or csv", *format)}
		}
		text, opt, err := resolve(runSrc, args)
		if err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		j, err := cl.SubmitQuery(ctx, text, opt)
		if err != nil {
			return err
		}
		tty := isTerminal(a.stderr)
		j, err = cl.WaitQuery(ctx, j.Handle, *interval, func(j client.QueryJob) {
			if j.Done() {
				return
			}
			line := progressLine(j)
			if tty {
				fmt.Fprintf(a.stderr, "\r\033[K%s", line)
			} else {
				fmt.Fprintln(a.stderr, line)
			}
		})
		if tty {
			fmt.Fprint(a.stderr, "\r\033[K")
		}
		if err != nil {
			if ctx.Err() != nil {
				// Interrupted: cancel the job rather than leave it running.
				if c, cerr := a.client(cmd); cerr == nil {
					c.CancelQuery(cmd.Context(), j.Handle)
				}
			}
			return err
		}
		for _, w := range j.Warnings {
			fmt.Fprintln(a.stderr, "warning:", w)
		}
		if j.State != "succeeded" {
			return fmt.Errorf("query %s %s: %s", j.Handle, j.State, j.Error)
		}
		if err := a.copyResults(cmd, cl, j.Handle, *format); err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "%d rows, %d events scanned; result stream %s/%s\n", j.Rows, j.Progress.EventsScanned, j.ResultTenant, j.ResultStream)
		return nil
	}

	submit := &cobra.Command{
		Use:   "submit QUERY",
		Short: "start a query as a job and print its handle",
		Long: `Submits the query as a job and prints its handle at once; follow it with
silt query status and fetch its rows with silt query results. With
--webhook the finished job is POSTed to the URL, signed with HMAC-SHA256
under SILT_WEBHOOK_SECRET in the Silt-Signature header.`,
		Example: `  h=$(silt query submit 'from acme/clicks | stats count() by status')
  silt query submit --continuous 'from acme/clicks | window tumbling 1m | stats count() by window_start'`,
	}
	subSrc := submitFlags(submit)
	continuous := submit.Flags().Bool("continuous", false, "run until cancelled, appending each closed window's stats (docs/query.md)")
	submit.RunE = func(cmd *cobra.Command, args []string) error {
		text, opt, err := resolve(subSrc, args)
		if err != nil {
			return err
		}
		opt.Continuous = *continuous
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		j, err := cl.SubmitQuery(cmd.Context(), text, opt)
		if err != nil {
			return err
		}
		return a.print(j, func(w io.Writer) { fmt.Fprintln(w, j.Handle) })
	}

	status := &cobra.Command{
		Use:     "status HANDLE",
		Short:   "show a query's state and progress",
		Args:    args(1, 1),
		Example: "  silt query status 5f0c2d9e8b7a41c3a2e1f0d9c8b7a6e5\n  silt query status 5f0c2d9e8b7a41c3a2e1f0d9c8b7a6e5 -o json",
	}
	status.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		j, err := cl.GetQuery(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return a.print(j, func(w io.Writer) { printJob(w, j) })
	}

	cancel := &cobra.Command{
		Use:     "cancel HANDLE",
		Short:   "cancel a running query",
		Args:    args(1, 1),
		Example: "  silt query cancel 5f0c2d9e8b7a41c3a2e1f0d9c8b7a6e5",
	}
	cancel.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		j, err := cl.CancelQuery(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return a.print(j, func(w io.Writer) { fmt.Fprintf(w, "query %s: %s\n", j.Handle, j.State) })
	}

	results := &cobra.Command{
		Use:     "results HANDLE",
		Short:   "print a succeeded query's rows",
		Args:    args(1, 1),
		Example: "  silt query results 5f0c2d9e8b7a41c3a2e1f0d9c8b7a6e5 --format csv > out.csv",
	}
	rformat := results.Flags().String("format", "jsonl", "rows as `jsonl` or csv")
	results.RunE = func(cmd *cobra.Command, args []string) error {
		if *rformat != "jsonl" && *rformat != "csv" {
			return usageError{fmt.Errorf("--format %q: want jsonl or csv", *rformat)}
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		return a.copyResults(cmd, cl, args[0], *rformat)
	}

	list := &cobra.Command{
		Use:     "list",
		Short:   "list your queries (every query for a server admin)",
		Args:    cobra.NoArgs,
		Example: "  silt query list\n  silt query list -o json",
	}
	list.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		js, err := cl.ListQueries(cmd.Context())
		if err != nil {
			return err
		}
		return a.print(js, func(w io.Writer) {
			fmt.Fprintln(w, "HANDLE\tSTATE\tROWS\tSUBMITTED\tQUERY")
			for _, j := range js {
				q := strings.Join(strings.Fields(j.Query), " ")
				if len(q) > 60 {
					q = q[:57] + "..."
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", j.Handle, j.State, j.Rows, j.Submitted.Format(time.RFC3339), q)
			}
		})
	}

	define := &cobra.Command{
		Use:   "define NAME QUERY",
		Short: "store a packaged query (a new version)",
		Long: `Stores the query as the next version of the packaged query NAME. Words
$like_this are parameters, given when it is run: silt query run --name NAME
--param like_this=VALUE (a number, else a string). Needs admin on every stream
the query reads; it runs as whoever runs it.`,
		Example: `  silt query define errors-by-head 'from acme/clicks since -1h | where status >= $min | stats count() by head'
  silt query run --name errors-by-head --param min=500`,
	}
	dfile := define.Flags().StringP("file", "f", "", "read the query from `FILE` (- for stdin)")
	desc := define.Flags().String("description", "", "what the query answers")
	define.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) < 1 {
			return usageError{errors.New("want NAME and the query (or --file)")}
		}
		text, err := a.queryText(args[1:], *dfile)
		if err != nil {
			return err
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		p, err := cl.DefineQuery(cmd.Context(), args[0], text, *desc)
		if err != nil {
			return err
		}
		return a.done(p, fmt.Sprintf("packaged query %s version %d (parameters: %s)", p.Name, p.Version, strings.Join(p.Params, ", ")))
	}

	packaged := &cobra.Command{
		Use:     "packaged [NAME]",
		Short:   "list packaged queries, or every version of one",
		Args:    args(0, 1),
		Example: "  silt query packaged\n  silt query packaged errors-by-head -o json",
	}
	packaged.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		var ps []client.PackagedQuery
		if len(args) == 1 {
			ps, err = cl.PackagedQueryVersions(cmd.Context(), args[0])
		} else {
			ps, err = cl.ListPackagedQueries(cmd.Context())
		}
		if err != nil {
			return err
		}
		return a.print(ps, func(w io.Writer) {
			fmt.Fprintln(w, "NAME\tVERSION\tPARAMS\tOWNER\tQUERY")
			for _, p := range ps {
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", p.Name, p.Version, strings.Join(p.Params, ","), p.Owner, strings.Join(strings.Fields(p.Query), " "))
			}
		})
	}

	return group("query", "run queries over streams as jobs (docs/query.md)",
		`  silt query run 'from acme/clicks | stats count() by status | sort -count'
  silt query status 5f0c…`,
		run, submit, status, cancel, results, list, define, packaged)
}

func (a *app) copyResults(cmd *cobra.Command, cl *client.Client, handle, format string) error {
	rc, err := cl.QueryResults(cmd.Context(), handle, format)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(a.stdout, rc)
	return err
}

func progressLine(j client.QueryJob) string {
	p := j.Progress
	s := fmt.Sprintf("%s: %.1f%% — %d of %d events, %s scanned", j.Handle[:min(8, len(j.Handle))], p.Percent, p.EventsScanned, p.EventsTotal, humanBytes(float64(p.BytesScanned)))
	if p.ETASeconds != nil {
		s += fmt.Sprintf(", about %s left", (time.Duration(*p.ETASeconds * float64(time.Second))).Round(time.Second))
	}
	return s
}

func printJob(w io.Writer, j client.QueryJob) {
	fmt.Fprintf(w, "handle\t%s\n", j.Handle)
	fmt.Fprintf(w, "state\t%s\n", j.State)
	fmt.Fprintf(w, "principal\t%s\n", j.Principal)
	fmt.Fprintf(w, "query\t%s\n", strings.Join(strings.Fields(j.Query), " "))
	fmt.Fprintf(w, "progress\t%s\n", progressLine(j))
	fmt.Fprintf(w, "rows\t%d\n", j.Rows)
	fmt.Fprintf(w, "result stream\t%s/%s\n", j.ResultTenant, j.ResultStream)
	if j.Error != "" {
		fmt.Fprintf(w, "error\t%s\n", j.Error)
	}
	for _, x := range j.Warnings {
		fmt.Fprintf(w, "warning\t%s\n", x)
	}
	if j.Webhook != "" {
		fmt.Fprintf(w, "webhook\t%s (%s)\n", j.Webhook, j.WebhookStatus)
	}
}
