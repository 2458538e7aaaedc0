package client

import (
	"encoding/base64"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Cursors are base64url (unpadded) of "segment:offset" pairs joined by
// commas, segment ids query-escaped (docs/api.md). The client reads them
// only to resume a follow exactly after the last event it delivered.

func decodeCursor(s string) (map[string]uint64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(raw) == 0 {
		return nil, false
	}
	out := map[string]uint64{}
	for _, part := range strings.Split(string(raw), ",") {
		esc, off, ok := strings.Cut(part, ":")
		if !ok {
			return nil, false
		}
		seg, err := url.QueryUnescape(esc)
		if err != nil || seg == "" {
			return nil, false
		}
		n, err := strconv.ParseUint(off, 10, 64)
		if err != nil {
			return nil, false
		}
		out[seg] = n
	}
	return out, true
}

func encodeCursor(pos map[string]uint64) string {
	ids := make([]string, 0, len(pos))
	for id := range pos {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = url.QueryEscape(id) + ":" + strconv.FormatUint(pos[id], 10)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, ",")))
}

// resumeCursor advances the last cursor the server sent past every event
// already delivered. A cursor it cannot read is returned as it is.
func resumeCursor(cursor string, delivered map[string]uint64) string {
	if len(delivered) == 0 {
		return cursor
	}
	pos, ok := decodeCursor(cursor)
	if !ok {
		return cursor
	}
	for seg, next := range delivered {
		if next > pos[seg] {
			pos[seg] = next
		}
	}
	return encodeCursor(pos)
}
