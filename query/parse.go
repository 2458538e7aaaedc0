package query

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/silt-io/silt/core/names"
)

// operatorNames are the operators, aliases included, for suggestions.
var operatorNames = []string{"where", "filter", "eval", "extend", "project", "stats", "summarize",
	"bin", "window", "sort", "order", "head", "limit", "take", "top", "join", "parse"}

// Parse parses src. lim bounds what the query may hold when it runs (zero
// fields take the defaults). Every error is an *Error.
func Parse(src string, lim Limits) (*Query, error) {
	q, err := parse(src, lim.withDefaults())
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return nil, e.bind(src)
		}
		return nil, err
	}
	return q, nil
}

func parse(src string, lim Limits) (*Query, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	for _, t := range toks {
		if t.kind == tokParam {
			return nil, errAt(t.pos, "parameter %s has no value", t.text).hint("parameters belong to packaged queries, which are run by name with their values")
		}
	}
	p := &parser{src: src, toks: toks, lim: lim}
	pipe, err := p.pipeline()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, errAt(t.pos, "unexpected %s after the query", describe(t)).hint("operators are separated by '|'")
	}
	return &Query{src: src, pipe: pipe}, nil
}

type parser struct {
	src  string
	toks []token
	i    int
	lim  Limits
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isWord(w string) bool {
	t := p.peek()
	return t.kind == tokIdent && strings.EqualFold(t.text, w)
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tokPunct && t.text == s
}

func (p *parser) expectPunct(s, what string) error {
	if !p.isPunct(s) {
		t := p.peek()
		return errAt(t.pos, "expected %q %s, found %s", s, what, describe(t))
	}
	p.next()
	return nil
}

func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "the end of the query"
	case tokString:
		return "string " + t.text
	case tokNumber:
		return "number " + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// ident reads a name (a field or an output column).
func (p *parser) ident(what string) (token, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return t, errAt(t.pos, "expected %s, found %s", what, describe(t))
	}
	return p.next(), nil
}

// pipeline parses `from … | op | op …` up to the end or a ')' that closes
// a join's right side.
func (p *parser) pipeline() (*pipeline, error) {
	t := p.peek()
	if t.kind != tokIdent || !strings.EqualFold(t.text, "from") {
		e := errAt(t.pos, "a query starts with from, found %s", describe(t))
		if t.kind == tokIdent && suggest(t.text, []string{"from"}) != "" {
			e.hint(`did you mean "from"?`)
		} else {
			e.hint("for example: from tenant/stream | where …")
		}
		return nil, e
	}
	p.next()
	pipe := &pipeline{out: schema{open: true, cols: append([]string(nil), eventFields...)}}
	if err := p.from(&pipe.from); err != nil {
		return nil, err
	}
	for p.isPunct("|") {
		p.next()
		st, err := p.operator(pipe)
		if err != nil {
			return nil, err
		}
		pipe.stages = append(pipe.stages, st)
	}
	t = p.peek()
	if t.kind != tokEOF && !(t.kind == tokPunct && t.text == ")") {
		return nil, errAt(t.pos, "unexpected %s", describe(t)).hint("operators are separated by '|'")
	}
	return pipe, nil
}

func (p *parser) from(f *fromClause) error {
	for {
		s, err := p.streamRef()
		if err != nil {
			return err
		}
		for {
			switch {
			case p.isWord("cut"):
				p.next()
				if s.cut, err = p.cut(); err != nil {
					return err
				}
				continue
			case p.isWord("upto"):
				p.next()
				if s.upto, err = p.cut(); err != nil {
					return err
				}
				continue
			}
			break
		}
		f.streams = append(f.streams, s)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	for {
		switch {
		case p.isWord("since"):
			t := p.next()
			if f.since != nil {
				return errAt(t.pos, "since given twice")
			}
			b, err := p.timeBound()
			if err != nil {
				return err
			}
			f.since = b
		case p.isWord("until"):
			t := p.next()
			if f.until != nil {
				return errAt(t.pos, "until given twice")
			}
			b, err := p.timeBound()
			if err != nil {
				return err
			}
			f.until = b
		default:
			return nil
		}
	}
}

// streamRef reads tenant/stream. The lexer splits it at '/', '-' and
// '.', so the pieces are joined while they touch.
func (p *parser) streamRef() (streamSpec, error) {
	start := p.peek()
	if start.kind != tokIdent && start.kind != tokNumber {
		return streamSpec{}, errAt(start.pos, "expected a stream as tenant/stream, found %s", describe(start))
	}
	end := start.end
	p.next()
	for {
		t := p.peek()
		if t.pos != end || !(t.kind == tokIdent || t.kind == tokNumber || t.kind == tokPunct && strings.Contains("/-._", t.text)) {
			break
		}
		end = t.end
		p.next()
	}
	text := p.src[start.pos:end]
	tenant, stream, ok := strings.Cut(text, "/")
	if !ok {
		return streamSpec{}, errAt(start.pos, "stream %q: want tenant/stream", text)
	}
	if err := names.Tenant(tenant); err != nil {
		return streamSpec{}, errAt(start.pos, "%v", err)
	}
	if err := names.Stream(stream); err != nil {
		return streamSpec{}, errAt(start.pos+len(tenant)+1, "%v", err)
	}
	return streamSpec{StreamRef: StreamRef{Tenant: tenant, Stream: stream}, pos: start.pos}, nil
}

// cut reads a stream cut, "segment:offset,segment:offset".
func (p *parser) cut() (map[string]uint64, error) {
	t := p.peek()
	if t.kind != tokString {
		return nil, errAt(t.pos, "expected a stream cut as a string \"segment:offset,…\", found %s", describe(t))
	}
	p.next()
	v, err := unquote(t)
	if err != nil {
		return nil, errAt(t.pos, "bad string: %v", err)
	}
	out := map[string]uint64{}
	for _, part := range strings.Split(v, ",") {
		seg, off, ok := strings.Cut(strings.TrimSpace(part), ":")
		n, err := strconv.ParseUint(off, 10, 64)
		if !ok || seg == "" || err != nil {
			return nil, errAt(t.pos, "stream cut part %q: want segment:offset", part)
		}
		out[seg] = n
	}
	return out, nil
}

// timeBound reads -1h, 30m (both before now), or a quoted RFC 3339 time.
func (p *parser) timeBound() (*timeBound, error) {
	t := p.peek()
	if t.kind == tokString {
		p.next()
		v, err := unquote(t)
		if err == nil {
			var at time.Time
			if at, err = time.Parse(time.RFC3339Nano, v); err == nil {
				return &timeBound{abs: at}, nil
			}
		}
		return nil, errAt(t.pos, "time %s: want an RFC 3339 time such as \"2026-01-02T15:04:05Z\"", t.text)
	}
	if p.isPunct("-") {
		p.next()
		t = p.peek()
	}
	if t.kind != tokNumber {
		return nil, errAt(t.pos, "expected a duration such as -1h or a quoted time, found %s", describe(t))
	}
	p.next()
	d, err := parseDuration(t.text)
	if err != nil {
		return nil, errAt(t.pos, "%v", err)
	}
	return &timeBound{rel: -d}, nil
}

// parseDuration is time.ParseDuration plus days ("2d").
func parseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if v, err := strconv.ParseFloat(n, 64); err == nil && v > 0 {
			return time.Duration(v * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("duration %q: want a positive number with a unit: ms, s, m, h or d", s)
	}
	return d, nil
}

// exprUntil returns the span of an expression that ends before a token
// at bracket depth 0 for which stop is true, or before '|', an unopened
// ')' or the end.
func (p *parser) exprUntil(what string, stop func(t token) bool) (int, int, error) {
	start := p.peek()
	depth := 0
	end := start.pos
	for {
		t := p.peek()
		if t.kind == tokEOF {
			break
		}
		if t.kind == tokPunct {
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				if depth == 0 {
					goto done
				}
				depth--
			case "|":
				if depth == 0 {
					goto done
				}
			}
		}
		if depth == 0 && stop != nil && stop(t) {
			break
		}
		end = t.end
		p.next()
	}
done:
	if end == start.pos {
		return 0, 0, errAt(start.pos, "expected %s, found %s", what, describe(start))
	}
	return start.pos, end, nil
}

func stopAt(puncts ...string) func(token) bool {
	return func(t token) bool {
		if t.kind == tokIdent {
			for _, w := range puncts {
				if strings.EqualFold(w, t.text) {
					return true
				}
			}
		}
		if t.kind != tokPunct {
			return false
		}
		for _, s := range puncts {
			if t.text == s {
				return true
			}
		}
		return false
	}
}

// assignment reads `name = expr` or a bare expression (named after itself
// when it is a field name).
func (p *parser) assignment(sc schema, stop func(token) bool) (string, *expression, error) {
	name := ""
	if t := p.peek(); t.kind == tokIdent && p.toks[p.i+1].kind == tokPunct && p.toks[p.i+1].text == "=" {
		name = t.text
		p.next()
		p.next()
	}
	start, end, err := p.exprUntil("an expression", stop)
	if err != nil {
		return "", nil, err
	}
	e, err := compileExpr(p.src, start, end, sc)
	if err != nil {
		return "", nil, err
	}
	if name == "" {
		name = e.ident
	}
	if name == "" {
		name = strings.TrimSpace(e.text)
	}
	return name, e, nil
}

// field reads a field name that must exist when the schema is closed.
func (p *parser) field(sc schema, what string) (token, error) {
	t, err := p.ident(what)
	if err != nil {
		return t, err
	}
	if !sc.open && !sc.has(t.text) {
		e := errAt(t.pos, "unknown field %q", t.text)
		if h := didYouMean(t.text, sc.cols); h != "" {
			e.hint("%s", h)
		} else {
			e.hint("the fields here are %v", sc.cols)
		}
		return t, e
	}
	return t, nil
}

func (p *parser) positiveInt(what string) (int, error) {
	t := p.peek()
	n, err := strconv.Atoi(t.text)
	if t.kind != tokNumber || err != nil || n <= 0 {
		return 0, errAt(t.pos, "expected %s (a positive whole number), found %s", what, describe(t))
	}
	p.next()
	return n, nil
}

func (p *parser) noteRefs(pipe *pipeline, e *expression) {
	if !pipe.out.open {
		return
	}
	for _, r := range e.refs {
		if !pipe.out.has(r) {
			pipe.openRefs = append(pipe.openRefs, fieldRef{name: r, pos: e.pos})
		}
	}
}

// operator parses one operator after a '|' and updates pipe.out.
func (p *parser) operator(pipe *pipeline) (stage, error) {
	t := p.peek()
	if t.kind != tokIdent {
		return nil, errAt(t.pos, "expected an operator after '|', found %s", describe(t)).hint("operators: where, eval, project, stats, bin, window, sort, head, top, join, parse")
	}
	p.next()
	switch strings.ToLower(t.text) {
	case "where", "filter":
		start, end, err := p.exprUntil("a condition", nil)
		if err != nil {
			return nil, err
		}
		e, err := compileExpr(p.src, start, end, pipe.out)
		if err != nil {
			return nil, err
		}
		p.noteRefs(pipe, e)
		return &whereStage{cond: e}, nil
	case "eval", "extend":
		st := &evalStage{}
		for {
			name, e, err := p.assignment(pipe.out, stopAt(","))
			if err != nil {
				return nil, err
			}
			p.noteRefs(pipe, e)
			st.names = append(st.names, name)
			st.exprs = append(st.exprs, e)
			pipe.out = pipe.out.with(name)
			if !p.isPunct(",") {
				return st, nil
			}
			p.next()
		}
	case "project":
		st := &projectStage{}
		in := pipe.out
		for {
			name, e, err := p.assignment(in, stopAt(","))
			if err != nil {
				return nil, err
			}
			p.noteRefs(pipe, e)
			if containsStr(st.names, name) {
				return nil, errAt(e.pos, "column %q given twice", name)
			}
			st.names = append(st.names, name)
			st.exprs = append(st.exprs, e)
			if !p.isPunct(",") {
				break
			}
			p.next()
		}
		pipe.out = schema{cols: st.names}
		return st, nil
	case "stats", "summarize":
		return p.stats(pipe)
	case "bin":
		f, err := p.field(pipe.out, "a field to bin")
		if err != nil {
			return nil, err
		}
		span := p.peek()
		if span.kind != tokNumber {
			return nil, errAt(span.pos, "expected a bin size (a number, or a duration such as 1m), found %s", describe(span))
		}
		p.next()
		st := &binStage{field: f.text}
		if n, err := strconv.ParseFloat(span.text, 64); err == nil {
			if n <= 0 {
				return nil, errAt(span.pos, "bin size must be positive")
			}
			st.num = n
		} else if st.dur, err = parseDuration(span.text); err != nil {
			return nil, errAt(span.pos, "%v", err)
		}
		return st, nil
	case "window":
		return p.window(pipe)
	case "sort", "order":
		if p.isWord("by") {
			p.next()
		}
		keys, err := p.sortKeys(pipe.out)
		if err != nil {
			return nil, err
		}
		return &sortStage{keys: keys, limit: p.lim.MaxSortRows}, nil
	case "head", "limit", "take":
		n, err := p.positiveInt("a row count")
		if err != nil {
			return nil, err
		}
		return &headStage{n: n}, nil
	case "top":
		n, err := p.positiveInt("a row count")
		if err != nil {
			return nil, err
		}
		if n > p.lim.MaxSortRows {
			return nil, errAt(t.pos, "top %d is above the limit of %d rows (query.limits.max_sort_rows)", n, p.lim.MaxSortRows)
		}
		if !p.isWord("by") {
			return nil, errAt(p.peek().pos, "expected by after top %d, found %s", n, describe(p.peek())).hint("for example: top 10 by -count")
		}
		p.next()
		keys, err := p.sortKeys(pipe.out)
		if err != nil {
			return nil, err
		}
		return &topStage{n: n, keys: keys}, nil
	case "join":
		return p.join(pipe)
	case "parse":
		return p.parseOp(pipe)
	case "from":
		return nil, errAt(t.pos, "from may only start a query").hint("to read more streams, list them: from a/x, a/y; to combine with another query, use join")
	}
	e := errAt(t.pos, "unknown operator %q", t.text)
	if h := didYouMean(t.text, operatorNames); h != "" {
		e.hint("%s", h)
	} else {
		e.hint("operators: where, eval, project, stats, bin, window, sort, head, top, join, parse")
	}
	return nil, e
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) sortKeys(sc schema) ([]sortKey, error) {
	var keys []sortKey
	for {
		desc := false
		if p.isPunct("-") {
			p.next()
			desc = true
		} else if p.isPunct("+") {
			p.next()
		}
		f, err := p.field(sc, "a field to sort by")
		if err != nil {
			return nil, err
		}
		switch {
		case p.isWord("desc"):
			p.next()
			desc = true
		case p.isWord("asc"):
			p.next()
		}
		keys = append(keys, sortKey{field: f.text, desc: desc})
		if !p.isPunct(",") {
			return keys, nil
		}
		p.next()
	}
}

func (p *parser) window(pipe *pipeline) (stage, error) {
	kind, err := p.ident("tumbling or sliding")
	if err != nil {
		return nil, err
	}
	st := &windowStage{field: FieldTime}
	sizeTok := p.peek()
	readDur := func() (time.Duration, error) {
		t := p.peek()
		if t.kind != tokNumber {
			return 0, errAt(t.pos, "expected a duration such as 5m, found %s", describe(t))
		}
		p.next()
		d, err := parseDuration(t.text)
		if err != nil {
			return 0, errAt(t.pos, "%v", err)
		}
		return d, nil
	}
	switch strings.ToLower(kind.text) {
	case "tumbling":
		if st.size, err = readDur(); err != nil {
			return nil, err
		}
		st.every = st.size
	case "sliding":
		if st.size, err = readDur(); err != nil {
			return nil, err
		}
		if !p.isWord("every") {
			return nil, errAt(p.peek().pos, "expected every after the window size, found %s", describe(p.peek())).hint("for example: window sliding 5m every 1m")
		}
		p.next()
		if st.every, err = readDur(); err != nil {
			return nil, err
		}
		if st.every > st.size {
			return nil, errAt(sizeTok.pos, "a sliding window's step (%v) must not be longer than its size (%v)", st.every, st.size)
		}
		if n := int64(st.size / st.every); n > maxWindowsPerRow {
			return nil, errAt(sizeTok.pos, "a sliding window of %v every %v puts each row in %d windows; at most %d", st.size, st.every, n, maxWindowsPerRow)
		}
	default:
		e := errAt(kind.pos, "unknown window kind %q", kind.text)
		if h := didYouMean(kind.text, []string{"tumbling", "sliding"}); h != "" {
			e.hint("%s", h)
		} else {
			e.hint("want tumbling or sliding")
		}
		return nil, e
	}
	if p.isWord("on") {
		p.next()
		f, err := p.field(pipe.out, "a time field")
		if err != nil {
			return nil, err
		}
		st.field = f.text
	}
	pipe.out = pipe.out.with("window_start", "window_end")
	return st, nil
}

// maxWindowsPerRow bounds how many sliding windows one row may fall in:
// the row is copied into each.
const maxWindowsPerRow = 1000

func (p *parser) join(pipe *pipeline) (stage, error) {
	st := &joinStage{limit: p.lim.MaxJoinRows}
	if p.isWord("kind") {
		p.next()
		if err := p.expectPunct("=", "after kind"); err != nil {
			return nil, err
		}
		k, err := p.ident("inner or left")
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(k.text) {
		case "inner":
		case "left", "leftouter":
			st.left = true
		default:
			return nil, errAt(k.pos, "unknown join kind %q", k.text).hint("want inner or left")
		}
	}
	if err := p.expectPunct("(", "before the right side of the join"); err != nil {
		return nil, err
	}
	right, err := p.pipeline()
	if err != nil {
		return nil, err
	}
	if err := p.expectPunct(")", "after the right side of the join"); err != nil {
		return nil, err
	}
	st.right = right
	if !p.isWord("on") {
		return nil, errAt(p.peek().pos, "expected on after the join's right side, found %s", describe(p.peek())).hint("for example: join (from acme/users) on user")
	}
	p.next()
	for {
		f, err := p.field(pipe.out, "a join key")
		if err != nil {
			return nil, err
		}
		if !right.out.open && !right.out.has(f.text) {
			e := errAt(f.pos, "join key %q is not a field of the right side", f.text)
			if h := didYouMean(f.text, right.out.cols); h != "" {
				e.hint("%s", h)
			}
			return nil, e
		}
		st.keys = append(st.keys, f.text)
		if !p.isPunct(",") {
			break
		}
		p.next()
	}
	if pipe.out.open || right.out.open {
		pipe.out = pipe.out.with(right.out.cols...)
		pipe.out.open = true
	} else {
		pipe.out = pipe.out.with(right.out.cols...)
	}
	return st, nil
}

func (p *parser) parseOp(pipe *pipeline) (stage, error) {
	kind, err := p.ident("json or regex")
	if err != nil {
		return nil, err
	}
	st := &parseStage{field: FieldRaw}
	switch strings.ToLower(kind.text) {
	case "json":
		if p.peek().kind == tokIdent {
			f, err := p.field(pipe.out, "a field")
			if err != nil {
				return nil, err
			}
			st.field = f.text
		}
		st.json = true
		pipe.out.open = true
	case "regex":
		if p.peek().kind == tokIdent {
			f, err := p.field(pipe.out, "a field")
			if err != nil {
				return nil, err
			}
			st.field = f.text
		}
		t := p.peek()
		if t.kind != tokString {
			return nil, errAt(t.pos, "expected a regular expression as a string, found %s", describe(t)).hint("for example: parse regex msg `user=(?P<user>\\w+)`")
		}
		p.next()
		v, err := unquote(t)
		if err != nil {
			return nil, errAt(t.pos, "bad string: %v", err)
		}
		if st.re, err = compileRegex(v); err != nil {
			return nil, errAt(t.pos, "%v", err)
		}
		var groups []string
		for _, n := range st.re.SubexpNames() {
			if n != "" {
				groups = append(groups, n)
			}
		}
		if len(groups) == 0 {
			return nil, errAt(t.pos, "the regular expression has no named group; name what to extract with (?P<name>…)")
		}
		pipe.out = pipe.out.with(groups...)
	default:
		e := errAt(kind.pos, "unknown parse kind %q", kind.text)
		if h := didYouMean(kind.text, []string{"json", "regex"}); h != "" {
			e.hint("%s", h)
		} else {
			e.hint("want json or regex")
		}
		return nil, e
	}
	return st, nil
}
