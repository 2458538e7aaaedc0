package query

import (
	"os"
	"regexp"
	"testing"
)

// TestDocsListEverything keeps docs/query.md true to the code: every
// operator, aggregate and callable function is named there.
func TestDocsListEverything(t *testing.T) {
	doc, err := os.ReadFile("../docs/query.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	names = append(names, operatorNames...)
	names = append(names, aggNames...)
	names = append(names, builtinNames...)
	pNN := regexp.MustCompile(`^p\d+$`) // documented as p1 … p99
	for _, n := range names {
		if pNN.MatchString(n) {
			continue
		}
		if !regexp.MustCompile(`\b` + regexp.QuoteMeta(n) + `\b`).Match(doc) {
			t.Errorf("docs/query.md does not mention %q", n)
		}
	}
}
