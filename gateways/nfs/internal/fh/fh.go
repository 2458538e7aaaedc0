// Package fh encodes NFSv3 file handles that need no server-side state: a
// handle carries the export it belongs to and the path of the entry below
// the export's root, and is authenticated with a truncated HMAC-SHA256, so
// a handle survives a restart of the server (same key) and a client cannot
// forge one for a path it was never given.
//
// Layout (all handles are a multiple of 4 bytes long, because go-nfs does
// not skip XDR padding after a handle in some procedures):
//
//	version  1 byte  (Version)
//	export   1 byte  index of the export in the server's list
//	length   1 byte  of the encoded path
//	path     length bytes (see below)
//	padding  zero bytes up to the MAC's 4-byte boundary
//	mac      8 bytes HMAC-SHA256(key, export id || everything before the mac)
//
// The MAC also covers an export identity string (its path and principal),
// so reordering or rebinding exports in the config invalidates old handles
// instead of letting them act as a different principal.
//
// Paths are encoded element by element, separated by a 0x00 token. Inside
// an element, printable ASCII stands for itself; a run of decimal digits
// becomes a number token (0x80|width, then the value as a uvarint), which
// packs silt's zero-padded 20-digit chunk offsets into a few bytes; the
// segment prefix and the manifest name have one-byte tokens; any other
// byte is escaped. This keeps handles of real chunk paths far below the
// 64-byte NFSv3 limit without a table of paths.
package fh

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
)

// Version is the first byte of every handle; bump it when the layout
// changes so that old handles read as stale rather than as other paths.
const Version = 1

// MaxSize is the NFSv3 limit on a file handle.
const MaxSize = 64

const (
	headerLen = 3
	macLen    = 8
	// MaxPath is the longest encoded path that fits.
	MaxPath = MaxSize - headerLen - macLen
)

// Errors of the package.
var (
	ErrTooLong = errors.New("fh: path does not fit in a file handle")
	ErrInvalid = errors.New("fh: invalid file handle")
)

// tokens
const (
	tokEnd      = 0x00 // end of an element
	tokEscape   = 0x01 // next byte is literal
	tokSegment  = 0x02 // "segment="
	tokManifest = 0x03 // "_manifest.json"
	tokNumber   = 0x80 // | width (1..20); a uvarint follows
	maxWidth    = 20
	minNumRun   = 3 // shorter digit runs are cheaper as literals
)

// Codec makes and checks handles with one key.
type Codec struct{ key []byte }

// New returns a Codec for key, which must be at least 16 bytes.
func New(key []byte) (*Codec, error) {
	if len(key) < 16 {
		return nil, errors.New("fh: handle key must be at least 16 bytes")
	}
	return &Codec{key: append([]byte(nil), key...)}, nil
}

// Encode returns the handle of path (its elements below the export root)
// in export number exp, whose identity string is id.
func (c *Codec) Encode(exp int, id string, path []string) ([]byte, error) {
	if exp < 0 || exp > 255 {
		return nil, errors.New("fh: export index out of range")
	}
	body := make([]byte, 0, MaxPath)
	for i, e := range path {
		if i > 0 {
			body = append(body, tokEnd)
		}
		if e == "" {
			return nil, ErrInvalid
		}
		body = appendElement(body, e)
		if len(body) > MaxPath {
			return nil, ErrTooLong
		}
	}
	n := headerLen + len(body)
	n = (n + 3) &^ 3
	h := make([]byte, n, n+macLen)
	h[0], h[1], h[2] = Version, byte(exp), byte(len(body))
	copy(h[headerLen:], body)
	return append(h, c.mac(id, h)...), nil
}

// Export returns the export index a handle claims, without checking it;
// the caller looks up the export's identity and then calls Decode.
func Export(h []byte) (int, error) {
	if len(h) < headerLen+macLen || len(h) > MaxSize || len(h)%4 != 0 || h[0] != Version {
		return 0, ErrInvalid
	}
	return int(h[1]), nil
}

// Decode checks h against the identity id of the export it names and
// returns the path elements.
func (c *Codec) Decode(id string, h []byte) ([]string, error) {
	if _, err := Export(h); err != nil {
		return nil, err
	}
	body, mac := h[:len(h)-macLen], h[len(h)-macLen:]
	if !hmac.Equal(mac, c.mac(id, body)) {
		return nil, ErrInvalid
	}
	n := int(body[2])
	if headerLen+n > len(body) {
		return nil, ErrInvalid
	}
	for _, b := range body[headerLen+n:] {
		if b != 0 {
			return nil, ErrInvalid
		}
	}
	return decodePath(body[headerLen : headerLen+n])
}

func (c *Codec) mac(id string, b []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(id)))
	m.Write(l[:])
	m.Write([]byte(id))
	m.Write(b)
	return m.Sum(nil)[:macLen]
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func appendElement(dst []byte, e string) []byte {
	if e == "_manifest.json" {
		return append(dst, tokManifest)
	}
	if rest, ok := strings.CutPrefix(e, "segment="); ok {
		dst = append(dst, tokSegment)
		e = rest
	}
	for i := 0; i < len(e); {
		if isDigit(e[i]) {
			j := i
			for j < len(e) && isDigit(e[j]) {
				j++
			}
			if w := j - i; w >= minNumRun && w <= maxWidth {
				if v, err := strconv.ParseUint(e[i:j], 10, 64); err == nil {
					dst = append(dst, tokNumber|byte(w))
					dst = binary.AppendUvarint(dst, v)
					i = j
					continue
				}
			}
			dst = append(dst, e[i:j]...)
			i = j
			continue
		}
		b := e[i]
		if b > 0x20 && b < 0x7f {
			dst = append(dst, b)
		} else {
			dst = append(dst, tokEscape, b)
		}
		i++
	}
	return dst
}

func decodePath(b []byte) ([]string, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var out []string
	var cur []byte
	for i := 0; i < len(b); {
		t := b[i]
		i++
		switch {
		case t == tokEnd:
			if len(cur) == 0 {
				return nil, ErrInvalid
			}
			out = append(out, string(cur))
			cur = cur[:0]
		case t == tokEscape:
			if i == len(b) {
				return nil, ErrInvalid
			}
			cur = append(cur, b[i])
			i++
		case t == tokSegment:
			cur = append(cur, "segment="...)
		case t == tokManifest:
			cur = append(cur, "_manifest.json"...)
		case t&tokNumber != 0:
			w := int(t &^ tokNumber)
			v, n := binary.Uvarint(b[i:])
			if w < minNumRun || w > maxWidth || n <= 0 {
				return nil, ErrInvalid
			}
			i += n
			s := strconv.FormatUint(v, 10)
			if len(s) > w {
				return nil, ErrInvalid
			}
			cur = append(cur, strings.Repeat("0", w-len(s))...)
			cur = append(cur, s...)
		case t > 0x20 && t < 0x7f:
			cur = append(cur, t)
		default:
			return nil, ErrInvalid
		}
	}
	if len(cur) == 0 {
		return nil, ErrInvalid
	}
	return append(out, string(cur)), nil
}
