package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/client"
)

func sortStrings(s []string) []string { sort.Strings(s); return s }

func runTenant(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	return sub("tenant", args, map[string]func([]string) error{
		"create": func(args []string) error {
			c := newCLI("tenant create", "tenant create NAME [--meta key=value]...", stdin, stdout, stderr)
			meta := metaFlag{}
			c.fs.Var(meta, "meta", "metadata key=value (repeatable)")
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			t, err := cl.CreateTenant(ctx, rest[0], meta)
			if err != nil {
				return err
			}
			return c.print(t, func(w io.Writer) { fmt.Fprintf(w, "created tenant %s\n", t.Name) })
		},
		"list": func(args []string) error {
			c := newCLI("tenant list", "tenant list", stdin, stdout, stderr)
			_, cl, err := c.connect(args, 0, 0)
			if err != nil {
				return err
			}
			ts, err := cl.ListTenants(ctx)
			if err != nil {
				return err
			}
			return c.print(ts, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tCREATED")
				for _, t := range ts {
					fmt.Fprintf(w, "%s\t%s\n", t.Name, fmtTime(t.Created))
				}
			})
		},
		"get": func(args []string) error {
			c := newCLI("tenant get", "tenant get NAME", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			t, err := cl.GetTenant(ctx, rest[0])
			if err != nil {
				return err
			}
			return c.print(t, func(w io.Writer) {
				fmt.Fprintf(w, "name\t%s\ncreated\t%s\n", t.Name, fmtTime(t.Created))
				for k, v := range t.Metadata {
					fmt.Fprintf(w, "meta %s\t%s\n", k, v)
				}
			})
		},
		"delete": func(args []string) error {
			c := newCLI("tenant delete", "tenant delete NAME", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			if err := cl.DeleteTenant(ctx, rest[0]); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted tenant %s\n", rest[0])
			return nil
		},
	})
}

func runStream(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	return sub("stream", args, map[string]func([]string) error{
		"create": func(args []string) error {
			c := newCLI("stream create", "stream create TENANT/STREAM [--encoding lines|framed] [--segments N] [--meta k=v]... [--group G] [--retention-age D] [--retention-bytes N] [--tier-prefix P]", stdin, stdout, stderr)
			enc := c.fs.String("encoding", "lines", "lines (one event per line) or framed (length-prefixed binary)")
			segs := c.fs.Int("segments", 0, "number of segments (default: the server's core.default_segments)")
			group := c.fs.String("group", "", "group name, for group grants")
			retAge := c.fs.Duration("retention-age", 0, "delete tier-2 chunks whose newest event is older than this, e.g. 720h (0: keep forever)")
			retBytes := c.fs.Int64("retention-bytes", 0, "delete the oldest tier-2 chunks while the stream's tier-2 bytes exceed this (0: keep forever)")
			tierPrefix := c.fs.String("tier-prefix", "", "put the stream's tier-2 objects under P/<tenant>/<stream>/ in the server's tier-2 bucket prefix or directory, e.g. archive/2026")
			meta := metaFlag{}
			c.fs.Var(meta, "meta", "metadata key=value (repeatable)")
			rest, err := c.parse(args, 1, 1)
			if err != nil {
				return err
			}
			tenant, name, err := splitStream(rest[0])
			if err != nil {
				return err
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			spec := client.StreamSpec{Name: name, Encoding: *enc, Segments: *segs, Metadata: meta, Group: *group, TierPrefix: *tierPrefix}
			if *retAge != 0 || *retBytes != 0 {
				// Negative values go to the server, whose 400 names the field.
				spec.Retention = &client.Retention{MaxBytes: *retBytes}
				if *retAge != 0 {
					spec.Retention.MaxAge = retAge.String()
				}
			}
			st, err := cl.CreateStream(ctx, tenant, spec)
			if err != nil {
				return err
			}
			return c.print(st, func(w io.Writer) {
				fmt.Fprintf(w, "created stream %s/%s (%s, %d segments)\n", st.Tenant, st.Name, st.Config.Encoding, st.Config.Segments)
			})
		},
		"list": func(args []string) error {
			c := newCLI("stream list", "stream list TENANT", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			ss, err := cl.ListStreams(ctx, rest[0])
			if err != nil {
				return err
			}
			return c.print(ss, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tENCODING\tSEGMENTS\tGROUP\tCREATED")
				for _, s := range ss {
					fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", s.Name, s.Config.Encoding, s.Config.Segments, s.Config.Group, fmtTime(s.Created))
				}
			})
		},
		"describe": func(args []string) error {
			c := newCLI("stream describe", "stream describe TENANT/STREAM", stdin, stdout, stderr)
			rest, err := c.parse(args, 1, 1)
			if err != nil {
				return err
			}
			tenant, name, err := splitStream(rest[0])
			if err != nil {
				return err
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			s, err := cl.GetStream(ctx, tenant, name)
			if err != nil {
				return err
			}
			return c.print(s, func(w io.Writer) {
				fmt.Fprintf(w, "stream\t%s/%s\nencoding\t%s\nsegments\t%d\ncreated\t%s\n", s.Tenant, s.Name, s.Config.Encoding, s.Config.Segments, fmtTime(s.Created))
				if s.Config.Group != "" {
					fmt.Fprintf(w, "group\t%s\n", s.Config.Group)
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
			})
		},
		"delete": func(args []string) error {
			c := newCLI("stream delete", "stream delete TENANT/STREAM", stdin, stdout, stderr)
			rest, err := c.parse(args, 1, 1)
			if err != nil {
				return err
			}
			tenant, name, err := splitStream(rest[0])
			if err != nil {
				return err
			}
			cl, err := c.client()
			if err != nil {
				return err
			}
			if err := cl.DeleteStream(ctx, tenant, name); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted stream %s/%s\n", tenant, name)
			return nil
		},
	})
}

func runPrincipal(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	simple := func(action string, fn func(cl *client.Client, c *cli, name string) error) func([]string) error {
		return func(args []string) error {
			c := newCLI("principal "+action, "principal "+action+" NAME", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			return fn(cl, c, rest[0])
		}
	}
	return sub("principal", args, map[string]func([]string) error{
		"create": simple("create", func(cl *client.Client, c *cli, name string) error {
			p, err := cl.CreatePrincipal(ctx, name)
			if err != nil {
				return err
			}
			return c.print(p, func(w io.Writer) {
				fmt.Fprintf(w, "created principal %s\n  give it a token: silt token create %s\n", p.Name, p.Name)
			})
		}),
		"delete": simple("delete", func(cl *client.Client, c *cli, name string) error {
			if err := cl.DeletePrincipal(ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "deleted principal %s with its tokens and grants\n", name)
			return nil
		}),
		"list": func(args []string) error {
			c := newCLI("principal list", "principal list", stdin, stdout, stderr)
			_, cl, err := c.connect(args, 0, 0)
			if err != nil {
				return err
			}
			ps, err := cl.ListPrincipals(ctx)
			if err != nil {
				return err
			}
			return c.print(ps, func(w io.Writer) {
				fmt.Fprintln(w, "NAME\tCREATED")
				for _, p := range ps {
					fmt.Fprintf(w, "%s\t%s\n", p.Name, fmtTime(p.Created))
				}
			})
		},
	})
}

func runToken(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	return sub("token", args, map[string]func([]string) error{
		"create": func(args []string) error {
			c := newCLI("token create", "token create PRINCIPAL [--label L] [--ttl 720h]", stdin, stdout, stderr)
			label := c.fs.String("label", "", "a note saying what the token is for")
			ttl := c.fs.Duration("ttl", 0, "lifetime, e.g. 24h (default: no expiry)")
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			tok, err := cl.IssueToken(ctx, rest[0], *label, *ttl)
			if err != nil {
				return err
			}
			return c.print(tok, func(w io.Writer) {
				fmt.Fprintf(w, "%s\n", tok.Secret)
				fmt.Fprintf(stderr, "token %s for %s (expires: %s) — the secret above is shown only once\n", tok.ID, tok.Principal, fmtTime(tok.Expires))
			})
		},
		"list": func(args []string) error {
			c := newCLI("token list", "token list PRINCIPAL", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			ts, err := cl.ListTokens(ctx, rest[0])
			if err != nil {
				return err
			}
			return c.print(ts, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tLABEL\tCREATED\tEXPIRES")
				for _, t := range ts {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, t.Label, fmtTime(t.Created), fmtTime(t.Expires))
				}
			})
		},
		"revoke": func(args []string) error {
			c := newCLI("token revoke", "token revoke PRINCIPAL TOKEN_ID", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 2, 2)
			if err != nil {
				return err
			}
			if err := cl.RevokeToken(ctx, rest[0], rest[1]); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked token %s of %s\n", rest[1], rest[0])
			return nil
		},
	})
}

func runGrant(verb string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	switch verb {
	case "grant":
		c := newCLI("grant", "grant PRINCIPAL read|append|admin RESOURCE\n\nRESOURCE is * | TENANT | TENANT/STREAM | TENANT/GLOB | TENANT/group:GROUP", stdin, stdout, stderr)
		rest, cl, err := c.connect(args, 3, 3)
		if err != nil {
			return err
		}
		g, err := cl.AddGrant(ctx, rest[0], rest[1], rest[2])
		if err != nil {
			return err
		}
		return c.print(g, func(w io.Writer) {
			fmt.Fprintf(w, "granted %s %s on %s (grant %s)\n", g.Principal, g.Action, g.Resource, g.ID)
		})
	case "revoke":
		c := newCLI("revoke", "revoke GRANT_ID   (ids: silt grants)", stdin, stdout, stderr)
		rest, cl, err := c.connect(args, 1, 1)
		if err != nil {
			return err
		}
		if err := cl.RemoveGrant(ctx, rest[0]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed grant %s\n", rest[0])
		return nil
	}
	c := newCLI("grants", "grants [PRINCIPAL]", stdin, stdout, stderr)
	rest, cl, err := c.connect(args, 0, 1)
	if err != nil {
		return err
	}
	who := ""
	if len(rest) == 1 {
		who = rest[0]
	}
	gs, err := cl.ListGrants(ctx, who)
	if err != nil {
		return err
	}
	return c.print(gs, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tPRINCIPAL\tACTION\tRESOURCE\tCREATED")
		for _, g := range gs {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", g.ID, g.Principal, g.Action, g.Resource, fmtTime(g.Created))
		}
	})
}

func runWhoami(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := newCLI("whoami", "whoami", stdin, stdout, stderr)
	_, cl, err := c.connect(args, 0, 0)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	who, err := cl.Whoami(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, strings.TrimSpace(who))
	return nil
}

func runS3Key(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	return sub("s3-key", args, map[string]func([]string) error{
		"create": func(args []string) error {
			c := newCLI("s3-key create", "s3-key create PRINCIPAL", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			k, err := cl.IssueS3Key(ctx, rest[0])
			if err != nil {
				return err
			}
			return c.print(k, func(w io.Writer) {
				fmt.Fprintf(w, "access_key_id\t%s\nsecret_access_key\t%s\n", k.AccessKeyID, k.SecretAccessKey)
				fmt.Fprintf(stderr, "S3 key for %s — the secret is shown only once; use it with e.g.\n  AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=… aws --endpoint-url http://127.0.0.1:9000 s3 ls\n", k.Principal, k.AccessKeyID)
			})
		},
		"list": func(args []string) error {
			c := newCLI("s3-key list", "s3-key list PRINCIPAL", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			ks, err := cl.ListS3Keys(ctx, rest[0])
			if err != nil {
				return err
			}
			return c.print(ks, func(w io.Writer) {
				fmt.Fprintln(w, "ACCESS KEY ID\tPRINCIPAL\tCREATED")
				for _, k := range ks {
					fmt.Fprintf(w, "%s\t%s\t%s\n", k.AccessKeyID, k.Principal, fmtTime(k.Created))
				}
			})
		},
		"revoke": func(args []string) error {
			c := newCLI("s3-key revoke", "s3-key revoke ACCESS_KEY_ID", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			if err := cl.RevokeS3Key(ctx, rest[0]); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "revoked S3 key %s\n", rest[0])
			return nil
		},
	})
}

func runDelegationToken(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	return sub("delegation-token", args, map[string]func([]string) error{
		"list": func(args []string) error {
			c := newCLI("delegation-token list", "delegation-token list [--owner PRINCIPAL]", stdin, stdout, stderr)
			owner := c.fs.String("owner", "", "only this principal's tokens")
			_, cl, err := c.connect(args, 0, 0)
			if err != nil {
				return err
			}
			ts, err := cl.ListDelegationTokens(ctx, *owner)
			if err != nil {
				return err
			}
			return c.print(ts, func(w io.Writer) {
				fmt.Fprintln(w, "ID\tOWNER\tRENEWER\tISSUED\tEXPIRES\tMAX DATE")
				for _, t := range ts {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Owner, t.Renewer, fmtTime(t.Issued), fmtTime(t.Expires), fmtTime(t.MaxDate))
				}
			})
		},
		"cancel": func(args []string) error {
			c := newCLI("delegation-token cancel", "delegation-token cancel ID", stdin, stdout, stderr)
			rest, cl, err := c.connect(args, 1, 1)
			if err != nil {
				return err
			}
			id, err := strconv.ParseInt(rest[0], 10, 32)
			if err != nil || id < 1 {
				return usageError{fmt.Errorf("%q: want a token id as delegation-token list shows it", rest[0])}
			}
			if err := cl.CancelDelegationToken(ctx, int32(id)); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "cancelled delegation token %d\n", id)
			return nil
		},
	})
}
