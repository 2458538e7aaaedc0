package api

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/silt-io/silt/acl"
)

// TestOpenAPIMatchesRoutes keeps openapi.yaml and the route table in step:
// every registered route is documented and every documented operation is
// served.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var spec struct {
		OpenAPI string                    `yaml:"openapi"`
		Paths   map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(openapiSpec, &spec); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if !strings.HasPrefix(spec.OpenAPI, "3.0") {
		t.Fatalf("openapi version %q", spec.OpenAPI)
	}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options"}
	var documented []string
	for path, item := range spec.Paths {
		for m := range item {
			if slices.Contains(methods, m) {
				documented = append(documented, strings.ToUpper(m)+" "+path)
			}
		}
	}
	s := &Server{auth: Auth{Authz: acl.AllowAll{}}}
	var served []string
	for _, rt := range s.routeTable() {
		served = append(served, rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, p := range served {
		if !slices.Contains(documented, p) {
			t.Errorf("route %q is not in openapi.yaml", p)
		}
	}
	for _, p := range documented {
		if !slices.Contains(served, p) {
			t.Errorf("openapi.yaml documents %q, which is not served", p)
		}
	}
}

// TestOpenAPIRefsResolve catches typos in $ref, which YAML parsing alone
// does not.
func TestOpenAPIRefsResolve(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(openapiSpec, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					var node any = doc
					for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
						m, ok := node.(map[string]any)
						if !ok {
							node = nil
							break
						}
						node = m[part]
					}
					if node == nil {
						t.Errorf("$ref %q does not resolve", ref)
					}
					continue
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
}
