package query

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ErrLimit is wrapped by errors that stop a query because it reached one
// of its configured memory bounds (Limits); the message names the limit.
var ErrLimit = errors.New("query: limit reached")

// Error is a mistake in a query's text: where it is and, when the mistake
// looks like a misspelling, the nearest name that exists.
type Error struct {
	Line, Column int    // 1-based; the column counts characters
	Msg          string // what is wrong
	Hint         string // "did you mean …?" or another way out; may be empty
	// Snippet is the query line holding the error and a caret under it.
	Snippet string
	offset  int
}

func (e *Error) Error() string {
	if e.Snippet == "" {
		return e.Summary()
	}
	return e.Summary() + "\n" + e.Snippet
}

// Summary is the error on one line: position, message and hint.
func (e *Error) Summary() string {
	s := fmt.Sprintf("%d:%d: %s", e.Line, e.Column, e.Msg)
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// errAt builds an Error at a byte offset; bind fills in line, column and
// snippet once the source is known.
func errAt(offset int, format string, args ...any) *Error {
	return &Error{Msg: fmt.Sprintf(format, args...), offset: offset}
}

func (e *Error) hint(format string, args ...any) *Error {
	e.Hint = fmt.Sprintf(format, args...)
	return e
}

// bind sets the position of e within src.
func (e *Error) bind(src string) *Error {
	off := min(max(e.offset, 0), len(src))
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	lineEnd := strings.IndexByte(src[off:], '\n')
	if lineEnd < 0 {
		lineEnd = len(src)
	} else {
		lineEnd += off
	}
	e.Line = strings.Count(src[:off], "\n") + 1
	col := utf8.RuneCountInString(src[lineStart:off])
	e.Column = col + 1
	line := strings.ReplaceAll(src[lineStart:lineEnd], "\t", " ")
	e.Snippet = "  " + line + "\n  " + strings.Repeat(" ", col) + "^"
	return e
}

// suggest returns the candidate nearest to name by edit distance, if it is
// near enough to be a likely misspelling.
func suggest(name string, candidates []string) string {
	best, bestD := "", 0
	for _, c := range candidates {
		if c == name {
			continue
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(c))
		if best == "" || d < bestD {
			best, bestD = c, d
		}
	}
	// Allow about one edit in three characters, and at least one.
	if best == "" || bestD > max(1, utf8.RuneCountInString(name)/3) {
		return ""
	}
	return best
}

// didYouMean is suggest phrased as a hint, or "" without a candidate.
func didYouMean(name string, candidates []string) string {
	if s := suggest(name, candidates); s != "" {
		return fmt.Sprintf("did you mean %q?", s)
	}
	return ""
}

// editDistance is the edit distance between a and b over runes, counting
// a swap of two neighbours as one edit ("form" is one edit from "from"):
// the optimal string alignment distance.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
