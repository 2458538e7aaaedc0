package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Values travel between sources and the struct in one canonical Go type per
// kind: string, bool, int64 (for both int kinds), float64, time.Duration,
// []string and map[string]string. Parsing is shared by env and flags so the
// same text means the same thing wherever it is written.

// parseText parses the textual form used by environment variables and flags.
// Lists are comma separated; maps are comma separated key=value pairs.
func parseText(k kind, s string) (any, error) {
	switch k {
	case kindString:
		return s, nil
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New("want true or false")
		}
		return b, nil
	case kindInt, kindInt64:
		bits := 64
		if k == kindInt {
			bits = strconv.IntSize
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 0, bits)
		if err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return nil, errors.New("integer out of range")
			}
			return nil, errors.New("want an integer")
		}
		return n, nil
	case kindFloat:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, errors.New("want a number")
		}
		return f, nil
	case kindDuration:
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New(`want a duration such as "500ms", "5s" or "1h30m"`)
		}
		return d, nil
	case kindList:
		var out []string
		for item := range strings.SplitSeq(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		return out, nil
	case kindMap:
		var out map[string]string
		for pair := range strings.SplitSeq(s, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, fmt.Errorf("want key=value pairs separated by commas, got %q", pair)
			}
			if out == nil {
				out = map[string]string{}
			}
			out[k] = strings.TrimSpace(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported kind %v", k)
}

// decodeNode converts a YAML value. Scalars go through parseText so that a
// file, the environment and flags accept exactly the same spellings; YAML's
// own typing is ignored, which also means `name: 123` is fine for a string.
// An explicit null resets the key to its zero value.
func decodeNode(k kind, n *yaml.Node) (any, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return zeroValue(k), nil
	}
	switch k {
	case kindList:
		if n.Kind != yaml.SequenceNode {
			return nil, errors.New("want a list")
		}
		var out []string
		for _, item := range n.Content {
			s, err := scalarText(item)
			if err != nil {
				return nil, fmt.Errorf("list item: %w", err)
			}
			out = append(out, s)
		}
		return out, nil
	case kindMap:
		if n.Kind != yaml.MappingNode {
			return nil, errors.New("want a mapping")
		}
		var out map[string]string
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, err := scalarText(n.Content[i])
			if err != nil {
				return nil, fmt.Errorf("map key: %w", err)
			}
			val, err := scalarText(n.Content[i+1])
			if err != nil {
				return nil, fmt.Errorf("map value for %q: %w", key, err)
			}
			if out == nil {
				out = map[string]string{}
			}
			out[key] = val
		}
		return out, nil
	default:
		s, err := scalarText(n)
		if err != nil {
			return nil, err
		}
		return parseText(k, s)
	}
}

func scalarText(n *yaml.Node) (string, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return n.Value, nil
	case yaml.SequenceNode:
		return "", errors.New("want a single value, got a list")
	case yaml.MappingNode:
		return "", errors.New("want a single value, got a mapping")
	}
	return "", errors.New("want a single value")
}

func zeroValue(k kind) any {
	switch k {
	case kindString:
		return ""
	case kindBool:
		return false
	case kindInt, kindInt64:
		return int64(0)
	case kindFloat:
		return float64(0)
	case kindDuration:
		return time.Duration(0)
	case kindList:
		return []string(nil)
	case kindMap:
		return map[string]string(nil)
	}
	return nil
}

// setValue stores a canonical value into a struct field. Named types (type
// Mode string, []Host) are handled through reflect so config structs may use
// them freely. Empty lists and maps are stored as nil, the Go zero value, so
// that a dump of nil reads back as nil.
func setValue(dst reflect.Value, k kind, val any) {
	switch k {
	case kindString:
		dst.SetString(val.(string))
	case kindBool:
		dst.SetBool(val.(bool))
	case kindInt, kindInt64:
		dst.SetInt(val.(int64))
	case kindFloat:
		dst.SetFloat(val.(float64))
	case kindDuration:
		dst.SetInt(int64(val.(time.Duration)))
	case kindList:
		list := val.([]string)
		if len(list) == 0 {
			dst.Set(reflect.Zero(dst.Type()))
			return
		}
		out := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, s := range list {
			out.Index(i).SetString(s)
		}
		dst.Set(out)
	case kindMap:
		m := val.(map[string]string)
		if len(m) == 0 {
			dst.Set(reflect.Zero(dst.Type()))
			return
		}
		out := reflect.MakeMapWithSize(dst.Type(), len(m))
		for key, v := range m {
			kv := reflect.New(dst.Type().Key()).Elem()
			kv.SetString(key)
			vv := reflect.New(dst.Type().Elem()).Elem()
			vv.SetString(v)
			out.SetMapIndex(kv, vv)
		}
		dst.Set(out)
	}
}

// getValue is the inverse of setValue.
func getValue(src reflect.Value, k kind) any {
	switch k {
	case kindString:
		return src.String()
	case kindBool:
		return src.Bool()
	case kindInt, kindInt64:
		return src.Int()
	case kindFloat:
		return src.Float()
	case kindDuration:
		return time.Duration(src.Int())
	case kindList:
		var out []string
		for i := range src.Len() {
			out = append(out, src.Index(i).String())
		}
		return out
	case kindMap:
		var out map[string]string
		iter := src.MapRange()
		for iter.Next() {
			if out == nil {
				out = map[string]string{}
			}
			out[iter.Key().String()] = iter.Value().String()
		}
		return out
	}
	return nil
}

// formatText renders a value in the textual form parseText accepts; it is
// what Keys reports as the default and what flag help shows.
func formatText(k kind, val any) string {
	switch k {
	case kindString:
		return val.(string)
	case kindBool:
		return strconv.FormatBool(val.(bool))
	case kindInt, kindInt64:
		return strconv.FormatInt(val.(int64), 10)
	case kindFloat:
		return formatFloat(val.(float64))
	case kindDuration:
		return val.(time.Duration).String()
	case kindList:
		return strings.Join(val.([]string), ",")
	case kindMap:
		m := val.(map[string]string)
		var parts []string
		for _, key := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, key+"="+m[key])
		}
		return strings.Join(parts, ",")
	}
	return ""
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
