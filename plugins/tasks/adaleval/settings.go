package adaleval

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Kinds of the task.
const (
	KindTSort      = "tsort"
	KindBestAnswer = "bestanswer"
)

// Subsets: which released items are used, as upstream picks them.
const (
	SubsetNormal = "normal" // the first 1000 items below 32k, 200 at 32k and above
	SubsetLess   = "less"   // 200 and 50: what upstream runs for API models
)

// Setting is a length setting such as "16k".
type Setting struct {
	Name   string // "16k"
	Tokens int    // 16000: the nominal size
}

// ParseSetting reads "2k", "128k" (case-insensitive).
func ParseSetting(s string) (Setting, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	n, err := strconv.Atoi(strings.TrimSuffix(name, "k"))
	if !strings.HasSuffix(name, "k") || err != nil || n <= 0 {
		return Setting{}, fmt.Errorf("setting %q: want a size such as \"16k\"", s)
	}
	return Setting{Name: name, Tokens: n * 1000}, nil
}

// ultraLong is where upstream's subsets shrink and BestAnswer's tag rule
// relaxes: 32k and above.
func (s Setting) ultraLong() bool { return s.Tokens >= 32000 }

// subsetSize is how many items upstream takes from a released file.
func subsetSize(subset string, s Setting) int {
	switch {
	case subset == SubsetLess && s.ultraLong():
		return 50
	case subset == SubsetLess:
		return 200
	case s.ultraLong():
		return 200
	}
	return 1000
}

// settingInName finds the setting in a released file's name:
// "textsort_16k.json" → 16k, "stackselect_1k_first100.json" → 1k.
var settingInName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`_(\d+k)(?:[_.]|$)`) })

func settingOfFile(name string) (Setting, bool) {
	m := settingInName().FindStringSubmatch(strings.ToLower(name))
	if m == nil {
		return Setting{}, false
	}
	s, err := ParseSetting(m[1])
	return s, err == nil
}

func sortSettings(ss []Setting) {
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Tokens < ss[j].Tokens })
}

// tsortLimits is the paper's Table 11: per-part token limits and the stride
// between case start paragraphs.
type tsortLimits struct {
	Before, Segment, After, Stride int
	// Bound is Table 1's "Max #Tokens", instruction included.
	Bound int
}

var tsortTable = map[string]tsortLimits{
	"2k":   {200, 350, 200, 64, 2000},
	"4k":   {300, 800, 300, 64, 4000},
	"8k":   {400, 1750, 400, 64, 8000},
	"16k":  {500, 3700, 500, 64, 16000},
	"32k":  {500, 7700, 500, 128, 32000},
	"64k":  {500, 15700, 500, 128, 64000},
	"128k": {500, 31700, 500, 128, 127800},
}

// TSortSettings are the settings the builder knows, in order.
var TSortSettings = []string{"2k", "4k", "8k", "16k", "32k", "64k", "128k"}

// BestAnswerSettings are the paper's settings: 1k–16k share their
// questions, 32k–128k are built apart.
var BestAnswerSettings = []string{"1k", "2k", "4k", "6k", "8k", "12k", "16k", "32k", "64k", "128k"}
