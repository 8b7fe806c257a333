package sdk

import "github.com/hayloft/hayloft/sdk/jsonstr"

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
		n += len(`{"role":,"content":}`) + jsonstr.QuotedLen(m.Role) + jsonstr.QuotedLen(m.Content)
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
		dst = jsonstr.AppendQuoted(dst, m.Role)
		dst = append(dst, `,"content":`...)
		dst = jsonstr.AppendQuoted(dst, m.Content)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// MessagesJSON is json.Marshal(msgs) in one allocation of its size.
func MessagesJSON(msgs []Message) []byte {
	return AppendMessagesJSON(make([]byte, 0, MessagesJSONLen(msgs)), msgs)
}
