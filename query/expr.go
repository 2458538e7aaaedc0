package query

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/file"
	exprparser "github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// expression is one compiled expr program and where its text is in the
// query, for errors at run time.
type expression struct {
	text string
	pos  int
	prog *vm.Program
	// ident is set when the whole expression is one field name, which
	// then also names the column it makes (by keys, sort keys).
	ident string
	refs  []string // field names the expression reads
}

// builtinNames are the functions expressions may call: expr's builtins,
// which are pure. The environment holds no functions, so nothing else is
// callable.
var builtinNames = func() []string {
	var out []string
	for _, f := range builtin.Builtins {
		if !disabledBuiltins[f.Name] {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}()

// disabledBuiltins are builtins a query may not call: repeat bounds its
// count but not the length of its result (a string of a million
// characters repeated a million times), so one row could take the
// server's memory. expr's own budget covers the other builtins.
var disabledBuiltins = map[string]bool{"repeat": true}

var compileOptions = func() []expr.Option {
	opts := []expr.Option{expr.Env(map[string]any{}), expr.AllowUndefinedVariables()}
	for name := range disabledBuiltins {
		opts = append(opts, expr.DisableBuiltin(name))
	}
	return opts
}()

// compileExpr compiles src[start:end] against the schema sc: a call of a
// function that does not exist, or (when sc is closed) a field that does
// not exist, is an Error at its position with the nearest name.
func compileExpr(src string, start, end int, sc schema) (*expression, error) {
	text := src[start:end]
	tree, err := exprparser.Parse(text)
	if err != nil {
		return nil, exprError(text, start, err)
	}
	e := &expression{text: text, pos: start}
	if id, ok := tree.Node.(*ast.IdentifierNode); ok {
		e.ident = id.Value
	}
	v := &refVisitor{declared: map[string]bool{}}
	ast.Walk(&tree.Node, v)
	if v.err != nil {
		return nil, offsetError(text, start, v.errAt, v.err)
	}
	for _, r := range v.refs {
		if v.declared[r.name] {
			continue
		}
		if !sc.open && !sc.has(r.name) {
			eh := errAt(runeToByte(text, r.at)+start, "unknown field %q", r.name)
			if h := didYouMean(r.name, sc.cols); h != "" {
				eh.hint("%s", h)
			} else {
				eh.hint("the fields here are %v", sc.cols)
			}
			return nil, eh
		}
		e.refs = append(e.refs, r.name)
	}
	prog, err := expr.Compile(text, compileOptions...)
	if err != nil {
		return nil, exprError(text, start, err)
	}
	e.prog = prog
	return e, nil
}

// eval runs e over row.
func (e *expression) eval(row Row) (any, error) {
	return expr.Run(e.prog, row)
}

type identRef struct {
	name string
	at   int // rune offset in the expression text
}

// refVisitor collects the fields an expression reads and refuses calls of
// functions that are not builtins (expr parses a builtin's call as a
// BuiltinNode, so a CallNode of a bare name is a call of something else).
type refVisitor struct {
	refs     []identRef
	declared map[string]bool // let-bound names
	err      error
	errAt    int
}

func (v *refVisitor) Visit(n *ast.Node) {
	if v.err != nil {
		return
	}
	switch x := (*n).(type) {
	case *ast.VariableDeclaratorNode:
		v.declared[x.Name] = true
	case *ast.BuiltinNode:
		if disabledBuiltins[x.Name] {
			v.err = fmt.Errorf("unknown function %q; see docs/query.md for the functions expressions may call", x.Name)
			v.errAt = x.Location().From
		}
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			hint := didYouMean(id.Value, builtinNames)
			if hint == "" {
				hint = "see docs/query.md for the functions expressions may call"
			}
			v.err = fmt.Errorf("unknown function %q; %s", id.Value, hint)
			v.errAt = id.Location().From
			return
		}
	case *ast.IdentifierNode:
		v.refs = append(v.refs, identRef{name: x.Value, at: x.Location().From})
	}
}

// exprError turns expr's error into an Error at its place in the query.
func exprError(text string, start int, err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		e := &Error{Msg: fe.Message, offset: start + runeToByte(text, fe.From)}
		if strings.Contains(fe.Message, "unexpected token EOF") {
			e.Msg = "the expression ends too early"
			e.Hint = "an operand or a closing bracket is missing"
		}
		return e
	}
	return &Error{Msg: err.Error(), offset: start}
}

func offsetError(text string, start, at int, err error) error {
	e := &Error{offset: start + runeToByte(text, at)}
	msg := err.Error()
	// Split "what; hint" so that the hint is its own field.
	for i := 0; i+1 < len(msg); i++ {
		if msg[i] == ';' && msg[i+1] == ' ' {
			e.Msg, e.Hint = msg[:i], msg[i+2:]
			return e
		}
	}
	e.Msg = msg
	return e
}

func runeToByte(s string, runes int) int {
	n := 0
	for i := range s {
		if n == runes {
			return i
		}
		n++
	}
	return len(s)
}
