package sdk

import "unicode/utf8"

// A long context's request is encoded as JSON on its way out of the kernel
// (its cache key and journal record) and out of a model plugin (the HTTP
// body). encoding/json grows its buffer by doubling and then copies the
// result out, so a 500 KB prompt cost some 1.5 MB of garbage per encoding,
// times every request in flight when they all answer at once. These
// functions measure the encoding first and write it into one buffer of the
// exact size. The bytes are json.Marshal's (HTML-safe escaping, invalid
// UTF-8 as U+FFFD), so cache keys do not change (TestMessagesJSON).

// MessagesJSONLen is len(json.Marshal(msgs)).
func MessagesJSONLen(msgs []Message) int {
	if msgs == nil {
		return len("null")
	}
	n := len("[]") + max(len(msgs)-1, 0) // brackets and commas
	for _, m := range msgs {
		n += len(`{"role":,"content":}`) + JSONStringLen(m.Role) + JSONStringLen(m.Content)
	}
	return n
}

// AppendMessagesJSON appends json.Marshal(msgs) to dst.
func AppendMessagesJSON(dst []byte, msgs []Message) []byte {
	if msgs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, m := range msgs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"role":`...)
		dst = AppendJSONString(dst, m.Role)
		dst = append(dst, `,"content":`...)
		dst = AppendJSONString(dst, m.Content)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// MessagesJSON is json.Marshal(msgs) in one allocation of its size.
func MessagesJSON(msgs []Message) []byte {
	return AppendMessagesJSON(make([]byte, 0, MessagesJSONLen(msgs)), msgs)
}

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

// JSONStringLen is len(json.Marshal(s)).
func JSONStringLen(s string) int {
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

// AppendJSONString appends json.Marshal(s) to dst.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
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
	return append(append(dst, s[done:]...), '"')
}
