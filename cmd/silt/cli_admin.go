package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/silt-io/silt/client"
)

func (a *app) tenantCmd() *cobra.Command {
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "create a tenant",
		Long: `Creates a tenant, the unit of isolation: its name is a valid S3 bucket name
(3-63 characters: lowercase letters, digits and '-'), and the S3 head serves it
as the bucket of that name.`,
		Example: `  silt tenant create acme
  silt tenant create acme --meta owner=web --meta cost-center=42`,
		Args: args(1, 1),
	}
	meta := metaFlag{}
	create.Flags().Var(meta, "meta", "metadata `key=value` (repeatable)")
	create.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		t, err := cl.CreateTenant(cmd.Context(), args[0], meta)
		if err != nil {
			return err
		}
		return a.print(t, func(w io.Writer) { fmt.Fprintf(w, "created tenant %s\n", t.Name) })
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "list the tenants",
		Example: "  silt tenant list\n  silt tenant list -o json | jq -r '.[].name'",
		Args:    args(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			return printPages(a, cl.TenantPages(cmd.Context()), "NAME\tCREATED", func(w io.Writer, t client.Tenant) {
				fmt.Fprintf(w, "%s\t%s\n", t.Name, fmtTime(t.Created))
			})
		},
	}
	get := &cobra.Command{
		Use:     "get NAME",
		Short:   "show a tenant",
		Example: "  silt tenant get acme\n  silt tenant get acme -o json",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			t, err := cl.GetTenant(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(t, func(w io.Writer) {
				fmt.Fprintf(w, "name\t%s\ncreated\t%s\n", t.Name, fmtTime(t.Created))
				for k, v := range t.Metadata {
					fmt.Fprintf(w, "meta %s\t%s\n", k, v)
				}
			})
		},
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "delete an empty tenant",
		Long: `Deletes a tenant. The server refuses while the tenant still has streams.
On a terminal silt asks first; --yes does not ask.`,
		Example: "  silt tenant delete acme\n  silt tenant delete acme --yes",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.confirm(cmd, fmt.Sprintf("Delete tenant %s?", args[0])); err != nil {
				return err
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.DeleteTenant(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.done(map[string]string{"deleted": "tenant", "tenant": args[0]}, "deleted tenant "+args[0])
		},
	}
	addYesFlag(del)
	return group("tenant", "manage tenants", "  silt tenant create acme\n  silt tenant list", create, list, get, del)
}

func (a *app) streamCmd() *cobra.Command {
	create := &cobra.Command{
		Use:   "create TENANT/STREAM",
		Short: "create a stream",
		Long: `Creates a stream. Its encoding is fixed at creation: lines (each event is one
line) or framed (4-byte big-endian length + bytes, for any bytes).`,
		Example: `  silt stream create acme/clicks --segments 4 --meta team=web
  silt stream create acme/logs --retention-age 720h --retention-bytes 1073741824
  silt stream create acme/blobs --encoding framed --set media`,
		Args: args(1, 1),
	}
	fl := create.Flags()
	enc := fl.String("encoding", "lines", "`lines` (one event per line) or framed (length-prefixed binary)")
	segs := fl.Int("segments", 0, "number of segments (default: the server's core.default_segments)")
	set := fl.String("set", "", "put the stream in stream set `NAME`, for grants on the whole set (silt grant P read TENANT/set:NAME)")
	// --group is --set's old name, from before "group" came to mean a
	// reader group. Not pflag's MarkDeprecated: cobra prints its notice
	// on stdout, into -o json output.
	oldSet := fl.String("group", "", "old name of --set")
	fl.MarkHidden("group")
	retAge := fl.Duration("retention-age", 0, "delete tier-2 chunks whose newest event is older than this, e.g. 720h (default: keep forever)")
	retBytes := fl.Int64("retention-bytes", 0, "delete the oldest tier-2 chunks while the stream's tier-2 bytes exceed this (default: keep forever)")
	tierPrefix := fl.String("tier-prefix", "", "put the stream's tier-2 objects under `PREFIX`/<tenant>/<stream>/ in the server's tier-2 bucket prefix or directory, e.g. archive/2026")
	meta := metaFlag{}
	fl.Var(meta, "meta", "metadata `key=value` (repeatable)")
	create.RunE = func(cmd *cobra.Command, args []string) error {
		tenant, name, err := splitStream(args[0])
		if err != nil {
			return err
		}
		if cmd.Flags().Changed("group") {
			if cmd.Flags().Changed("set") && *set != *oldSet {
				return usageError{fmt.Errorf("--group %s and --set %s disagree; --group is the old name of --set, give only --set", *oldSet, *set)}
			}
			*set = *oldSet
			fmt.Fprintf(a.stderr, "silt: --group is deprecated for stream sets (a group is now a reader group), use --set %s\n", *set)
		}
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		spec := client.StreamSpec{Name: name, Encoding: *enc, Segments: *segs, Metadata: meta, Set: *set, TierPrefix: *tierPrefix}
		if *retAge != 0 || *retBytes != 0 {
			// Negative values go to the server, whose 400 names the field.
			spec.Retention = &client.Retention{MaxBytes: *retBytes}
			if *retAge != 0 {
				spec.Retention.MaxAge = retAge.String()
			}
		}
		st, err := cl.CreateStream(cmd.Context(), tenant, spec)
		if err != nil {
			return err
		}
		return a.print(st, func(w io.Writer) {
			fmt.Fprintf(w, "created stream %s/%s (%s, %d segments)\n", st.Tenant, st.Name, st.Config.Encoding, st.Config.Segments)
		})
	}
	list := &cobra.Command{
		Use:     "list TENANT",
		Short:   "list a tenant's streams",
		Example: "  silt stream list acme\n  silt stream list acme -o json",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			return printPages(a, cl.StreamPages(cmd.Context(), args[0]), "NAME\tENCODING\tSEGMENTS\tSET\tCREATED", func(w io.Writer, s client.Stream) {
				fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", s.Name, s.Config.Encoding, s.Config.Segments, streamSet(s.Config), fmtTime(s.Created))
			})
		},
	}
	describe := &cobra.Command{
		Use:   "describe TENANT/STREAM",
		Short: "show a stream's config, segments and tiering",
		Long: `Shows a stream's config and, per segment, its tier-1 offsets and bytes, what
has reached tier 2, the tiering lag and the last tier-2 error.`,
		Example: "  silt stream describe acme/clicks\n  silt stream describe acme/clicks -o json | jq .tiering",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant, name, err := splitStream(args[0])
			if err != nil {
				return err
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			s, err := cl.GetStream(cmd.Context(), tenant, name)
			if err != nil {
				return err
			}
			return a.print(s, func(w io.Writer) { describeStream(w, s) })
		},
	}
	del := &cobra.Command{
		Use:   "delete TENANT/STREAM",
		Short: "delete a stream and its events",
		Long: `Deletes a stream with all its events, in tier 1 and tier 2; it cannot be
undone. On a terminal silt asks first; --yes does not ask.`,
		Example: "  silt stream delete acme/clicks\n  silt stream delete acme/clicks --yes",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tenant, name, err := splitStream(args[0])
			if err != nil {
				return err
			}
			if err := a.confirm(cmd, fmt.Sprintf("Delete stream %s/%s and all its events?", tenant, name)); err != nil {
				return err
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.DeleteStream(cmd.Context(), tenant, name); err != nil {
				return err
			}
			return a.done(map[string]string{"deleted": "stream", "tenant": tenant, "stream": name}, fmt.Sprintf("deleted stream %s/%s", tenant, name))
		},
	}
	addYesFlag(del)
	return group("stream", "manage streams", "  silt stream create acme/clicks --segments 4\n  silt stream describe acme/clicks", create, list, describe, del)
}

func describeStream(w io.Writer, s client.Stream) {
	fmt.Fprintf(w, "stream\t%s/%s\nencoding\t%s\nsegments\t%d\ncreated\t%s\n", s.Tenant, s.Name, s.Config.Encoding, s.Config.Segments, fmtTime(s.Created))
	if set := streamSet(s.Config); set != "" {
		fmt.Fprintf(w, "set\t%s\n", set)
	}
	for k, v := range s.Config.Metadata {
		fmt.Fprintf(w, "meta %s\t%s\n", k, v)
	}
	if r := s.Config.Retention; r != nil {
		if r.MaxAge != "" {
			fmt.Fprintf(w, "retention age\t%s\n", r.MaxAge)
		}
		if r.MaxBytes != 0 {
			fmt.Fprintf(w, "retention bytes\t%d\n", r.MaxBytes)
		}
	}
	if s.Config.TierPrefix != "" {
		fmt.Fprintf(w, "tier prefix\t%s\n", s.Config.TierPrefix)
	}
	tier := map[string]client.SegmentTiering{}
	if s.Tiering != nil {
		for _, t := range s.Tiering.Segments {
			tier[t.Segment] = t
		}
	}
	fmt.Fprintln(w, "\nSEGMENT\tKEY RANGE\tTIER-1 FIRST\tNEXT\tTIER-1 BYTES\tTIER-2 FIRST\tTIERED TO\tCHUNKS\tTIER-2 BYTES\tLAG\tLAST TIER-2 ERROR")
	for _, sg := range s.Segments {
		t := tier[sg.ID]
		fmt.Fprintf(w, "%s\t%08x-%08x\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", sg.ID, sg.KeyLow, sg.KeyHigh, sg.FirstOffset, sg.NextOffset, sg.Bytes,
			t.FirstTieredOffset, t.TieredOffset, t.Chunks, t.TieredBytes, time.Duration(t.LagNanos).Round(time.Millisecond), t.LastError)
	}
}

// accessCmds are the verbs of access control: principals, their
// credentials, and grants.
func (a *app) accessCmds() []*cobra.Command {
	return []*cobra.Command{a.principalCmd(), a.tokenCmd(), a.s3KeyCmd(), a.delegationTokenCmd(), a.grantCmd(), a.revokeCmd(), a.grantsCmd(), a.whoamiCmd()}
}

func (a *app) principalCmd() *cobra.Command {
	create := &cobra.Command{
		Use:     "create NAME",
		Short:   "create a principal (a user or an application)",
		Example: "  silt principal create etl\n  silt token create etl --label nightly",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			p, err := cl.CreatePrincipal(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(p, func(w io.Writer) {
				fmt.Fprintf(w, "created principal %s\n  give it a token: silt token create %s\n", p.Name, p.Name)
			})
		},
	}
	list := &cobra.Command{
		Use:     "list",
		Short:   "list the principals",
		Example: "  silt principal list",
		Args:    args(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			ps, err := cl.ListPrincipals(cmd.Context())
			if err != nil {
				return err
			}
			return a.print(ps, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tCREATED")
				for _, p := range ps {
					fmt.Fprintf(w, "%s\t%s\n", p.Name, fmtTime(p.Created))
				}
			})
		},
	}
	del := &cobra.Command{
		Use:     "delete NAME",
		Short:   "delete a principal with its tokens, keys and grants",
		Long:    "Deletes a principal with its tokens, S3 keys and grants. On a terminal silt asks\nfirst; --yes does not ask.",
		Example: "  silt principal delete etl --yes",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.confirm(cmd, fmt.Sprintf("Delete principal %s with its tokens, keys and grants?", args[0])); err != nil {
				return err
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.DeletePrincipal(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.done(map[string]string{"deleted": "principal", "principal": args[0]}, fmt.Sprintf("deleted principal %s with its tokens and grants", args[0]))
		},
	}
	addYesFlag(del)
	return group("principal", "manage principals", "  silt principal create etl\n  silt principal list", create, list, del)
}

func (a *app) tokenCmd() *cobra.Command {
	create := &cobra.Command{
		Use:   "create PRINCIPAL",
		Short: "issue an API token (the secret is shown once)",
		Long: `Issues a bearer token for a principal. The secret goes to stdout, once; the
server keeps only its hash.`,
		Example: `  silt token create etl --label nightly --ttl 720h
  SILT_TOKEN=$(silt token create etl) silt whoami`,
		Args: args(1, 1),
	}
	label := create.Flags().String("label", "", "a note saying what the token is for")
	ttl := create.Flags().Duration("ttl", 0, "lifetime, e.g. 24h (default: no expiry)")
	create.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		tok, err := cl.IssueToken(cmd.Context(), args[0], *label, *ttl)
		if err != nil {
			return err
		}
		return a.print(tok, func(w io.Writer) {
			fmt.Fprintf(w, "%s\n", tok.Secret)
			fmt.Fprintf(a.stderr, "token %s for %s (expires: %s) — the secret above is shown only once\n", tok.ID, tok.Principal, fmtTime(tok.Expires))
		})
	}
	list := &cobra.Command{
		Use:     "list PRINCIPAL",
		Short:   "list a principal's tokens (not their secrets)",
		Example: "  silt token list etl",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			ts, err := cl.ListTokens(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(ts, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tLABEL\tCREATED\tEXPIRES")
				for _, t := range ts {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, t.Label, fmtTime(t.Created), fmtTime(t.Expires))
				}
			})
		},
	}
	revoke := &cobra.Command{
		Use:     "revoke PRINCIPAL TOKEN_ID",
		Short:   "revoke a token",
		Example: "  silt token list etl\n  silt token revoke etl t1a2b3c",
		Args:    args(2, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.RevokeToken(cmd.Context(), args[0], args[1]); err != nil {
				return err
			}
			return a.done(map[string]string{"revoked": "token", "principal": args[0], "id": args[1]}, fmt.Sprintf("revoked token %s of %s", args[1], args[0]))
		},
	}
	return group("token", "manage a principal's API tokens", "  silt token create etl --ttl 720h\n  silt token list etl", create, list, revoke)
}

func (a *app) grantCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "grant PRINCIPAL read|append|admin RESOURCE",
		Short: "allow a principal read, append or admin on a resource",
		Long: `Allows a principal an action on a resource; admin implies read and append.
RESOURCE is * | TENANT | TENANT/STREAM | TENANT/GLOB | TENANT/set:SET (the
streams created with --set SET; TENANT/group:SET is its deprecated spelling).
The same grants decide the native API and the S3, NFS and WebHDFS heads.`,
		Example: `  silt grant etl read 'acme/click*'
  silt grant ingest append acme/clicks
  silt grant web read acme/set:web`,
		Args: args(3, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			g, err := cl.AddGrant(cmd.Context(), args[0], args[1], args[2])
			if err != nil {
				return err
			}
			return a.print(g, func(w io.Writer) {
				fmt.Fprintf(w, "granted %s %s on %s (grant %s)\n", g.Principal, g.Action, g.Resource, g.ID)
			})
		},
	}
}

func (a *app) revokeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "revoke GRANT_ID",
		Short:   "remove a grant (ids: silt grants)",
		Example: "  silt grants etl\n  silt revoke g4d5e6",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.RemoveGrant(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.done(map[string]string{"removed": "grant", "id": args[0]}, "removed grant "+args[0])
		},
	}
}

func (a *app) grantsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "grants [PRINCIPAL]",
		Short:   "list grants, of everyone or of one principal",
		Example: "  silt grants\n  silt grants etl -o json",
		Args:    args(0, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			who := ""
			if len(args) == 1 {
				who = args[0]
			}
			gs, err := cl.ListGrants(cmd.Context(), who)
			if err != nil {
				return err
			}
			return a.print(gs, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tPRINCIPAL\tACTION\tRESOURCE\tCREATED")
				for _, g := range gs {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", g.ID, g.Principal, g.Action, g.Resource, fmtTime(g.Created))
				}
			})
		},
	}
}

func (a *app) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "whoami",
		Short:   "show the principal the token belongs to",
		Example: "  silt whoami\n  SILT_TOKEN=silt_… silt whoami",
		Args:    args(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			who, err := cl.Whoami(cmd.Context())
			if err != nil {
				return err
			}
			who = strings.TrimSpace(who)
			return a.done(map[string]string{"principal": who}, who)
		},
	}
}

func (a *app) s3KeyCmd() *cobra.Command {
	create := &cobra.Command{
		Use:     "create PRINCIPAL",
		Short:   "issue an S3 access key (the secret is shown once)",
		Example: "  silt s3-key create etl",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			k, err := cl.IssueS3Key(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(k, func(w io.Writer) {
				fmt.Fprintf(w, "access_key_id\t%s\nsecret_access_key\t%s\n", k.AccessKeyID, k.SecretAccessKey)
				fmt.Fprintf(a.stderr, "S3 key for %s — the secret is shown only once; use it with e.g.\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=… aws --endpoint-url http://127.0.0.1:9000 s3 ls\n", k.Principal, k.AccessKeyID)
			})
		},
	}
	list := &cobra.Command{
		Use:     "list PRINCIPAL",
		Short:   "list a principal's S3 access keys (not their secrets)",
		Example: "  silt s3-key list etl",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			ks, err := cl.ListS3Keys(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(ks, func(w io.Writer) {
				fmt.Fprintln(w, "ACCESS KEY ID\tPRINCIPAL\tCREATED")
				for _, k := range ks {
					fmt.Fprintf(w, "%s\t%s\t%s\n", k.AccessKeyID, k.Principal, fmtTime(k.Created))
				}
			})
		},
	}
	revoke := &cobra.Command{
		Use:     "revoke ACCESS_KEY_ID",
		Short:   "revoke an S3 access key",
		Example: "  silt s3-key revoke AKSILT…",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.RevokeS3Key(cmd.Context(), args[0]); err != nil {
				return err
			}
			return a.done(map[string]string{"revoked": "s3-key", "id": args[0]}, "revoked S3 key "+args[0])
		},
	}
	return group("s3-key", "manage a principal's S3 access keys", "  silt s3-key create etl\n  silt s3-key list etl", create, list, revoke)
}

func (a *app) delegationTokenCmd() *cobra.Command {
	list := &cobra.Command{
		Use:     "list",
		Short:   "list the live WebHDFS delegation tokens",
		Example: "  silt delegation-token list\n  silt delegation-token list --owner etl",
		Args:    args(0, 0),
	}
	owner := list.Flags().String("owner", "", "only this `PRINCIPAL`'s tokens")
	list.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := a.client(cmd)
		if err != nil {
			return err
		}
		ts, err := cl.ListDelegationTokens(cmd.Context(), *owner)
		if err != nil {
			return err
		}
		return a.print(ts, func(w io.Writer) {
			fmt.Fprintln(w, "ID\tOWNER\tRENEWER\tISSUED\tEXPIRES\tMAX DATE")
			for _, t := range ts {
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Renewer, fmtTime(t.Issued), fmtTime(t.Expires), fmtTime(t.MaxDate))
			}
		})
	}
	cancel := &cobra.Command{
		Use:     "cancel ID",
		Short:   "cancel a delegation token",
		Example: "  silt delegation-token cancel 17",
		Args:    args(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 1 {
				return usageError{fmt.Errorf("%q: want a token id as delegation-token list shows it", args[0])}
			}
			cl, err := a.client(cmd)
			if err != nil {
				return err
			}
			if err := cl.CancelDelegationToken(cmd.Context(), int32(id)); err != nil {
				return err
			}
			return a.done(map[string]any{"cancelled": "delegation-token", "id": id}, fmt.Sprintf("cancelled delegation token %d", id))
		},
	}
	return group("delegation-token", "list or cancel WebHDFS delegation tokens", "  silt delegation-token list --owner etl\n  silt delegation-token cancel 17", list, cancel)
}

// streamSet is the stream's set, also from a server that still sends it
// only under its former name.
func streamSet(c client.StreamConfig) string {
	if c.Set != "" {
		return c.Set
	}
	return c.Group
}
