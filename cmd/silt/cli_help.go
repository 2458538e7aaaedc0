package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is where flag descriptions wrap.
const helpWidth = 100

// help writes cmd's help: what it does, how to call it, its actions or
// verbs, examples, then its flags, all in one style.
func (a *app) help(cmd *cobra.Command, w io.Writer) {
	desc := cmd.Long
	if desc == "" {
		desc = cmd.Short
	}
	fmt.Fprintf(w, "%s\n\nUsage:\n  %s\n", strings.TrimSpace(desc), useLine(cmd))
	if cmd.HasAvailableSubCommands() {
		if len(cmd.Groups()) > 0 {
			for _, g := range cmd.Groups() {
				fmt.Fprintf(w, "\n%s\n", g.Title)
				writeCommands(w, cmd, g.ID)
			}
		} else {
			fmt.Fprintf(w, "\nActions:\n")
			writeCommands(w, cmd, "")
		}
	}
	if cmd.Example != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(cmd.Example, "\n"))
	}
	if !cmd.HasParent() {
		fmt.Fprintf(w, "\nClient flags (before or after the verb):\n%s", flagUsages(cmd.PersistentFlags(), nil))
		fmt.Fprintf(w, "\nRun 'silt VERB --help' for a verb's flags and examples.\n")
		return
	}
	if fs := cmd.LocalNonPersistentFlags(); fs.HasAvailableFlags() {
		if u := flagUsages(fs, nil); u != "" {
			fmt.Fprintf(w, "\nFlags:\n%s", u)
		}
	}
	if cmd.Annotations[annotLocal] == "" {
		fmt.Fprintf(w, "\nClient flags (before or after the verb):\n%s", flagUsages(cmd.InheritedFlags(), nil))
	}
	if cmd.HasAvailableSubCommands() {
		fmt.Fprintf(w, "\nRun '%s ACTION --help' for an action's flags and examples.\n", cmd.CommandPath())
	}
}

// useLine is how cmd is called. Cobra's UseLine mentions [flags] only
// once the flags are parsed, which silt help VERB does not do.
func useLine(cmd *cobra.Command) string {
	rest := strings.TrimPrefix(cmd.Use, cmd.Name())
	path := cmd.CommandPath()
	if !cmd.HasParent() {
		path = cmd.Name()
	}
	return path + rest + " [flags]"
}

func writeCommands(w io.Writer, cmd *cobra.Command, groupID string) {
	var names, shorts []string
	width := 0
	for _, c := range cmd.Commands() {
		if !c.IsAvailableCommand() && c.Name() != "help" || c.GroupID != groupID {
			continue
		}
		names, shorts = append(names, c.Name()), append(shorts, c.Short)
		width = max(width, len(c.Name()))
	}
	for i := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, names[i], shorts[i])
	}
}

// flagUsages lists the flags of fs that keep accepts (all with nil), one
// per line with its value placeholder, description, variable and default,
// the description wrapped to helpWidth.
func flagUsages(fs *pflag.FlagSet, keep func(*pflag.Flag) bool) string {
	type row struct{ name, desc string }
	var rows []row
	width := 0
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || keep != nil && !keep(f) {
			return
		}
		name := "    "
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", "
		}
		name += "--" + f.Name
		placeholder, desc := pflag.UnquoteUsage(f)
		if placeholder != "" {
			name += " " + placeholder
		}
		if d := f.DefValue; !zeroDefault(d) {
			if f.Value.Type() == "string" {
				d = fmt.Sprintf("%q", d)
			}
			desc += " (default " + d + ")"
		}
		rows = append(rows, row{name, desc})
		width = max(width, len(name))
	})
	// A very long flag name gets its description on the next line rather
	// than pushing every description of the block to the right.
	width = min(width, 40)
	var b strings.Builder
	for _, r := range rows {
		lines := wrap(r.desc, max(helpWidth-width-6, 30))
		if len(r.name) > width {
			fmt.Fprintf(&b, "  %s\n", r.name)
		} else {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, r.name, lines[0])
			lines = lines[1:]
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, "", l)
		}
	}
	return b.String()
}

func zeroDefault(d string) bool {
	switch d {
	case "", "0", "false", "0s", "[]", "map[]":
		return true
	}
	return false
}

// wrap splits s into lines of at most width characters at spaces.
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	return append(lines, line)
}
