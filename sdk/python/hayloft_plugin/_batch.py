"""ScoreBatch without protobuf objects: the request's bytes decoded straight
into Samples and the response's bytes encoded straight from Scores.

`hayloft score` sends a scorer batches of 64 requests; through the protobuf
runtime each request cost about 80,000 instructions (a wrapper object per
message and per repeated field read, a ScoreResponse built and copied twice)
against a few thousand for a trivial scorer's own work. Decoding and encoding
the few fields by hand is several times cheaper. The field numbers are those
of sdk/plugin/proto/hayloft/plugin/v1/plugin.proto; tests/test_batch.py
checks both directions against the protobuf runtime, field by field, so a
change to the .proto that this module misses fails there.

Unknown fields are skipped, as protobuf does.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Dict, List, Tuple

from .types import GridPoint, Message, Sample, Score

_DOUBLE = struct.Struct("<d")
_new = object.__new__


class DecodeError(ValueError):
    pass


def _varint(buf: bytes, i: int) -> Tuple[int, int]:
    n = shift = 0
    while True:
        try:
            b = buf[i]
        except IndexError:
            raise DecodeError("truncated varint") from None
        i += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, i
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def _int64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def _skip(buf: bytes, i: int, wire: int) -> int:
    if wire == 0:
        return _varint(buf, i)[1]
    if wire == 1:
        return i + 8
    if wire == 2:
        n, i = _varint(buf, i)
        return i + n
    if wire == 5:
        return i + 4
    raise DecodeError(f"unsupported wire type {wire}")


def _field(buf: bytes, i: int) -> Tuple[int, int, int]:
    """(field number, wire type, position after the tag)."""
    t = buf[i]
    if t < 0x80:
        return t >> 3, t & 7, i + 1
    t, i = _varint(buf, i)
    return t >> 3, t & 7, i


def _len(buf: bytes, i: int, end: int) -> Tuple[int, int]:
    """The bounds (start, end) of a length-delimited value at i."""
    n = buf[i]
    if n < 0x80:
        i += 1
    else:
        n, i = _varint(buf, i)
    if i + n > end:
        raise DecodeError("truncated field")
    return i, i + n


def fields(buf: bytes) -> Dict[int, Any]:
    """The varint (int) and length-delimited (bytes) fields of a small
    message by number, the last one winning as in protobuf; other wire
    types are skipped. A malformed message raises DecodeError."""
    out: Dict[int, Any] = {}
    i, end = 0, len(buf)
    try:
        while i < end:
            num, wire, i = _field(buf, i)
            if wire == 0:
                out[num], i = _varint(buf, i)
            elif wire == 2:
                s, i = _len(buf, i, end)
                out[num] = buf[s:i]
            else:
                i = _skip(buf, i, wire)
    except IndexError:
        raise DecodeError("truncated message") from None
    if i != end:
        raise DecodeError("truncated message")
    return out


def _pair(buf: bytes, i: int, end: int) -> Tuple[Any, Any]:
    """Fields 1 and 2 of a small message (Message, Length, GridPoint): raw
    values, None when absent."""
    a = b = None
    while i < end:
        num, wire, i = _field(buf, i)
        if wire == 2:
            s, e = _len(buf, i, end)
            v: Any = buf[s:e]
            i = e
        elif wire == 0:
            v, i = _varint(buf, i)
        elif wire == 1:
            v = _DOUBLE.unpack_from(buf, i)[0]
            i += 8
        else:
            i = _skip(buf, i, wire)
            continue
        if num == 1:
            a = v
        elif num == 2:
            b = v
    if i != end:
        raise DecodeError("truncated message")
    return a, b


def _str(v: Any) -> str:
    return v.decode() if isinstance(v, (bytes, bytearray)) else ""


def _sample(buf: bytes, i: int, end: int, decode_map: Callable[[str, bytes], dict]) -> Any:
    """The Sample encoded in buf[i:end], or the exception its metadata
    raised. Tags (all of Sample's fit in one byte) and lengths of one or
    two bytes are read inline, and fields are told apart by their whole
    tag, commonest first: a function call or a tuple costs more than the
    rest of a field's decoding."""
    sid = context = question = language = subtask = tokenizer = ""
    messages: List[Message] = []
    choices: List[str] = []
    targets: List[str] = []
    length = max_new = window = 0
    depth = 0.0
    metadata = b""
    grid = None
    while i < end:
        t = buf[i]
        if t < 0x80:
            i += 1
        else:
            t, i = _varint(buf, i)
        if t & 7 == 2:
            n = buf[i]
            if n < 0x80:
                i += 1
            elif buf[i + 1] < 0x80:
                n = (n & 0x7F) | buf[i + 1] << 7
                i += 2
            else:
                n, i = _varint(buf, i)
            s, i = i, i + n
            if i > end:
                raise DecodeError("truncated field")
            if t == 0x32:  # 6 targets
                targets.append(buf[s:i].decode())
            elif t == 0x0A:  # 1 id
                sid = buf[s:i].decode()
            elif t == 0x3A:  # 7 length
                if i > s:
                    tk, tz = _pair(buf, s, i)
                    length, tokenizer = _int64(tk or 0), _str(tz)
            elif t == 0x12:  # 2 context
                context = buf[s:i].decode()
            elif t == 0x1A:  # 3 question
                question = buf[s:i].decode()
            elif t == 0x22:  # 4 messages
                role, content = _pair(buf, s, i)
                messages.append(Message(_str(role), _str(content)))
            elif t == 0x2A:  # 5 choices
                choices.append(buf[s:i].decode())
            elif t == 0x4A:  # 9 language
                language = buf[s:i].decode()
            elif t == 0x52:  # 10 subtask
                subtask = buf[s:i].decode()
            elif t == 0x62:  # 12 metadata_json
                metadata = buf[s:i]
            elif t == 0x72:  # 14 grid
                gl, gd = _pair(buf, s, i)
                grid = GridPoint(length=_int64(gl or 0), depth=gd or 0.0)
        elif t == 0x41:  # 8 depth, fixed64
            depth = _DOUBLE.unpack_from(buf, i)[0]
            i += 8
        elif t == 0x58:  # 11 max_new_tokens
            v, i = _varint(buf, i)
            max_new = _int64(v)
        elif t == 0x68:  # 13 window
            v, i = _varint(buf, i)
            window = _int64(v)
        else:
            i = _skip(buf, i, t & 7)
    if i != end:
        raise DecodeError("truncated sample")
    s = _new(Sample)
    # What Sample(...) would build, without its __init__: the same fields,
    # fresh lists and dicts.
    d = {
        "id": sid, "context": context, "question": question, "messages": messages, "choices": choices,
        "targets": targets, "length": length, "tokenizer": tokenizer, "depth": depth, "language": language,
        "subtask": subtask, "max_new_tokens": max_new, "window": window, "metadata": {}, "grid": grid,
    }
    s.__dict__ = d
    if metadata:
        # A bad metadata object fails its own request only.
        try:
            d["metadata"] = decode_map(f"sample {sid} metadata", metadata)
        except Exception as e:
            return e
    return s


def decode_score_batch(buf: bytes, decode_map: Callable[[str, bytes], dict]) -> List[Tuple[Any, str]]:
    """The (sample, prediction) of each request of an encoded
    ScoreBatchRequest (requests = 1; ScoreRequest: sample = 1,
    prediction = 2). ScoreRequest.for_aggregate = 3 and score_object = 4
    are skipped: the first only allows a scorer to leave its details out,
    and a Python scorer always returns them; the second asks for the whole
    score object, which the host builds from the details when the response
    does not say it holds one. A sample whose metadata does not decode is that
    exception instead; a malformed message raises DecodeError."""
    try:
        return _decode_score_batch(buf, decode_map)
    except (IndexError, struct.error) as e:
        raise DecodeError(f"truncated message ({e})") from None


def _decode_score_batch(buf: bytes, decode_map: Callable[[str, bytes], dict]) -> List[Tuple[Any, str]]:
    out = []
    append = out.append
    i, end = 0, len(buf)
    while i < end:
        t = buf[i]
        if t < 0x80:
            i += 1
        else:
            t, i = _varint(buf, i)
        if t != 0x0A:  # not requests (1, length-delimited)
            i = _skip(buf, i, t & 7)
            continue
        n = buf[i]
        if n < 0x80:
            s = i + 1
        elif buf[i + 1] < 0x80:
            n = (n & 0x7F) | buf[i + 1] << 7
            s = i + 2
        else:
            n, s = _varint(buf, i)
        i = e = s + n
        if e > end:
            raise DecodeError("truncated field")
        sample = None
        pred = ""
        while s < e:
            t = buf[s]
            if t < 0x80:
                s += 1
            else:
                t, s = _varint(buf, s)
            if t & 7 != 2:
                s = _skip(buf, s, t & 7)
                continue
            n = buf[s]
            if n < 0x80:
                s += 1
            elif buf[s + 1] < 0x80:
                n = (n & 0x7F) | buf[s + 1] << 7
                s += 2
            else:
                n, s = _varint(buf, s)
            a, s = s, s + n
            if s > e:
                raise DecodeError("truncated field")
            if t == 0x0A:  # sample
                sample = _sample(buf, a, s, decode_map)
            elif t == 0x12:  # prediction
                pred = buf[a:s].decode()
        if s != e:
            raise DecodeError("truncated request")
        if sample is None:
            sample = _sample(buf, 0, 0, decode_map)
        append((sample, pred))
    if i != end:
        raise DecodeError("truncated batch")
    return out


def _uvarint(n: int) -> bytes:
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode_score(s: Score, encode_map: Callable[[str, Any], bytes]) -> bytes:
    """A ScoreResponse (value = 1, invalid = 2, details_json = 3, stats = 4
    packed)."""
    out = b"\x09" + _DOUBLE.pack(s.value)
    if s.invalid:
        out += b"\x10\x01"
    if s.details:
        d = encode_map("score details", s.details)
        out += b"\x1a" + _uvarint(len(d)) + d
    if s.stats:
        st = struct.pack(f"<{len(s.stats)}d", *s.stats)
        out += b"\x22" + _uvarint(len(st)) + st
    return out


def encode_results(results: List[Tuple[bool, bytes]]) -> bytes:
    """A ScoreBatchResponse from (ok, encoded ScoreResponse or Error) pairs
    (ScoreResult: response = 1, error = 2)."""
    parts = []
    for ok, body in results:
        r = (b"\x0a" if ok else b"\x12") + _uvarint(len(body)) + body
        parts.append(b"\x0a" + _uvarint(len(r)) + r)
    return b"".join(parts)


# A ScoreBatchResponse's result that is a bare value: results (1) holding a
# ScoreResult whose response (1) is a ScoreResponse of value (1, fixed64)
# alone, the double following.
_VALUE_ONLY = b"\x0a\x0b\x0a\x09\x09"


def score_items(items: List[Tuple[Any, str]], call: Callable[[Any, str], Any], as_score: Callable[[Any, Any], Score],
                fail: Callable[[BaseException], bytes], encode_map: Callable[[str, Any], bytes]) -> bytes:
    """The encoded ScoreBatchResponse for decoded items, scored one after
    another on this thread: call(sample, prediction) is the user's scorer,
    as_score turns what it returned into a Score (or raises), fail encodes
    an exception as the request's Error. A Score of a value alone, what
    most scorers return, is encoded without a function call."""
    parts = []
    append = parts.append
    pack = _DOUBLE.pack
    for sample, prediction in items:
        try:
            if sample.__class__ is not Sample:
                raise sample  # its metadata did not decode
            r = call(sample, prediction)
            if r.__class__ is not Score:
                r = as_score(r, sample)
            if not (r.invalid or r.details or r.stats):
                append(_VALUE_ONLY + pack(r.value))
                continue
            body, tag = encode_score(r, encode_map), b"\x0a"
        except Exception as e:
            body, tag = fail(e), b"\x12"
        res = tag + _uvarint(len(body)) + body
        append(b"\x0a" + _uvarint(len(res)) + res)
    return b"".join(parts)


def calls(buf: bytes) -> List[Tuple[int, int, bool, Any, bytes]]:
    """The calls of an encoded CallBatch (calls = 1), each as (id,
    deadline_unix_nano, cancel, the encoded ScoreBatchRequest of a
    score_batch call or None, the encoded Call when it is not one). Call: id = 1,
    deadline_unix_nano = 2, cancel = 3, score_batch = 8; its other fields
    are left to the protobuf runtime, which parses the whole Call when it is
    not a score_batch. A malformed message raises DecodeError."""
    out = []
    try:
        i, end = 0, len(buf)
        while i < end:
            num, wire, i = _field(buf, i)
            if num != 1 or wire != 2:
                i = _skip(buf, i, wire)
                continue
            s, e = _len(buf, i, end)
            i = e
            cid = deadline = 0
            cancel = False
            batch = None
            j = s
            while j < e:
                num, wire, j = _field(buf, j)
                if wire == 0:
                    v, j = _varint(buf, j)
                    if num == 1:
                        cid = v
                    elif num == 2:
                        deadline = _int64(v)
                    elif num == 3:
                        cancel = bool(v)
                elif wire == 2:
                    a, j = _len(buf, j, e)
                    if num == 8:
                        batch = buf[a:j]
                    elif num in (4, 5, 6):
                        batch = None  # the oneof's last field wins
                else:
                    j = _skip(buf, j, wire)
            if j != e:
                raise DecodeError("truncated call")
            # A score_batch call is answered from its batch alone: no copy of the whole call.
            out.append((cid, deadline, cancel, batch, b"" if batch is not None else buf[s:e]))
    except IndexError:
        raise DecodeError("truncated message") from None
    if i != end:
        raise DecodeError("truncated message")
    return out


def reply(cid: int, score_batch: Any = None, error: Any = None) -> bytes:
    """An encoded Reply (id = 1, error = 2, score_batch = 7) answering call
    cid with an encoded ScoreBatchResponse or an encoded Error."""
    out = b"\x08" + _uvarint(cid)
    if error is not None:
        return out + b"\x12" + _uvarint(len(error)) + error
    return out + b"\x3a" + _uvarint(len(score_batch)) + score_batch


def reply_batch(replies: List[bytes]) -> bytes:
    """An encoded ReplyBatch (replies = 1) of encoded Replies."""
    return b"".join(b"\x0a" + _uvarint(len(r)) + r for r in replies)
