package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// applyFile decodes the YAML document node by node rather than into the
// struct: that is what lets errors carry a line number, unknown keys be
// caught, and dotted keys ("api.listen: x") be accepted alongside nesting.
func (l *Loader) applyFile(work reflect.Value, path string, data []byte, sources map[string]Source) []error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty file: nothing to override
		}
		return []error{fmt.Errorf("parse config file %s: %w", path, err)}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return []error{fmt.Errorf("parse config file %s: want exactly one YAML document", path)}
	}
	if len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	if root.Kind != yaml.MappingNode {
		return []error{fmt.Errorf("config file %s:%d: top level must be a mapping of keys", path, root.Line)}
	}
	w := &fileWalker{
		l:       l,
		work:    work,
		path:    path,
		sources: sources,
		seen:    map[string]int{},
	}
	w.mapping(root, "")
	return w.errs
}

type fileWalker struct {
	l       *Loader
	work    reflect.Value
	path    string
	sources map[string]Source
	seen    map[string]int // key → line where it was set
	errs    []error
}

func (w *fileWalker) mapping(n *yaml.Node, prefix string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		for vn.Kind == yaml.AliasNode {
			vn = vn.Alias
		}
		key := kn.Value
		if prefix != "" {
			key = prefix + "." + key
		}
		where := fmt.Sprintf("%s:%d", w.path, kn.Line)

		if w.l.schema.sections[key] {
			switch {
			case vn.Kind == yaml.MappingNode:
				w.mapping(vn, key)
			case vn.Kind == yaml.ScalarNode && vn.Tag == "!!null":
				// "api:" with nothing under it: an empty section.
			default:
				w.errs = append(w.errs, fmt.Errorf("config file %s: %s is a section; want a mapping of its keys", where, key))
			}
			continue
		}
		f, ok := w.l.schema.byKey[key]
		if !ok {
			w.errs = append(w.errs, &UnknownKeyError{
				Name:       key,
				Source:     SourceFile,
				Where:      where,
				Suggestion: suggest(key, w.knownKeys()),
			})
			continue
		}
		if line, dup := w.seen[key]; dup {
			w.errs = append(w.errs, fmt.Errorf("config file %s: %s already set on line %d", where, key, line))
			continue
		}
		w.seen[key] = kn.Line
		val, err := decodeNode(f.kind, vn)
		if err != nil {
			w.errs = append(w.errs, &ValueError{
				Key:    key,
				Source: SourceFile,
				Where:  where,
				Value:  nodeText(vn),
				Err:    err,
			})
			continue
		}
		setValue(f.leaf(w.work), f.kind, val)
		w.sources[key] = SourceFile
	}
}

func (w *fileWalker) knownKeys() []string {
	// Sections are candidates too, so "apii:" suggests "api".
	keys := make([]string, 0, len(w.l.schema.fields)+len(w.l.schema.sections))
	for _, f := range w.l.schema.fields {
		keys = append(keys, f.key)
	}
	for s := range w.l.schema.sections {
		keys = append(keys, s)
	}
	slices.Sort(keys[len(w.l.schema.fields):]) // deterministic ties
	return keys
}

// nodeText renders a node compactly for an error message.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return "?"
	}
	s := strings.TrimSpace(string(out))
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}
