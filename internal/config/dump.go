package config

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Redacted is what Dump prints in place of a secret's value. Loading it
// back is refused, so a printed config cannot silently replace a secret
// with the placeholder.
const Redacted = "<redacted>"

// Dump renders target (a pointer to a config struct) as YAML using the koanf
// key names, with each key's help as a comment. Loading the output as the
// config file reproduces the struct exactly, but for secrets (keys tagged
// `secret:"true"`), which are printed as Redacted: the output is shown on
// terminals and pasted into issues, so it must not carry them.
func Dump(target any) ([]byte, error) {
	s, v, err := newSchema(target, DefaultEnvPrefix)
	if err != nil {
		return nil, err
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	sections := map[string]*yaml.Node{"": root}
	for _, f := range s.fields {
		parent := ""
		parts := strings.Split(f.key, ".")
		for _, p := range parts[:len(parts)-1] {
			path := p
			if parent != "" {
				path = parent + "." + p
			}
			if _, ok := sections[path]; !ok {
				m := &yaml.Node{Kind: yaml.MappingNode}
				sections[parent].Content = append(sections[parent].Content, strNode(p), m)
				sections[path] = m
			}
			parent = path
		}
		kn := strNode(parts[len(parts)-1])
		kn.HeadComment = f.help
		vn := valueNode(f.kind, getValue(f.leaf(v), f.kind))
		if f.secret && vn.Value != "" {
			vn = strNode(Redacted)
			kn.HeadComment += "\n(" + Redacted + ": set, but not printed; give it again here, by " + f.env + " or by --" + f.key + ")"
		}
		sections[parent].Content = append(sections[parent].Content, kn, vn)
	}

	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	return buf.Bytes(), nil
}

// strNode is a string scalar; the encoder quotes it when the plain form
// would read back as another type ("true", "123", "").
func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func valueNode(k kind, val any) *yaml.Node {
	switch k {
	case kindString, kindDuration:
		return strNode(formatText(k, val))
	case kindBool, kindInt, kindInt64, kindFloat:
		// No tag: written plain, and read back through parseText, which
		// does not care what YAML would have typed it as.
		return &yaml.Node{Kind: yaml.ScalarNode, Value: formatText(k, val)}
	case kindList:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, item := range val.([]string) {
			n.Content = append(n.Content, strNode(item))
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	case kindMap:
		n := &yaml.Node{Kind: yaml.MappingNode}
		m := val.(map[string]string)
		for _, key := range slices.Sorted(maps.Keys(m)) {
			n.Content = append(n.Content, strNode(key), strNode(m[key]))
		}
		if len(n.Content) == 0 {
			n.Style = yaml.FlowStyle
		}
		return n
	}
	return strNode("")
}

// Key documents one config leaf.
type Key struct {
	Name    string // dotted key, as in the YAML file
	Env     string // environment variable
	Flag    string // command-line flag, with leading dashes
	Type    string // string, bool, int, int64, float, duration, list or map
	Default string // target's value in env/flag text form
	Help    string
}

// Keys lists every leaf of target in declaration order, with target's
// current values as defaults. It errors only for a malformed struct.
func Keys(target any, opts ...Option) ([]Key, error) {
	o := buildOptions(opts)
	s, v, err := newSchema(target, o.envPrefix)
	if err != nil {
		return nil, err
	}
	keys := make([]Key, 0, len(s.fields))
	for _, f := range s.fields {
		keys = append(keys, Key{
			Name:    f.key,
			Env:     f.env,
			Flag:    "--" + f.key,
			Type:    f.kind.String(),
			Default: formatText(f.kind, getValue(f.leaf(v), f.kind)),
			Help:    f.help,
		})
	}
	return keys, nil
}

// MarkdownTable renders keys as a GitHub-flavoured Markdown table for the
// README, so the documented defaults cannot drift from the code.
func MarkdownTable(keys []Key) string {
	var b strings.Builder
	b.WriteString("| Key | Env | Flag | Type | Default | Description |\n")
	b.WriteString("|-----|-----|------|------|---------|-------------|\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n",
			mdCode(k.Name), mdCode(k.Env), mdCode(k.Flag), k.Type, mdCode(k.Default), mdText(k.Help))
	}
	return b.String()
}

func mdCode(s string) string {
	if s == "" {
		return ""
	}
	fence := "`"
	if strings.Contains(s, "`") {
		fence = "``"
		s = " " + s + " "
	}
	return fence + strings.ReplaceAll(s, "|", `\|`) + fence
}

func mdText(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}
