package config

import (
	"fmt"
	"reflect"
	"strings"
	"time"
)

// kind is the small closed set of leaf types the loader understands. Keeping
// it closed is what lets every source (file, env, flag) parse a value the same
// way and lets Dump write something Load reads back unchanged.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindInt64
	kindFloat
	kindDuration
	kindList
	kindMap
)

// String is the type name shown in Keys and the README table.
func (k kind) String() string {
	switch k {
	case kindString:
		return "string"
	case kindBool:
		return "bool"
	case kindInt:
		return "int"
	case kindInt64:
		return "int64"
	case kindFloat:
		return "float"
	case kindDuration:
		return "duration"
	case kindList:
		return "list"
	case kindMap:
		return "map"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// field is one leaf of the config tree.
type field struct {
	key  string // dotted koanf key, e.g. "api.max_inflight_bytes"
	env  string // e.g. "SILT_API_MAX_INFLIGHT_BYTES"
	help string
	kind kind
	// secret fields (tag `secret:"true"`) are never printed: Dump writes
	// Redacted in their place.
	secret bool
	index  []int // reflect field index path from the root struct
}

// schema is the flattened view of a config struct type.
type schema struct {
	typ      reflect.Type
	fields   []*field // in struct declaration order, depth first
	byKey    map[string]*field
	byEnv    map[string]*field
	sections map[string]bool // dotted prefixes that are nested structs
	topEnv   []string        // env forms of top-level sections, e.g. "SILT_API_"
}

var durationType = reflect.TypeFor[time.Duration]()

// newSchema walks the struct behind target, which must be a non-nil pointer
// to a struct. Mistakes in the struct definition (missing tags, unsupported
// types, keys that collide once turned into env names) are reported here so
// they surface in the first test that loads the config, not in production.
func newSchema(target any, envPrefix string) (*schema, reflect.Value, error) {
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, reflect.Value{}, fmt.Errorf("config: target must be a non-nil pointer to a struct, got %T", target)
	}
	s := &schema{
		typ:      v.Elem().Type(),
		byKey:    map[string]*field{},
		byEnv:    map[string]*field{},
		sections: map[string]bool{},
	}
	if err := s.walk(s.typ, "", nil, envPrefix); err != nil {
		return nil, reflect.Value{}, err
	}
	return s, v.Elem(), nil
}

func (s *schema) walk(t reflect.Type, prefix string, index []int, envPrefix string) error {
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		tag, hasTag := sf.Tag.Lookup("koanf")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		idx := append(append([]int(nil), index...), i)

		// An untagged embedded struct contributes its fields at the same
		// level, the way encoding/json treats embedding.
		if sf.Anonymous && !hasTag && sf.Type.Kind() == reflect.Struct {
			if err := s.walk(sf.Type, prefix, idx, envPrefix); err != nil {
				return err
			}
			continue
		}
		if !hasTag || name == "" {
			return fmt.Errorf("config: field %s.%s has no koanf tag (use `koanf:\"-\"` to skip it)", t.Name(), sf.Name)
		}
		if !validKeyPart(name) {
			return fmt.Errorf("config: field %s.%s: key %q must be lowercase letters, digits and underscores", t.Name(), sf.Name, name)
		}
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		if _, dup := s.byKey[key]; dup || s.sections[key] {
			return fmt.Errorf("config: key %q is defined twice", key)
		}

		k, ok := kindOf(sf.Type)
		if !ok && sf.Type.Kind() == reflect.Struct {
			n := len(s.fields)
			s.sections[key] = true
			if prefix == "" {
				s.topEnv = append(s.topEnv, envName(envPrefix, key)+"_")
			}
			if err := s.walk(sf.Type, key, idx, envPrefix); err != nil {
				return err
			}
			// A struct without tagged fields (time.Time, say) is almost
			// certainly a mistake, not an empty section.
			if len(s.fields) == n {
				return fmt.Errorf("config: key %q: struct type %s has no config fields", key, sf.Type)
			}
			continue
		}
		if !ok {
			return fmt.Errorf("config: key %q: unsupported type %s", key, sf.Type)
		}

		f := &field{
			key:   key,
			env:   envName(envPrefix, key),
			help:  sf.Tag.Get("help"),
			kind:  k,
			index: idx,
		}
		if sf.Tag.Get("secret") == "true" {
			if k != kindString {
				return fmt.Errorf("config: key %q: only string keys can be secret", key)
			}
			f.secret = true
		}
		if other, dup := s.byEnv[f.env]; dup {
			return fmt.Errorf("config: keys %q and %q both map to environment variable %s", other.key, key, f.env)
		}
		s.fields = append(s.fields, f)
		s.byKey[key] = f
		s.byEnv[f.env] = f
	}
	return nil
}

func kindOf(t reflect.Type) (kind, bool) {
	if t == durationType {
		return kindDuration, true
	}
	switch t.Kind() {
	case reflect.String:
		return kindString, true
	case reflect.Bool:
		return kindBool, true
	case reflect.Int:
		return kindInt, true
	case reflect.Int64:
		return kindInt64, true
	case reflect.Float64:
		return kindFloat, true
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return kindList, true
		}
	case reflect.Map:
		if t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String {
			return kindMap, true
		}
	}
	return 0, false
}

// validKeyPart restricts keys to what maps cleanly onto environment variable
// names and flag names without quoting.
func validKeyPart(s string) bool {
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return s != ""
}

// envName maps "api.max_inflight_bytes" to "SILT_API_MAX_INFLIGHT_BYTES".
// The mapping is not reversible by splitting on "_", which is why loading
// looks env names up in schema.byEnv instead.
func envName(prefix, key string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// leaf returns the settable struct field for f inside root.
func (f *field) leaf(root reflect.Value) reflect.Value {
	return root.FieldByIndex(f.index)
}
