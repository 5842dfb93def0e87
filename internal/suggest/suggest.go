// Package suggest finds the name someone probably meant, as Terraform and HCL suggest one
// for a misspelt attribute, command or address: one rule for every "Did you mean" mcp says.
package suggest

import (
	"fmt"

	"github.com/agext/levenshtein"
)

// Nearest is the name of names nearest to name within an edit distance of 2 (the first of
// equally near ones), or "" when none is that near or name is one of them.
func Nearest(name string, names []string) string {
	best, dist := "", 3
	for _, n := range names {
		if n == name {
			return ""
		}
		if d := levenshtein.Distance(name, n, nil); d < dist {
			best, dist = n, d
		}
	}
	return best
}

// DidYouMean is ` Did you mean "NAME"?` for Nearest's name, or "" when there is none.
func DidYouMean(name string, names []string) string {
	if best := Nearest(name, names); best != "" {
		return fmt.Sprintf(" Did you mean %q?", best)
	}
	return ""
}
