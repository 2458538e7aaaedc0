package introspect

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// The writer encodes every event; encoding/json's reflection cost about
// 2.7 µs an event, a few percent of a core at thousands of requests a
// second on the machine serving them. appendEvent writes the same JSON
// (field names, order and omissions of Event's tags) without reflection.
// Metric snapshots, rare and holding a map, still go through
// encoding/json. TestAppendEventMatchesEncodingJSON keeps the two equal.

// encode returns e as one JSON line's bytes (without the newline).
func encode(buf []byte, e *Event) ([]byte, error) {
	if e.Metrics != nil {
		b, err := json.Marshal(e)
		return append(buf, b...), err
	}
	return appendEvent(buf, e), nil
}

func appendEvent(b []byte, e *Event) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendStr(b, "kind", e.Kind, false)
	b = appendStr(b, "head", e.Head, true)
	b = appendStr(b, "node", e.Node, true)
	b = appendStr(b, "principal", e.Principal, true)
	b = appendStr(b, "tenant", e.Tenant, true)
	b = appendStr(b, "stream", e.Stream, true)
	b = appendStr(b, "operation", e.Operation, true)
	b = appendInt(b, "status", int64(e.Status))
	b = appendStr(b, "class", e.Class, true)
	b = appendInt(b, "bytes", e.Bytes)
	b = appendFloat(b, "latency_ms", e.LatencyMS)
	b = appendStr(b, "client", e.Client, true)
	b = appendStr(b, "action", e.Action, true)
	b = appendStr(b, "reason", e.Reason, true)
	b = appendStr(b, "segment", e.Segment, true)
	b = appendStr(b, "outcome", e.Outcome, true)
	if e.FirstOffset != 0 {
		b = append(b, `,"first_offset":`...)
		b = strconv.AppendUint(b, e.FirstOffset, 10)
	}
	b = appendInt(b, "events", int64(e.Events))
	b = appendFloat(b, "lag_ms", e.LagMS)
	b = appendStr(b, "error", e.Error, true)
	return append(b, '}')
}

func appendKey(b []byte, k string) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func appendStr(b []byte, k, v string, omitEmpty bool) []byte {
	if v == "" && omitEmpty {
		return b
	}
	return appendQuoted(appendKey(b, k), v)
}

func appendInt(b []byte, k string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(appendKey(b, k), v, 10)
}

// appendFloat formats as encoding/json does: 'f' unless the exponent is
// very small or large. Event's floats are durations, never NaN or ±Inf.
func appendFloat(b []byte, k string, v float64) []byte {
	if v == 0 {
		return b
	}
	b = appendKey(b, k)
	if a := math.Abs(v); a < 1e-6 || a >= 1e21 {
		b = strconv.AppendFloat(b, v, 'e', -1, 64)
		// As encoding/json: e-07 becomes e-7.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
		return b
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

const hexDigits = "0123456789abcdef"

// appendQuoted writes s as a JSON string: quotes, backslashes and control
// characters escaped, invalid UTF-8 replaced by U+FFFD (as encoding/json
// does), and <, >, & escaped as encoding/json does by default, so that
// the two encoders give the same bytes.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are escaped by encoding/json for JavaScript.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
