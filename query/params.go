package query

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Params returns the names of the parameters ($name) of a packaged
// query's text, sorted, each once.
func Params(src string) ([]string, error) {
	toks, err := lex(src)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e.bind(src)
		}
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range toks {
		if t.kind == tokParam && !seen[t.text[1:]] {
			seen[t.text[1:]] = true
			out = append(out, t.text[1:])
		}
	}
	sort.Strings(out)
	return out, nil
}

// Bind replaces each $name of src with the value of params[name], as a
// literal: a number when the value is one, otherwise a quoted string. A
// value can therefore only ever be a value, never more query text.
// Parameters without a value, and values without a parameter, are errors.
func Bind(src string, params map[string]string) (string, error) {
	toks, err := lex(src)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return "", e.bind(src)
		}
		return "", err
	}
	used := map[string]bool{}
	var b strings.Builder
	last := 0
	for _, t := range toks {
		if t.kind != tokParam {
			continue
		}
		name := t.text[1:]
		v, ok := params[name]
		if !ok {
			return "", errAt(t.pos, "parameter $%s has no value", name).hint("pass it with the query's params").bind(src)
		}
		lit, err := literal(v)
		if err != nil {
			return "", errAt(t.pos, "parameter $%s: %v", name, err).bind(src)
		}
		used[name] = true
		b.WriteString(src[last:t.pos])
		b.WriteString(lit)
		last = t.end
	}
	b.WriteString(src[last:])
	var extra []string
	for name := range params {
		if !used[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		names, _ := Params(src)
		return "", fmt.Errorf("%w: the query has no parameter %s (it has %v)", ErrInvalidParams, strings.Join(extra, ", "), names)
	}
	return b.String(), nil
}

// numberLiteral is a number as both the pipe and expr read it.
var numberLiteral = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// ErrInvalidParams is wrapped by Bind's errors about values given for
// parameters that the query does not have.
var ErrInvalidParams = errors.New("query: invalid parameters")

func literal(v string) (string, error) {
	if !utf8.ValidString(v) {
		return "", errors.New("the value is not valid UTF-8")
	}
	if numberLiteral.MatchString(v) {
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) {
			return v, nil
		}
	}
	return strconv.Quote(v), nil
}
