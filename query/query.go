// Package query is silt's operator-pipe query language over the JSON
// events of `lines` streams:
//
//	from acme/clicks since -1h
//	| where status >= 500 and head == "s3"
//	| stats count(), p99(latency_ms) by principal
//	| sort -count | head 10
//
// The pipe (operators, their clauses, stream names, durations) is parsed
// here by a small hand-written lexer and parser; every expression inside
// it (where, eval, stats arguments, by keys) is compiled once by
// github.com/expr-lang/expr and run per event. Expressions see only the
// event's fields and expr's pure builtins: the environment holds data, no
// Go functions, so a query cannot call into the server.
//
// A Query runs over a Source (how the caller reads a stream's events; the
// API passes one that reads tier 1 and tier 2 alike), merging the events
// of every segment of every `from` stream in event-time order. Operators
// that must hold rows (stats, sort, top, join, percentiles, dcount) are
// bounded by Limits and fail with ErrLimit rather than grow without end.
// Mistakes in the text are *Error values with a line, a column, a caret
// line and, for a misspelt operator, function or field, the nearest name.
//
// docs/query.md is the language reference.
package query

import (
	"fmt"
	"time"
)

// Limits bound the memory one query may use. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxGroups is the most distinct `by` groups one stats may hold.
	MaxGroups int `koanf:"max_groups" help:"most groups one stats operator may hold"`
	// MaxValues is the most values percentiles and dcount may keep, over
	// all groups of one stats.
	MaxValues int `koanf:"max_values" help:"most values percentile and dcount aggregates may keep in one stats operator"`
	// MaxSortRows is the most rows sort and top may hold.
	MaxSortRows int `koanf:"max_sort_rows" help:"most rows one sort or top operator may hold"`
	// MaxJoinRows is the most rows the small side of a join may have.
	MaxJoinRows int `koanf:"max_join_rows" help:"most rows the small (right) side of a join may have"`
}

// DefaultLimits returns the limits used when none are configured.
func DefaultLimits() Limits {
	return Limits{MaxGroups: 100_000, MaxValues: 1_000_000, MaxSortRows: 1_000_000, MaxJoinRows: 100_000}
}

// Validate reports the first limit that is negative.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"max_groups", l.MaxGroups}, {"max_values", l.MaxValues}, {"max_sort_rows", l.MaxSortRows}, {"max_join_rows", l.MaxJoinRows}} {
		if f.v < 0 {
			return fmt.Errorf("query: %s must not be negative, got %d", f.name, f.v)
		}
	}
	return nil
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxGroups == 0 {
		l.MaxGroups = d.MaxGroups
	}
	if l.MaxValues == 0 {
		l.MaxValues = d.MaxValues
	}
	if l.MaxSortRows == 0 {
		l.MaxSortRows = d.MaxSortRows
	}
	if l.MaxJoinRows == 0 {
		l.MaxJoinRows = d.MaxJoinRows
	}
	return l
}

// Row is one event or result row: field name to value. Values are what
// encoding/json decodes (float64, string, bool, nil, []any, map[string]any)
// plus time.Time for times.
type Row = map[string]any

// The fields every scanned event carries besides its JSON fields.
const (
	FieldTime    = "_time"    // when the event was appended (time.Time)
	FieldStream  = "_stream"  // "tenant/stream"
	FieldSegment = "_segment" // segment id
	FieldOffset  = "_offset"  // offset in the segment
	FieldRaw     = "_raw"     // the line, when it is not a JSON object
)

var eventFields = []string{FieldTime, FieldStream, FieldSegment, FieldOffset}

// StreamRef names one stream a query reads.
type StreamRef struct {
	Tenant, Stream string
}

func (r StreamRef) String() string { return r.Tenant + "/" + r.Stream }

// Query is a parsed query. It holds no run state: run it as often as
// needed, concurrently too.
type Query struct {
	src  string
	pipe *pipeline
}

// pipeline is a from clause and its operators; a join holds another.
type pipeline struct {
	from   fromClause
	stages []stage
	out    schema
	// openRefs are the field names expressions read while the schema was
	// open, checked after a run against the fields events had.
	openRefs []fieldRef
}

type fieldRef struct {
	name string
	pos  int
}

type fromClause struct {
	streams []streamSpec
	since   *timeBound
	until   *timeBound
}

type streamSpec struct {
	StreamRef
	pos       int
	cut, upto map[string]uint64 // per segment: first offset read, offset reading stops at
}

// timeBound is `since`/`until`: a time relative to when the query runs,
// or an absolute one.
type timeBound struct {
	rel time.Duration
	abs time.Time
}

func (b *timeBound) at(now time.Time) time.Time {
	if !b.abs.IsZero() {
		return b.abs
	}
	return now.Add(b.rel)
}

// schema is what parsing knows of the fields rows have at a point of the
// pipe: closed after project or stats (only cols exist), open while rows
// are events (cols exist, and any JSON field may).
type schema struct {
	open bool
	cols []string
}

func (s schema) has(name string) bool {
	for _, c := range s.cols {
		if c == name {
			return true
		}
	}
	return false
}

func (s schema) with(names ...string) schema {
	out := schema{open: s.open, cols: append([]string(nil), s.cols...)}
	for _, n := range names {
		if !out.has(n) {
			out.cols = append(out.cols, n)
		}
	}
	return out
}

// Streams returns every stream the query reads, those of joins included,
// each once, so that the caller can check read access to all of them.
func (q *Query) Streams() []StreamRef {
	var out []StreamRef
	seen := map[StreamRef]bool{}
	var walk func(p *pipeline)
	walk = func(p *pipeline) {
		for _, s := range p.from.streams {
			if !seen[s.StreamRef] {
				seen[s.StreamRef] = true
				out = append(out, s.StreamRef)
			}
		}
		for _, st := range p.stages {
			if j, ok := st.(*joinStage); ok {
				walk(j.right)
			}
		}
	}
	walk(q.pipe)
	return out
}

// Text returns the query's source text.
func (q *Query) Text() string { return q.src }
