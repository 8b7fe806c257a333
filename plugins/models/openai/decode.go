package openai

import (
	"errors"
	"strings"

	"github.com/hayloft/hayloft/sdk/jsonscan"
)

// An answer is read by hand when it has the usual shape, and by
// encoding/json otherwise. The reflective decoder validated the whole body
// and then walked it again, allocating for every field on the way: about a
// tenth of this plugin's CPU per request at zero server latency. The fast
// path accepts only what it decodes exactly as json.Unmarshal does (the
// fuzz test holds it to that); anything else (a key differing only in case,
// which json would match; a wanted key twice; a value of an unexpected
// type; a broken body) is left to encoding/json, so results and errors stay
// what they were.

// errOffPath stops the fast path: encoding/json decides.
var errOffPath = errors.New("not the usual shape")

// decodeFast fills *out from raw as json.Unmarshal(raw, out) would, out
// being zero; false when raw is off the fast path (out is then garbage).
func (out *generateResponse) decodeFast(raw []byte) bool {
	var seen fieldSet
	err := jsonscan.Object(raw, func(k, v []byte) error {
		switch seen.match(k, "choices", "usage", "timings") {
		case 0:
			return out.choices(v)
		case 1:
			return out.usage(v)
		case 2:
			if null(v) {
				out.Timings = nil
				return nil
			}
			out.Timings = new(timings)
			return fields(v, func(_ int, v []byte) error { return optInt(v, &out.Timings.CacheN) }, "cache_n")
		case skip:
			return nil
		}
		return errOffPath
	})
	return err == nil
}

func (out *generateResponse) choices(v []byte) error {
	if null(v) {
		out.Choices = nil
		return nil
	}
	if jsonscan.KindOf(v) != jsonscan.KindArray {
		return errOffPath
	}
	out.Choices = []choice{} // json makes [] an empty list, not nil
	return jsonscan.Array(v, func(v []byte) error {
		out.Choices = append(out.Choices, choice{})
		ch := &out.Choices[len(out.Choices)-1]
		if null(v) {
			return nil
		}
		return fields(v, func(i int, v []byte) error {
			switch i {
			case 0:
				if null(v) {
					return nil
				}
				return fields(v, func(_ int, v []byte) error { return optString(v, &ch.Message.Content) }, "content")
			case 1:
				return optString(v, &ch.Text)
			}
			if null(v) {
				return nil
			}
			s, ok := str(v)
			if !ok {
				return errOffPath
			}
			ch.FinishReason = s
			return nil
		}, "message", "text", "finish_reason")
	})
}

func (out *generateResponse) usage(v []byte) error {
	if null(v) {
		return nil
	}
	u := &out.Usage
	return fields(v, func(i int, v []byte) error {
		switch i {
		case 0:
			return intField(v, &u.PromptTokens)
		case 1:
			return intField(v, &u.CompletionTokens)
		}
		if null(v) {
			u.PromptTokensDetails = nil
			return nil
		}
		u.PromptTokensDetails = &tokensDetails{}
		return fields(v, func(_ int, v []byte) error { return optInt(v, &u.PromptTokensDetails.CachedTokens) }, "cached_tokens")
	}, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
}

// fields walks the object v, calling fn with the index in names of each
// member named there; other members are skipped. Not an object (null is the
// caller's), a name twice, or one in other case: off the path.
func fields(v []byte, fn func(i int, v []byte) error, names ...string) error {
	if jsonscan.KindOf(v) != jsonscan.KindObject {
		return errOffPath
	}
	var seen fieldSet
	return jsonscan.Object(v, func(k, v []byte) error {
		switch i := seen.match(k, names...); i {
		case skip:
			return nil
		case offPath:
			return errOffPath
		default:
			return fn(i, v)
		}
	})
}

const (
	skip    = -1
	offPath = -2
)

// fieldSet is the names an object has had, for match.
type fieldSet uint8

// match is the index of k in names, skip for a member json would ignore,
// or offPath for a name seen before or one that json would match without
// being equal (another case, or bytes past ASCII, where json's folding
// rules would have to be repeated here).
func (s *fieldSet) match(k []byte, names ...string) int {
	for i, n := range names {
		if string(k) == n {
			if *s&(1<<i) != 0 {
				return offPath
			}
			*s |= 1 << i
			return i
		}
	}
	for _, c := range k {
		if c >= 0x80 {
			return offPath
		}
	}
	for _, n := range names {
		// k is ASCII here, and ASCII folds byte for byte: only a name
		// of its length can match it.
		if len(k) == len(n) && strings.EqualFold(string(k), n) {
			return offPath
		}
	}
	return skip
}

func null(v []byte) bool { return jsonscan.KindOf(v) == jsonscan.KindNull }

func str(v []byte) (string, bool) {
	if jsonscan.KindOf(v) != jsonscan.KindString {
		return "", false
	}
	s, err := jsonscan.String(v)
	return s, err == nil
}

// optString sets *dst as json does a *string: nil for null.
func optString(v []byte, dst **string) error {
	if null(v) {
		*dst = nil
		return nil
	}
	s, ok := str(v)
	if !ok {
		return errOffPath
	}
	*dst = &s
	return nil
}

// intField sets *dst as json does an int: null leaves it.
func intField(v []byte, dst *int) error {
	if null(v) {
		return nil
	}
	n, ok := jsonscan.Int(v)
	if !ok || int64(int(n)) != n {
		return errOffPath
	}
	*dst = int(n)
	return nil
}

// optInt sets *dst as json does a *int: nil for null.
func optInt(v []byte, dst **int) error {
	if null(v) {
		*dst = nil
		return nil
	}
	n, ok := jsonscan.Int(v)
	if !ok || int64(int(n)) != n {
		return errOffPath
	}
	x := int(n)
	*dst = &x
	return nil
}
