package jsonstr

import "unicode/utf8"

// The encoding side: a long context is encoded on its way out of the
// kernel (cache key, journal) and out of a model plugin (the HTTP body);
// measuring first and writing into one buffer of the exact size avoids
// encoding/json's doubling buffer and final copy.

// jsonEscape is how encoding/json writes each ASCII byte inside a string:
// "" for itself, else its escape.
var jsonEscape = func() (t [utf8.RuneSelf]string) {
	const hex = "0123456789abcdef"
	for b := range utf8.RuneSelf {
		switch {
		case b == '"' || b == '\\':
			t[b] = `\` + string(rune(b))
		case b == '\b':
			t[b] = `\b`
		case b == '\f':
			t[b] = `\f`
		case b == '\n':
			t[b] = `\n`
		case b == '\r':
			t[b] = `\r`
		case b == '\t':
			t[b] = `\t`
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			t[b] = `\u00` + string(hex[b>>4]) + string(hex[b&0xf])
		}
	}
	return t
}()

// jsonRune is the escape of the non-ASCII rune r that DecodeRuneInString
// read in size bytes, or "" where the bytes stand for themselves: invalid
// UTF-8 becomes U+FFFD, and the line and paragraph separators are escaped
// for JavaScript's sake.
func jsonRune(r rune, size int) string {
	switch {
	case r == utf8.RuneError && size == 1:
		return `\ufffd`
	case r == '\u2028':
		return `\u2028`
	case r == '\u2029':
		return `\u2029`
	}
	return ""
}

// QuotedLen is len(json.Marshal(s)).
func QuotedLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if e := jsonEscape[b]; e != "" {
				n += len(e) - 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if e := jsonRune(r, size); e != "" {
			n += len(e) - size
		}
		i += size
	}
	return n
}

// AppendQuoted appends json.Marshal(s) to dst: the string quoted and
// escaped as encoding/json does (HTML-safe, invalid UTF-8 as U+FFFD, the
// line and paragraph separators escaped), so hashes of it do not change.
func AppendQuoted(dst []byte, s string) []byte {
	return append(appendEscaped(append(dst, '"'), s), '"')
}

// appendEscaped appends s as it stands between a JSON string's quotes.
func appendEscaped(dst []byte, s string) []byte {
	done := 0 // s[:done] is written
	for i := 0; i < len(s); {
		var e string
		size := 1
		if b := s[i]; b < utf8.RuneSelf {
			e = jsonEscape[b]
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			e = jsonRune(r, size)
		}
		if e != "" {
			dst = append(append(dst, s[done:i]...), e...)
			done = i + size
		}
		i += size
	}
	return append(dst, s[done:]...)
}

// AppendQuotedPiece appends the escaped inside (no quotes) of a leading
// piece of s of about limit bytes (at least 2*utf8.UTFMax) and returns the
// rest of s. The pieces of s, appended one after another, are
// AppendQuoted(s) without its quotes, so a long string can be encoded
// through a small buffer: a piece never ends within a rune, nor within
// bytes that a rune's first byte would read together as one (an invalid
// sequence counts its bytes one by one, so past utf8.UTFMax bytes from a
// first byte any cut is safe).
func AppendQuotedPiece(dst []byte, s string, limit int) ([]byte, string) {
	n := max(limit, 2*utf8.UTFMax)
	if n >= len(s) {
		return appendEscaped(dst, s), ""
	}
	if !utf8.RuneStart(s[n]) {
		for p := n - 1; p > n-utf8.UTFMax; p-- {
			if utf8.RuneStart(s[p]) {
				n = p
				break
			}
		}
	}
	return appendEscaped(dst, s[:n]), s[n:]
}
