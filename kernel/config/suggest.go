package config

import "github.com/hayloft/hayloft/sdk"

// Suggest returns the candidate nearest to name, or "" when none is close
// enough to be a likely typo (see sdk.Suggest, which plugins use too).
func Suggest(name string, candidates []string) string { return sdk.Suggest(name, candidates) }

// didYouMean renders a suggestion suffix, or "" when there is none.
func didYouMean(name string, candidates []string) string {
	if s := Suggest(name, candidates); s != "" {
		return `; did you mean "` + s + `"?`
	}
	return ""
}
