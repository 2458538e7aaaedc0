package groups

import (
	"encoding/json"
	"fmt"
	"strings"
)

// KV is the part of the catalog groups use: core/catalog.Catalog, or the
// etcd-backed store of cluster mode with the same methods. Every Commit is
// atomic and durable when it returns.
type KV interface {
	Get(key []byte) (value []byte, ok bool, err error)
	Scan(prefix, start []byte, fn func(key, value []byte) error) error
	Commit(set map[string][]byte, del []string) error
	// DeleteKeys removes keys in order, in as many atomic commits as the
	// store needs (catalog.Catalog.DeleteKeys).
	DeleteKeys(keys []string) error
}

// Catalog keys. A group's record and its positions are apart so that a
// commit writes only the positions it changes; positions sort under their
// group, so a group's positions are one prefix scan.
//
//	groups/r/<tenant>/<group>                      JSON Group
//	groups/p/<tenant>/<group>/<stream>/<segment>   JSON Position
//
// Tenant, group and stream names cannot hold '/', and the segment id is
// last, so the keys cannot collide.
const (
	keyRecord   = "groups/r/"
	keyPosition = "groups/p/"
)

func recordKey(tenant, group string) string { return keyRecord + tenant + "/" + group }

func positionsPrefix(tenant, group string) string {
	return keyPosition + tenant + "/" + group + "/"
}

func positionKey(tenant, group string, r SegmentRef) string {
	return positionsPrefix(tenant, group) + r.Stream + "/" + r.Segment
}

// record is the stored form of a Group; V lets a later version change the
// shape and still read this one.
type record struct {
	V int `json:"v"`
	Group
}

func encodeGroup(g Group) []byte {
	b, err := json.Marshal(record{V: 1, Group: g})
	if err != nil {
		panic(fmt.Sprintf("groups: encode group: %v", err)) // plain data: cannot fail
	}
	return b
}

func decodeGroup(b []byte) (Group, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return Group{}, fmt.Errorf("decode group record: %w", err)
	}
	if r.V != 1 {
		return Group{}, fmt.Errorf("decode group record: unknown version %d", r.V)
	}
	return r.Group, nil
}

func encodePosition(p Position) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("groups: encode position: %v", err))
	}
	return b
}

// loadGroups reads every group record of the catalog, or of one tenant.
func loadGroups(kv KV, tenant string) ([]Group, error) {
	prefix := keyRecord
	if tenant != "" {
		prefix += tenant + "/"
	}
	var out []Group
	err := kv.Scan([]byte(prefix), nil, func(k, v []byte) error {
		g, err := decodeGroup(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// loadPositions reads a group's positions.
func loadPositions(kv KV, tenant, group string) (map[SegmentRef]Position, error) {
	out := map[SegmentRef]Position{}
	prefix := positionsPrefix(tenant, group)
	err := kv.Scan([]byte(prefix), nil, func(k, v []byte) error {
		var p Position
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decode position %s: %w", strings.TrimPrefix(string(k), prefix), err)
		}
		out[p.ref()] = p
		return nil
	})
	return out, err
}
