package webhdfs

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Hadoop's delegation tokens travel as the URL-safe base64 of a Writable
// (org.apache.hadoop.security.token.Token.encodeToUrlString). The
// encodings below are those of Hadoop's WritableUtils and Text, so that
// Hadoop's Token.decodeFromUrlString and decodeIdentifier read what silt
// issues, and silt reads what Hadoop sends back.

// The token kinds a NameNode issues over WebHDFS, by scheme: Hadoop's
// client selects the token for a filesystem by kind and service.
const (
	kindWebHDFS  = "WEBHDFS delegation"
	kindSWebHDFS = "SWEBHDFS delegation"
)

// maxTokenURLLen bounds a token before it is decoded. Real tokens are
// around 150 characters; this leaves room for long names.
const maxTokenURLLen = 4096

var errMalformedToken = errors.New("malformed delegation token")

// hadoopToken is a decoded org.apache.hadoop.security.token.Token.
type hadoopToken struct {
	identifier []byte
	password   []byte
	kind       string
	service    string
}

// tokenIdent is an AbstractDelegationTokenIdentifier: the fields HDFS's
// DelegationTokenIdentifier writes, in its order.
type tokenIdent struct {
	owner, renewer, realUser string
	issueDate, maxDate       int64 // Unix milliseconds
	sequence                 int32
	masterKeyID              int32
}

// identVersion is AbstractDelegationTokenIdentifier.VERSION.
const identVersion = 0

type writer struct{ b []byte }

// vlong is WritableUtils.writeVLong: one byte for -112..127, otherwise a
// length byte (negative, encoding sign and size) and big-endian bytes.
func (w *writer) vlong(i int64) {
	if i >= -112 && i <= 127 {
		w.b = append(w.b, byte(i))
		return
	}
	l := int64(-112)
	if i < 0 {
		i ^= -1
		l = -120
	}
	for t := i; t != 0; t >>= 8 {
		l--
	}
	w.b = append(w.b, byte(l))
	n := -(l + 112)
	if l < -120 {
		n = -(l + 120)
	}
	for idx := n; idx != 0; idx-- {
		w.b = append(w.b, byte(i>>((idx-1)*8)))
	}
}

func (w *writer) bytes(b []byte) {
	w.vlong(int64(len(b)))
	w.b = append(w.b, b...)
}

func (w *writer) text(s string) { w.bytes([]byte(s)) }

type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errMalformedToken
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// vlong is WritableUtils.readVLong.
func (r *reader) vlong() int64 {
	first := int8(r.byte())
	if r.err != nil {
		return 0
	}
	if first >= -112 {
		return int64(first)
	}
	n := int(-111 - int(first))
	if first < -120 {
		n = int(-119 - int(first))
	}
	var i int64
	for range n - 1 {
		i = i<<8 | int64(r.byte())
	}
	if first < -120 {
		i ^= -1
	}
	return i
}

// vint is WritableUtils.readVInt, which refuses values outside int32.
func (r *reader) vint() int32 {
	v := r.vlong()
	if v < -1<<31 || v > 1<<31-1 {
		r.err = errMalformedToken
		return 0
	}
	return int32(v)
}

func (r *reader) bytes(max int) []byte {
	n := r.vint()
	if r.err != nil {
		return nil
	}
	if n < 0 || int(n) > max || int(n) > len(r.b) {
		r.err = errMalformedToken
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

func (r *reader) text() string {
	b := r.bytes(maxTokenURLLen)
	if r.err == nil && !utf8.Valid(b) {
		r.err = errMalformedToken
	}
	return string(b)
}

func (t hadoopToken) encode() string {
	var w writer
	w.bytes(t.identifier)
	w.bytes(t.password)
	w.text(t.kind)
	w.text(t.service)
	return base64.RawURLEncoding.EncodeToString(w.b)
}

// decodeToken reads a token as Token.decodeFromUrlString does; like
// Hadoop's decoder it takes either base64 alphabet, padded or not.
func decodeToken(s string) (hadoopToken, error) {
	if s == "" || len(s) > maxTokenURLLen {
		return hadoopToken{}, errMalformedToken
	}
	s = strings.TrimRight(s, "=")
	s = strings.NewReplacer("+", "-", "/", "_").Replace(s)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return hadoopToken{}, errMalformedToken
	}
	r := &reader{b: raw}
	t := hadoopToken{identifier: r.bytes(len(raw)), password: r.bytes(len(raw)), kind: r.text(), service: r.text()}
	if r.err != nil || len(r.b) != 0 {
		return hadoopToken{}, errMalformedToken
	}
	return t, nil
}

func (id tokenIdent) encode() []byte {
	w := writer{b: []byte{identVersion}}
	w.text(id.owner)
	w.text(id.renewer)
	w.text(id.realUser)
	w.vlong(id.issueDate)
	w.vlong(id.maxDate)
	w.vlong(int64(id.sequence))
	w.vlong(int64(id.masterKeyID))
	return w.b
}

func decodeIdent(b []byte) (tokenIdent, error) {
	r := &reader{b: b}
	if v := r.byte(); r.err == nil && v != identVersion {
		return tokenIdent{}, fmt.Errorf("%w: unknown identifier version %d", errMalformedToken, v)
	}
	id := tokenIdent{owner: r.text(), renewer: r.text(), realUser: r.text(),
		issueDate: r.vlong(), maxDate: r.vlong(), sequence: r.vint(), masterKeyID: r.vint()}
	if r.err != nil || len(r.b) != 0 {
		return tokenIdent{}, errMalformedToken
	}
	return id, nil
}

// String names the token as HDFS's DelegationTokenIdentifier.toString
// does, for messages.
func (id tokenIdent) String() string {
	return fmt.Sprintf("token %d for %s with renewer %s", id.sequence, id.owner, id.renewer)
}
