package query

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// aggNames are the aggregate functions, for suggestions; pNN stands for
// p1 … p99.
var aggNames = []string{"count", "sum", "avg", "min", "max", "dcount", "percentile", "p50", "p90", "p95", "p99"}

type aggSpec struct {
	fn   string // count, sum, avg, min, max, dcount, percentile
	arg  *expression
	pct  float64 // percentile's rank, 0 < pct <= 100
	name string
}

// stats parses `stats agg [as name], … [by key, …]`.
func (p *parser) stats(pipe *pipeline) (stage, error) {
	in := pipe.out
	st := &statsStage{maxGroups: p.lim.MaxGroups, maxValues: p.lim.MaxValues}
	var cols []string
	for {
		a, err := p.agg(pipe, in)
		if err != nil {
			return nil, err
		}
		st.aggs = append(st.aggs, a)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if p.isWord("by") {
		p.next()
		for {
			name, e, err := p.assignment(in, stopAt(","))
			if err != nil {
				return nil, err
			}
			p.noteRefs(pipe, e)
			if containsStr(st.keyNames, name) {
				return nil, errAt(e.pos, "by key %q given twice", name)
			}
			st.keyNames = append(st.keyNames, name)
			st.keys = append(st.keys, e)
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
	}
	cols = append(cols, st.keyNames...)
	for _, a := range st.aggs {
		if containsStr(cols, a.name) {
			return nil, errAt(p.peek().pos, "column %q given twice in stats; name one with as", a.name)
		}
		cols = append(cols, a.name)
	}
	pipe.out = schema{cols: cols}
	return st, nil
}

func (p *parser) agg(pipe *pipeline, in schema) (aggSpec, error) {
	var a aggSpec
	// name = agg(…) names the column up front.
	if t := p.peek(); t.kind == tokIdent && p.toks[p.i+1].kind == tokPunct && p.toks[p.i+1].text == "=" {
		a.name = t.text
		p.next()
		p.next()
	}
	fn, err := p.ident("an aggregate such as count()")
	if err != nil {
		return a, err
	}
	a.fn = strings.ToLower(fn.text)
	switch a.fn {
	case "count", "sum", "avg", "min", "max", "dcount", "percentile":
	default:
		if n, ok := strings.CutPrefix(a.fn, "p"); ok {
			if v, err := strconv.Atoi(n); err == nil && v >= 1 && v <= 99 && n == strconv.Itoa(v) {
				a.fn, a.pct = "percentile", float64(v)
				break
			}
		}
		if a.pct == 0 {
			e := errAt(fn.pos, "unknown aggregate %q", fn.text)
			if h := didYouMean(fn.text, aggNames); h != "" {
				e.hint("%s", h)
			} else {
				e.hint("aggregates: count, sum, avg, min, max, dcount, p1…p99, percentile(x, rank)")
			}
			return a, e
		}
	}
	if err := p.expectPunct("(", "after "+fn.text); err != nil {
		return a, err
	}
	if p.isPunct(")") {
		if a.fn != "count" {
			return a, errAt(p.peek().pos, "%s needs an argument", fn.text)
		}
	} else {
		stop := stopAt()
		if a.fn == "percentile" && a.pct == 0 {
			stop = stopAt(",")
		}
		start, end, err := p.exprUntil("an argument", stop)
		if err != nil {
			return a, err
		}
		if a.arg, err = compileExpr(p.src, start, end, in); err != nil {
			return a, err
		}
		p.noteRefs(pipe, a.arg)
		if a.fn == "percentile" && a.pct == 0 {
			if err := p.expectPunct(",", "before the percentile's rank"); err != nil {
				return a, err
			}
			t := p.peek()
			v, err := strconv.ParseFloat(t.text, 64)
			if t.kind != tokNumber || err != nil || v <= 0 || v > 100 {
				return a, errAt(t.pos, "expected a rank above 0 and at most 100, found %s", describe(t))
			}
			p.next()
			a.pct = v
		}
	}
	if err := p.expectPunct(")", "to close "+fn.text+"("); err != nil {
		return a, err
	}
	if p.isWord("as") {
		p.next()
		t, err := p.ident("a column name after as")
		if err != nil {
			return a, err
		}
		a.name = t.text
	}
	if a.name == "" {
		a.name = defaultAggName(a, fn.text)
	}
	return a, nil
}

// defaultAggName is "count", or the function and its field: sum_bytes,
// p99_latency_ms.
func defaultAggName(a aggSpec, written string) string {
	fn := strings.ToLower(written)
	if a.fn == "percentile" && fn == "percentile" {
		fn = "p" + strconv.FormatFloat(a.pct, 'f', -1, 64)
	}
	if a.arg == nil {
		return fn
	}
	if a.arg.ident != "" {
		return fn + "_" + a.arg.ident
	}
	return fn
}

// statsStage groups rows by its keys and computes its aggregates per
// group. Groups come out in the order their first row came in.
type statsStage struct {
	aggs      []aggSpec
	keyNames  []string
	keys      []*expression
	maxGroups int
	maxValues int
}

type statsSink struct {
	st     *statsStage
	next   sink
	env    *runEnv
	groups map[string]*group
	order  []*group
	values int // values held by percentiles and dcounts
}

type group struct {
	keys []any
	accs []accumulator
}

type accumulator struct {
	n      int64
	sum    float64
	best   any
	vals   []float64
	seen   map[string]struct{}
	sorted bool
}

func (st *statsStage) sink(env *runEnv, next sink) (sink, error) {
	s := &statsSink{st: st, next: next, env: env, groups: map[string]*group{}}
	// A continuous query has one stats, which emits windows as they
	// close.
	if env.follow != nil && env.follow.stats == nil {
		env.follow.stats = s
	}
	return s, nil
}

func (s *statsSink) push(r Row) error {
	keys := make([]any, len(s.st.keys))
	var kb strings.Builder
	for i, k := range s.st.keys {
		v, err := k.eval(r)
		if err != nil {
			s.env.evalError("stats by", k, err)
			v = nil
		}
		keys[i] = v
		kb.WriteString(keyString(v))
		kb.WriteByte(0)
	}
	g := s.groups[kb.String()]
	if g == nil {
		if len(s.groups) >= s.st.maxGroups {
			return fmt.Errorf("%w: stats has more than %d groups (query.limits.max_groups); group by fewer or coarser keys, or filter first", ErrLimit, s.st.maxGroups)
		}
		g = &group{keys: keys, accs: make([]accumulator, len(s.st.aggs))}
		s.groups[kb.String()] = g
		s.order = append(s.order, g)
	}
	for i := range s.st.aggs {
		if err := s.add(&s.st.aggs[i], &g.accs[i], r); err != nil {
			return err
		}
	}
	return nil
}

func (s *statsSink) add(a *aggSpec, acc *accumulator, r Row) error {
	if a.arg == nil { // count()
		acc.n++
		return nil
	}
	v, err := a.arg.eval(r)
	if err != nil {
		s.env.evalError(a.fn, a.arg, err)
		return nil
	}
	if v == nil {
		return nil
	}
	switch a.fn {
	case "count":
		acc.n++
	case "sum", "avg":
		if f, ok := toFloat(v); ok {
			acc.sum += f
			acc.n++
		}
	case "min", "max":
		if acc.best == nil {
			acc.best = v
			return nil
		}
		c, ok := compareValues(v, acc.best)
		if ok && (a.fn == "min" && c < 0 || a.fn == "max" && c > 0) {
			acc.best = v
		}
	case "percentile":
		f, ok := toFloat(v)
		if !ok {
			return nil
		}
		if s.values >= s.st.maxValues {
			return s.valuesLimit()
		}
		s.values++
		acc.vals = append(acc.vals, f)
	case "dcount":
		k := keyString(v)
		if _, ok := acc.seen[k]; ok {
			return nil
		}
		if s.values >= s.st.maxValues {
			return s.valuesLimit()
		}
		s.values++
		if acc.seen == nil {
			acc.seen = map[string]struct{}{}
		}
		acc.seen[k] = struct{}{}
	}
	return nil
}

func (s *statsSink) valuesLimit() error {
	return fmt.Errorf("%w: stats keeps more than %d values for percentiles and dcount (query.limits.max_values); filter first or group by fewer keys", ErrLimit, s.st.maxValues)
}

func (s *statsSink) done() error {
	// A stats over no rows and no keys still answers one row (count 0),
	// as SQL's aggregate without GROUP BY does.
	if len(s.order) == 0 && len(s.st.keys) == 0 {
		s.order = append(s.order, &group{accs: make([]accumulator, len(s.st.aggs))})
	}
	for _, g := range s.order {
		if err := s.next.push(s.row(g)); err != nil {
			return err
		}
	}
	return s.next.done()
}

func (s *statsSink) row(g *group) Row {
	r := make(Row, len(s.st.keyNames)+len(s.st.aggs))
	for i, n := range s.st.keyNames {
		r[n] = g.keys[i]
	}
	for i, a := range s.st.aggs {
		r[a.name] = result(&a, &g.accs[i])
	}
	return r
}

func result(a *aggSpec, acc *accumulator) any {
	switch a.fn {
	case "count":
		return float64(acc.n)
	case "sum":
		return acc.sum
	case "avg":
		if acc.n == 0 {
			return nil
		}
		return acc.sum / float64(acc.n)
	case "min", "max":
		return acc.best
	case "dcount":
		return float64(len(acc.seen))
	case "percentile":
		return percentile(acc.vals, a.pct)
	}
	return nil
}

// percentile is the nearest-rank percentile: the smallest value with at
// least pct% of the values at or below it.
func percentile(vals []float64, pct float64) any {
	if len(vals) == 0 {
		return nil
	}
	sort.Float64s(vals)
	// The small epsilon keeps 90% of 10 at rank 9 despite float rounding.
	rank := int(math.Ceil(pct*float64(len(vals))/100 - 1e-9))
	return vals[min(max(rank, 1), len(vals))-1]
}
