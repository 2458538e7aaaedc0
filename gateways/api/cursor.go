package api

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A cursor is where a read of a whole stream continues: the next offset of
// every segment. On the wire it is unpadded base64url of
// "<segment>:<offset>,<segment>:<offset>,…" with segment ids sorted and
// query-escaped (so that no id can contain the separators). The format is
// documented (docs/api.md) rather than opaque so that a client can resume
// exactly after the last event it processed, even when its connection
// broke before the server's next cursor arrived. Segments a cursor does
// not name are read from their beginning, so a cursor stays valid when a
// stream gains segments.
type position struct {
	segment string
	next    uint64
}

// cursorEnd, given as cursor= or from=, starts at the current end.
const cursorEnd = "end"

// maxCursorLen bounds what decodeCursor will look at: a stream has at most
// a few hundred segments, each well under 40 characters in a cursor.
const maxCursorLen = 64 << 10

func encodeCursor(pos []position) string {
	sorted := slices.Clone(pos)
	slices.SortFunc(sorted, func(a, b position) int { return strings.Compare(a.segment, b.segment) })
	var sb strings.Builder
	for i, p := range sorted {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(url.QueryEscape(p.segment))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatUint(p.next, 10))
	}
	return base64.RawURLEncoding.EncodeToString([]byte(sb.String()))
}

var errBadCursor = errors.New("malformed cursor")

// decodeCursor parses a cursor made by encodeCursor. Any other input is an
// error wrapping errBadCursor; it never panics.
func decodeCursor(s string) ([]position, error) {
	if s == "" {
		return nil, fmt.Errorf("%w: empty", errBadCursor)
	}
	if len(s) > maxCursorLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", errBadCursor, maxCursorLen)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: not base64url", errBadCursor)
	}
	parts := strings.Split(string(raw), ",")
	out := make([]position, 0, len(parts))
	seen := make(map[string]bool, len(parts))
	for _, part := range parts {
		esc, off, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%w: entry %q has no ':'", errBadCursor, part)
		}
		seg, err := url.QueryUnescape(esc)
		if err != nil || seg == "" {
			return nil, fmt.Errorf("%w: bad segment id %q", errBadCursor, esc)
		}
		if seen[seg] {
			return nil, fmt.Errorf("%w: segment %q appears twice", errBadCursor, seg)
		}
		seen[seg] = true
		if off == "" || off[0] < '0' || off[0] > '9' {
			return nil, fmt.Errorf("%w: bad offset %q", errBadCursor, off)
		}
		n, err := strconv.ParseUint(off, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: bad offset %q", errBadCursor, off)
		}
		out = append(out, position{segment: seg, next: n})
	}
	return out, nil
}
