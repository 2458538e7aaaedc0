package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
)

func (a *app) healthCmd() *cobra.Command {
	var minutes int
	var tenant string
	cmd := &cobra.Command{
		Use:   "health",
		Short: "requests, error rates, slowest operations, tiering lag and denials of the last minutes",
		Long: `Sums the introspection events of the last minutes (tenant silt-system,
docs/introspection.md) per head and per node: requests, 4xx and 5xx counts
and rates, the slowest operations by p99 and max latency, tiering uploads,
failures and lag, and the most frequent denials. The server reads them back
from its system streams, so the figures are what was stored, not what one
node counts in memory.

The whole server needs admin on everything; --tenant shows one tenant's
events to an admin of that tenant.`,
		Example: "  silt health\n  silt health --minutes 60\n  silt health --tenant acme -o json | jq '.heads[] | select(.server_errors > 0)'",
		Args:    args(0, 0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if minutes < 1 || minutes > 1440 {
				return usageError{fmt.Errorf("--minutes %d: want 1 to 1440", minutes)}
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			h, err := cl.HealthSummary(cmd.Context(), tenant, minutes)
			if err != nil {
				return err
			}
			return a.print(h, func(w io.Writer) { printHealth(w, h) })
		},
	}
	cmd.Flags().IntVar(&minutes, "minutes", 5, "how many of the last minutes to sum (1 to 1440)")
	cmd.Flags().StringVar(&tenant, "tenant", "", "only this tenant's events (admin on the tenant suffices)")
	return cmd
}

func printHealth(w io.Writer, h client.HealthSummary) {
	scope := "all tenants and the server"
	if h.Tenant != "" {
		scope = "tenant " + h.Tenant
	}
	fmt.Fprintf(w, "%s, %s to %s: %d events read", scope, fmtTime(h.Since), fmtTime(h.Until), h.Scanned)
	if h.Partial {
		fmt.Fprint(w, " (partial: the scan stopped at its bound)")
	}
	if h.DroppedEvents > 0 {
		fmt.Fprintf(w, "; %.0f events dropped by this node since it started", h.DroppedEvents)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "\nHEAD\tNODE\tREQUESTS\t4XX\t4XX%\t5XX\t5XX%\tBYTES\tDENIALS")
	for _, x := range h.Heads {
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%.1f\t%d\t%.1f\t%d\t%d\n", x.Head, x.Node, x.Requests, x.ClientErrors, 100*x.ClientErrorRate, x.ServerErrors, 100*x.ServerErrorRate, x.Bytes, x.Denials)
	}
	if len(h.Slowest) > 0 {
		fmt.Fprintln(w, "\nSLOWEST\tOPERATION\tCOUNT\tP99 MS\tMAX MS")
		for _, o := range h.Slowest {
			fmt.Fprintf(w, "%s\t%s\t%d\t%.3f\t%.3f\n", o.Head, o.Operation, o.Count, o.P99MS, o.MaxMS)
		}
	}
	t := h.Tiering
	fmt.Fprintf(w, "\ntiering: %d chunks uploaded (%d bytes), %d failures, lag p99 %.0f ms, max %.0f ms\n", t.ChunksUploaded, t.Bytes, t.Failures, t.P99LagMS, t.MaxLagMS)
	if t.LastError != "" {
		fmt.Fprintf(w, "last tiering error: %s\n", t.LastError)
	}
	if len(h.Denials) > 0 {
		fmt.Fprintln(w, "\nDENIED\tPRINCIPAL\tACTION\tRESOURCE\tCOUNT")
		for _, d := range h.Denials {
			res := d.Tenant
			if d.Stream != "" {
				res += "/" + d.Stream
			}
			if res == "" {
				res = "*"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", d.Head, d.Principal, d.Action, res, d.Count)
		}
	}
}
