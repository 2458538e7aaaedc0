package query

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token. The pipe language needs few
// kinds: expression text is handed to expr as a source span, so the lexer
// only has to find where an expression ends (a '|', ',' or keyword at
// bracket depth 0), not understand it.
type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokNumber // digits with an optional fraction and unit suffix: 10, 1.5, 30s, 1h
	tokString // "…", '…' or `…` (raw)
	tokPunct  // operators and brackets
	tokParam  // $name: a packaged query's parameter, replaced by Bind
)

type token struct {
	kind tokKind
	text string // the source text of the token
	pos  int    // byte offset of its first character
	end  int    // byte offset just past it
}

// punct lists the multi-character operators first, so that "||" is not
// read as two pipes and "==" not as an assignment.
var punct = []string{"||", "&&", "==", "!=", "<=", ">=", "??", "?.", "..", "|", "(", ")", "[", "]", "{", "}",
	",", "=", "<", ">", "+", "-", "*", "/", "%", "!", ".", "?", ":", "^", "#", "~"}

// lex splits src into tokens. A character that starts no token is an
// error at its position.
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		r, w := utf8.DecodeRuneInString(src[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case r == '/' && strings.HasPrefix(src[i:], "//"):
			// A comment runs to the end of the line.
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(src) {
				r, w := utf8.DecodeRuneInString(src[j:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				j += w
			}
			toks = append(toks, token{kind: tokIdent, text: src[i:j], pos: i, end: j})
			i = j
		case r >= '0' && r <= '9':
			j := i
			for j < len(src) && (isDigit(src[j]) || src[j] == '.' && j+1 < len(src) && isDigit(src[j+1])) {
				j++
			}
			for j < len(src) && (src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] == '_' || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tokNumber, text: src[i:j], pos: i, end: j})
			i = j
		case r == '$' && i+1 < len(src) && (src[i+1] == '_' || src[i+1] >= 'a' && src[i+1] <= 'z' || src[i+1] >= 'A' && src[i+1] <= 'Z'):
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tokParam, text: src[i:j], pos: i, end: j})
			i = j
		case r == '"' || r == '\'' || r == '`':
			j := i + 1
			for j < len(src) && rune(src[j]) != r {
				if src[j] == '\\' && r != '`' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, errAt(i, "unterminated string")
			}
			toks = append(toks, token{kind: tokString, text: src[i : j+1], pos: i, end: j + 1})
			i = j + 1
		default:
			p := ""
			for _, c := range punct {
				if strings.HasPrefix(src[i:], c) {
					p = c
					break
				}
			}
			if p == "" {
				return nil, errAt(i, "unexpected character %q", r)
			}
			toks = append(toks, token{kind: tokPunct, text: p, pos: i, end: i + len(p)})
			i += len(p)
		}
	}
	toks = append(toks, token{kind: tokEOF, pos: len(src), end: len(src)})
	return toks, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// unquote returns the value of a string token.
func unquote(t token) (string, error) {
	switch t.text[0] {
	case '`':
		return t.text[1 : len(t.text)-1], nil
	case '\'':
		// Single-quoted strings use Go's double-quoted escapes.
		body := t.text[1 : len(t.text)-1]
		body = strings.ReplaceAll(body, `\'`, `'`)
		body = strings.ReplaceAll(body, `"`, `\"`)
		return strconv.Unquote(`"` + body + `"`)
	}
	return strconv.Unquote(t.text)
}
