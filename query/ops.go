package query

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A stage is one parsed operator; sink builds its running form in front
// of next. Stages hold no run state, so a Query can run many times.
type stage interface {
	sink(env *runEnv, next sink) (sink, error)
}

// A sink takes rows one at a time; done says no more rows will come.
// push returns errStop when it wants no more rows (head has its rows).
type sink interface {
	push(r Row) error
	done() error
}

// --- where

type whereStage struct{ cond *expression }

type whereSink struct {
	cond *expression
	next sink
	env  *runEnv
}

func (st *whereStage) sink(env *runEnv, next sink) (sink, error) {
	return &whereSink{cond: st.cond, next: next, env: env}, nil
}

func (s *whereSink) push(r Row) error {
	v, err := s.cond.eval(r)
	if err != nil {
		s.env.evalError("where", s.cond, err)
		return nil
	}
	b, ok := v.(bool)
	if !ok {
		s.env.evalError("where", s.cond, fmt.Errorf("the condition gave %s, not true or false", typeName(v)))
		return nil
	}
	if !b {
		return nil
	}
	return s.next.push(r)
}

func (s *whereSink) done() error { return s.next.done() }

// --- eval / extend

type evalStage struct {
	names []string
	exprs []*expression
}

type evalSink struct {
	st   *evalStage
	next sink
	env  *runEnv
}

func (st *evalStage) sink(env *runEnv, next sink) (sink, error) {
	return &evalSink{st: st, next: next, env: env}, nil
}

func (s *evalSink) push(r Row) error {
	for i, e := range s.st.exprs {
		v, err := e.eval(r)
		if err != nil {
			s.env.evalError("eval", e, err)
			v = nil
		}
		r[s.st.names[i]] = v
	}
	return s.next.push(r)
}

func (s *evalSink) done() error { return s.next.done() }

// --- project

type projectStage struct {
	names []string
	exprs []*expression
}

type projectSink struct {
	st   *projectStage
	next sink
	env  *runEnv
}

func (st *projectStage) sink(env *runEnv, next sink) (sink, error) {
	return &projectSink{st: st, next: next, env: env}, nil
}

func (s *projectSink) push(r Row) error {
	out := make(Row, len(s.st.names))
	for i, e := range s.st.exprs {
		v, err := e.eval(r)
		if err != nil {
			s.env.evalError("project", e, err)
			v = nil
		}
		out[s.st.names[i]] = v
	}
	return s.next.push(out)
}

func (s *projectSink) done() error { return s.next.done() }

// --- bin

// binStage rounds a field down to a multiple of a number, or a time down
// to a multiple of a duration (since the Unix epoch, in UTC).
type binStage struct {
	field string
	num   float64
	dur   time.Duration
}

type mapSink struct {
	fn   func(Row) Row
	next sink
}

func (s *mapSink) push(r Row) error {
	if r = s.fn(r); r == nil {
		return nil
	}
	return s.next.push(r)
}
func (s *mapSink) done() error { return s.next.done() }

func (st *binStage) sink(env *runEnv, next sink) (sink, error) {
	return &mapSink{next: next, fn: func(r Row) Row {
		v := r[st.field]
		if v == nil {
			return r
		}
		if st.num > 0 {
			f, ok := toFloat(v)
			if !ok {
				env.warn("bin", fmt.Sprintf("field %q held %s, not a number", st.field, typeName(v)))
				r[st.field] = nil
				return r
			}
			r[st.field] = math.Floor(f/st.num) * st.num
			return r
		}
		t, ok := toTime(v)
		if !ok {
			env.warn("bin", fmt.Sprintf("field %q held %s, not a time", st.field, typeName(v)))
			r[st.field] = nil
			return r
		}
		r[st.field] = floorTime(t, st.dur)
		return r
	}}, nil
}

func floorTime(t time.Time, d time.Duration) time.Time {
	ns := t.UnixNano()
	q := ns - ns%int64(d)
	if ns%int64(d) < 0 {
		q -= int64(d)
	}
	return time.Unix(0, q).UTC()
}

// --- window

// windowStage puts each row in the windows its time falls in: one for a
// tumbling window, size/every for a sliding one (the row is copied).
type windowStage struct {
	field       string
	size, every time.Duration
}

type windowSink struct {
	st   *windowStage
	next sink
	env  *runEnv
}

func (st *windowStage) sink(env *runEnv, next sink) (sink, error) {
	return &windowSink{st: st, next: next, env: env}, nil
}

func (s *windowSink) push(r Row) error {
	t, ok := toTime(r[s.st.field])
	if !ok {
		s.env.warn("window", fmt.Sprintf("field %q held %s, not a time; the row was left out", s.st.field, typeName(r[s.st.field])))
		return nil
	}
	// The last window start at or before t, then back by steps while the
	// window still holds t.
	last := floorTime(t, s.st.every)
	var starts []time.Time
	for st := last; t.Before(st.Add(s.st.size)); st = st.Add(-s.st.every) {
		starts = append(starts, st)
	}
	for i := len(starts) - 1; i >= 0; i-- {
		out := r
		if i > 0 {
			out = make(Row, len(r)+2)
			for k, v := range r {
				out[k] = v
			}
		}
		out["window_start"] = starts[i]
		out["window_end"] = starts[i].Add(s.st.size)
		if err := s.next.push(out); err != nil {
			return err
		}
	}
	return nil
}

func (s *windowSink) done() error { return s.next.done() }

// --- sort, top, head

type sortKey struct {
	field string
	desc  bool
}

func lessRows(keys []sortKey) func(a, b Row) bool {
	return func(a, b Row) bool {
		for _, k := range keys {
			c := orderValues(a[k.field], b[k.field])
			if c == 0 {
				continue
			}
			if k.desc {
				return c > 0
			}
			return c < 0
		}
		return false
	}
}

type sortStage struct {
	keys  []sortKey
	limit int
}

type sortSink struct {
	st   *sortStage
	next sink
	rows []Row
}

func (st *sortStage) sink(env *runEnv, next sink) (sink, error) {
	return &sortSink{st: st, next: next}, nil
}

func (s *sortSink) push(r Row) error {
	if len(s.rows) >= s.st.limit {
		return fmt.Errorf("%w: sort holds more than %d rows (query.limits.max_sort_rows); use top N by … to keep only the first N, or aggregate first", ErrLimit, s.st.limit)
	}
	s.rows = append(s.rows, r)
	return nil
}

func (s *sortSink) done() error {
	less := lessRows(s.st.keys)
	sort.SliceStable(s.rows, func(i, j int) bool { return less(s.rows[i], s.rows[j]) })
	return emitAll(s.rows, s.next)
}

func emitAll(rows []Row, next sink) error {
	for _, r := range rows {
		if err := next.push(r); err != nil {
			if err == errStop {
				break
			}
			return err
		}
	}
	return next.done()
}

// topStage keeps the first n rows by its keys, holding at most 2n rows:
// when the buffer fills it is sorted and cut back to n.
type topStage struct {
	n    int
	keys []sortKey
}

type topSink struct {
	st   *topStage
	next sink
	rows []Row
}

func (st *topStage) sink(env *runEnv, next sink) (sink, error) {
	return &topSink{st: st, next: next}, nil
}

func (s *topSink) push(r Row) error {
	s.rows = append(s.rows, r)
	if len(s.rows) >= 2*s.st.n {
		s.cut()
	}
	return nil
}

func (s *topSink) cut() {
	less := lessRows(s.st.keys)
	// Stable: among equal keys the earlier row wins, as sort | head would.
	sort.SliceStable(s.rows, func(i, j int) bool { return less(s.rows[i], s.rows[j]) })
	if len(s.rows) > s.st.n {
		clear(s.rows[s.st.n:])
		s.rows = s.rows[:s.st.n]
	}
}

func (s *topSink) done() error {
	s.cut()
	return emitAll(s.rows, s.next)
}

type headStage struct{ n int }

type headSink struct {
	n, seen int
	next    sink
}

func (st *headStage) sink(env *runEnv, next sink) (sink, error) {
	return &headSink{n: st.n, next: next}, nil
}

func (s *headSink) push(r Row) error {
	if s.seen >= s.n {
		return errStop
	}
	s.seen++
	if err := s.next.push(r); err != nil {
		return err
	}
	if s.seen >= s.n {
		return errStop
	}
	return nil
}

func (s *headSink) done() error { return s.next.done() }

// --- join

// joinStage runs its right side to the end first, holding at most limit
// rows in a hash table by key, then matches each left row against it.
// Fields of the left row win over right fields of the same name.
type joinStage struct {
	right *pipeline
	keys  []string
	left  bool // keep left rows without a match
	limit int
}

type joinSink struct {
	st    *joinStage
	next  sink
	table map[string][]Row
}

func (st *joinStage) sink(env *runEnv, next sink) (sink, error) {
	table := map[string][]Row{}
	n := 0
	collect := &funcSink{fn: func(r Row) error {
		if n >= st.limit {
			return fmt.Errorf("%w: the right side of the join has more than %d rows (query.limits.max_join_rows); put the smaller side on the right, or filter it", ErrLimit, st.limit)
		}
		n++
		k := joinKey(r, st.keys)
		table[k] = append(table[k], r)
		return nil
	}}
	if err := env.run(st.right, collect); err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	return &joinSink{st: st, next: next, table: table}, nil
}

func joinKey(r Row, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(keyString(r[k]))
		b.WriteByte(0)
	}
	return b.String()
}

func (s *joinSink) push(r Row) error {
	matches := s.table[joinKey(r, s.st.keys)]
	if len(matches) == 0 {
		if s.st.left {
			return s.next.push(r)
		}
		return nil
	}
	for _, m := range matches {
		out := make(Row, len(r)+len(m))
		for k, v := range m {
			out[k] = v
		}
		for k, v := range r {
			out[k] = v
		}
		if err := s.next.push(out); err != nil {
			return err
		}
	}
	return nil
}

func (s *joinSink) done() error { return s.next.done() }

type funcSink struct{ fn func(Row) error }

func (s *funcSink) push(r Row) error { return s.fn(r) }
func (s *funcSink) done() error      { return nil }

// --- parse

// parseStage merges fields out of a string field: a JSON object's keys,
// or a regular expression's named groups. A row that does not parse or
// match passes unchanged.
type parseStage struct {
	field string
	json  bool
	re    *regexp.Regexp
}

func compileRegex(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("regular expression: %v", err)
	}
	return re, nil
}

func (st *parseStage) sink(env *runEnv, next sink) (sink, error) {
	return &mapSink{next: next, fn: func(r Row) Row {
		s, ok := r[st.field].(string)
		if !ok {
			if m, isObj := r[st.field].(map[string]any); isObj && st.json {
				for k, v := range m {
					r[k] = v
				}
			}
			return r
		}
		if st.json {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				env.warn("parse json", fmt.Sprintf("field %q is not a JSON object", st.field))
				return r
			}
			for k, v := range m {
				r[k] = v
			}
			return r
		}
		m := st.re.FindStringSubmatch(s)
		if m == nil {
			return r
		}
		for i, n := range st.re.SubexpNames() {
			if n != "" {
				r[n] = m[i]
			}
		}
		return r
	}}, nil
}

// --- values

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// toTime reads a time.Time, an RFC 3339 string, or a number of seconds
// since the Unix epoch.
func toTime(v any) (time.Time, bool) {
	switch x := v.(type) {
	case time.Time:
		return x, true
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		return t, err == nil
	}
	if f, ok := toFloat(v); ok {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)).UTC(), true
	}
	return time.Time{}, false
}

// compareValues compares two values of one kind (numbers, strings, times,
// bools); ok is false for values of different kinds.
func compareValues(a, b any) (int, bool) {
	if fa, ok := toFloat(a); ok {
		if fb, ok := toFloat(b); ok {
			switch {
			case fa < fb:
				return -1, true
			case fa > fb:
				return 1, true
			}
			return 0, true
		}
		return 0, false
	}
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), true
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, true
			case !x:
				return -1, true
			}
			return 1, true
		}
	}
	return 0, false
}

// orderValues is a total order for sorting: null first, then booleans,
// numbers, times, strings, and anything else by its JSON text.
func orderValues(a, b any) int {
	if c, ok := compareValues(a, b); ok {
		return c
	}
	ra, rb := kindRank(a), kindRank(b)
	if ra != rb {
		return ra - rb
	}
	return strings.Compare(keyString(a), keyString(b))
}

func kindRank(v any) int {
	if v == nil {
		return 0
	}
	if _, ok := toFloat(v); ok {
		return 2
	}
	switch v.(type) {
	case bool:
		return 1
	case time.Time:
		return 3
	case string:
		return 4
	}
	return 5
}

// keyString encodes a value for grouping and joining: equal values give
// equal strings, and values of different kinds never collide.
func keyString(v any) string {
	if f, ok := toFloat(v); ok {
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	switch x := v.(type) {
	case nil:
		return "z"
	case string:
		return "s" + x
	case bool:
		return "b" + strconv.FormatBool(x)
	case time.Time:
		return "t" + x.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(v)
	return "j" + string(b)
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case time.Time:
		return "a time"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	if _, ok := toFloat(v); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
