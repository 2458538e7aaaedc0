package acl

import (
	"fmt"
	"path"
	"strings"
)

// PatternKind says which form of grant resource a Pattern is.
type PatternKind uint8

// The forms of grant resource; see the package documentation.
const (
	PatternAll    PatternKind = iota + 1 // "*"
	PatternTenant                        // "<tenant>"
	PatternStream                        // "<tenant>/<stream>"
	PatternGlob                          // "<tenant>/<glob>"
	PatternSet                           // "<tenant>/set:<set>" (or the deprecated "<tenant>/group:<set>")
)

// setPrefix marks a stream-set pattern. ':' cannot occur in a stream name,
// so "set:x" can never be mistaken for a stream. deprecatedSetPrefix is its
// first spelling, from before "group" came to mean a reader group; grants
// stored with it keep working, and new grants given with it are stored
// under setPrefix.
const (
	setPrefix           = "set:"
	deprecatedSetPrefix = "group:"
)

// maxGlobLen bounds glob patterns; a pattern longer than the longest stream
// name plus a few metacharacters is a mistake, and a bound keeps matching
// cheap.
const maxGlobLen = 256

// Pattern is a parsed grant resource.
type Pattern struct {
	Kind   PatternKind
	Tenant string // empty for PatternAll
	// Name is the stream name, glob or stream-set name, depending on Kind;
	// empty for PatternAll and PatternTenant.
	Name string
}

// ParseResource parses and validates a grant resource string. Parsing is
// strict so that every accepted string is already canonical,
// ParseResource(s).String() == s, with one exception: the deprecated
// "<tenant>/group:<set>" parses as "<tenant>/set:<set>".
func ParseResource(s string) (Pattern, error) {
	if s == "*" {
		return Pattern{Kind: PatternAll}, nil
	}
	tenant, rest, hasSlash := strings.Cut(s, "/")
	if err := checkTenantName(tenant); err != nil {
		if strings.ContainsAny(tenant, "*?[") {
			return Pattern{}, fmt.Errorf("%w: resource %q: tenants cannot be matched by pattern; use \"*\" for every tenant or name one tenant", ErrInvalid, s)
		}
		return Pattern{}, fmt.Errorf("resource %q: %w", s, err)
	}
	if !hasSlash {
		return Pattern{Kind: PatternTenant, Tenant: tenant}, nil
	}
	set, ok := strings.CutPrefix(rest, setPrefix)
	if !ok {
		set, ok = strings.CutPrefix(rest, deprecatedSetPrefix)
	}
	if ok {
		if err := checkStreamName("stream set", set); err != nil {
			return Pattern{}, fmt.Errorf("resource %q: %w", s, err)
		}
		return Pattern{Kind: PatternSet, Tenant: tenant, Name: set}, nil
	}
	if strings.ContainsAny(rest, "*?[") {
		if err := checkGlob(rest); err != nil {
			return Pattern{}, fmt.Errorf("resource %q: %w", s, err)
		}
		return Pattern{Kind: PatternGlob, Tenant: tenant, Name: rest}, nil
	}
	if err := checkStreamName("stream", rest); err != nil {
		return Pattern{}, fmt.Errorf("resource %q: %w", s, err)
	}
	return Pattern{Kind: PatternStream, Tenant: tenant, Name: rest}, nil
}

// checkGlob accepts path.Match patterns over stream-name characters. '/' and
// '\\' are refused: stream names contain neither, so a pattern using them
// could only be a mistake (a '/' would suggest matching across tenants).
func checkGlob(g string) error {
	const rule = "want a path.Match pattern of stream-name characters and * ? [ ] ^"
	if len(g) > maxGlobLen {
		return fmt.Errorf("%w: glob %q is longer than %d characters", ErrInvalid, g, maxGlobLen)
	}
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case isStreamChar(c), c == '*', c == '?', c == '[', c == ']', c == '^':
		default:
			return fmt.Errorf("%w: glob %q: character %q not allowed; %s", ErrInvalid, g, c, rule)
		}
	}
	// path.Match reports a malformed pattern even when the name does not
	// match, so matching against "" validates the whole pattern.
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("%w: glob %q: %v; %s", ErrInvalid, g, err, rule)
	}
	return nil
}

// String returns the grant resource string p was parsed from.
func (p Pattern) String() string {
	switch p.Kind {
	case PatternAll:
		return "*"
	case PatternTenant:
		return p.Tenant
	case PatternSet:
		return p.Tenant + "/" + setPrefix + p.Name
	case PatternStream, PatternGlob:
		return p.Tenant + "/" + p.Name
	}
	return fmt.Sprintf("invalid pattern kind %d", p.Kind)
}

// Matches reports whether a grant on p covers r (actions aside). Only "*"
// covers the server itself; a tenant pattern covers the tenant and its
// streams; the others cover streams only.
func (p Pattern) Matches(r Resource) bool {
	if p.Kind == PatternAll {
		return true
	}
	if r.Tenant == "" || r.Tenant != p.Tenant {
		return false
	}
	switch p.Kind {
	case PatternTenant:
		return true
	case PatternStream:
		return r.Stream != "" && r.Stream == p.Name
	case PatternGlob:
		if r.Stream == "" {
			return false
		}
		ok, err := path.Match(p.Name, r.Stream)
		return ok && err == nil
	case PatternSet:
		return r.Stream != "" && r.Set != "" && r.Set == p.Name
	}
	return false
}

// Touches reports whether p covers anything inside tenant: the condition of
// the tenant-listing rule and of Visible.
func (p Pattern) Touches(tenant string) bool {
	return tenant != "" && (p.Kind == PatternAll || p.Tenant == tenant)
}
