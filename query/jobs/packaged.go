package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/silt-io/silt/core/names"
	"github.com/silt-io/silt/query"
)

// Packaged queries: a named query text with $parameters, kept in the
// catalog in numbered versions that are never changed, so that a job
// names exactly what it ran. Defining again adds a version.
//
//	queries/p/<name>/<version, 10 digits>   JSON Packaged

const keyPackaged = "queries/p/"

// Packaged is one version of a packaged query.
type Packaged struct {
	Name        string    `json:"name"`
	Version     int       `json:"version"`
	Query       string    `json:"query"`
	Params      []string  `json:"params"`
	Description string    `json:"description,omitempty"`
	Owner       string    `json:"owner"`
	Created     time.Time `json:"created"`
}

// CheckPackaged parses a packaged query's text with every parameter bound
// to 1, and returns it parsed (for the streams it reads) with its
// parameters.
func CheckPackaged(name, text string, lim query.Limits) (*query.Query, []string, error) {
	if err := names.Stream(name); err != nil {
		return nil, nil, fmt.Errorf("%w: packaged query name: %v", ErrInvalid, strings.TrimPrefix(err.Error(), "names: invalid: "))
	}
	params, err := query.Params(text)
	if err != nil {
		return nil, nil, err
	}
	sample := map[string]string{}
	for _, p := range params {
		sample[p] = "1"
	}
	bound, err := query.Bind(text, sample)
	if err != nil {
		return nil, nil, err
	}
	q, err := query.Parse(bound, lim)
	return q, params, err
}

// Define stores text as the next version of the packaged query name.
func (m *Manager) Define(owner, name, text, description string) (Packaged, error) {
	_, params, err := CheckPackaged(name, text, m.cfg.Limits)
	if err != nil {
		return Packaged{}, err
	}
	m.defineMu.Lock()
	defer m.defineMu.Unlock()
	versions, err := m.Versions(name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Packaged{}, err
	}
	p := Packaged{Name: name, Version: len(versions) + 1, Query: text, Params: nonNilStrings(params),
		Description: description, Owner: owner, Created: m.now().UTC()}
	b, err := json.Marshal(p)
	if err != nil {
		return Packaged{}, err
	}
	if err := m.kv.Commit(map[string][]byte{packagedKey(name, p.Version): b}, nil); err != nil {
		return Packaged{}, fmt.Errorf("save packaged query %s: %w", name, err)
	}
	return p, nil
}

func packagedKey(name string, version int) string {
	return fmt.Sprintf("%s%s/%010d", keyPackaged, name, version)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Versions returns every version of name, oldest first.
func (m *Manager) Versions(name string) ([]Packaged, error) {
	var out []Packaged
	err := m.kv.Scan([]byte(keyPackaged+name+"/"), nil, func(_, v []byte) error {
		var p Packaged
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decode packaged query %s: %w", name, err)
		}
		out = append(out, p)
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%w: no packaged query %q", ErrNotFound, name)
	}
	return out, err
}

// Packaged returns version v of name; 0 is the latest.
func (m *Manager) Packaged(name string, v int) (Packaged, error) {
	vs, err := m.Versions(name)
	if err != nil {
		return Packaged{}, err
	}
	if v == 0 {
		return vs[len(vs)-1], nil
	}
	if v < 0 || v > len(vs) {
		return Packaged{}, fmt.Errorf("%w: packaged query %q has versions 1 to %d, not %d", ErrNotFound, name, len(vs), v)
	}
	return vs[v-1], nil
}

// ListPackaged returns the latest version of every packaged query, by
// name.
func (m *Manager) ListPackaged() ([]Packaged, error) {
	latest := map[string]Packaged{}
	err := m.kv.Scan([]byte(keyPackaged), nil, func(_, v []byte) error {
		var p Packaged
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("decode packaged query: %w", err)
		}
		if p.Version > latest[p.Name].Version {
			latest[p.Name] = p
		}
		return nil
	})
	out := make([]Packaged, 0, len(latest))
	for _, p := range latest {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}
