package config

import "strings"

// suggest returns the candidate closest to name, or "" when nothing is close
// enough to be a plausible typo. Besides edit distance it recognises a key
// written without its section ("listen" for "api.listen"), a common slip when
// moving a setting between sections.
func suggest(name string, candidates []string) string {
	best, bestDist := "", -1
	for _, c := range candidates {
		d := distance(strings.ToLower(name), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist >= 0 && bestDist <= max(2, len(name)/4) {
		return best
	}
	last := lastPart(name)
	for _, c := range candidates {
		if lastPart(c) == last {
			return c
		}
	}
	return ""
}

func lastPart(s string) string {
	if i := strings.LastIndex(s, "."); i >= 0 {
		return s[i+1:]
	}
	return s
}

// distance is the Levenshtein edit distance, counting an adjacent
// transposition as one edit since swapped letters are the commonest typo.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rolling rows are enough for the transposition lookback.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
