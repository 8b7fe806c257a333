"""Conversions between the dataclasses and the protocol's messages, and
errors as the Go SDK carries them (a hayloft.plugin.v1.Error, as a gRPC
status detail or inline in a stream)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Tuple

from .errors import Attempt, ConfigError, PluginError, RequestError, RetryableError, Unsupported
from .types import Aggregate, Chunk, Generation, GenerateRequest, GridPoint, Message, Retrieval, Sample, Score, Tokens


class _Stubs:
    """The module plugin_pb2, imported on first use. The protobuf runtime is
    about a sixth of a plugin's start-up, and a scorer serving `hayloft
    score` never needs it: its Configure, ScoreBatch and Close are served
    on bytes. Once loaded, the module's names are this object's own, as
    quick to read as a module's."""

    def __getattr__(self, name: str) -> Any:
        from ._proto import plugin_pb2

        self.__dict__.update(vars(plugin_pb2))
        return getattr(plugin_pb2, name)


pb: Any = _Stubs()


def _encode_map(what: str, m: Optional[Dict[str, Any]]) -> bytes:
    if not m:
        return b""
    import json  # here, not at the top: start-up does not need it

    try:
        return json.dumps(m, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError) as e:
        raise PluginError(f"encode {what}: {e}") from None


def _decode_map(what: str, b: bytes) -> Dict[str, Any]:
    if not b:
        return {}
    import json

    try:
        m = json.loads(b)
    except ValueError as e:
        raise PluginError(f"decode {what}: {e}") from None
    if not isinstance(m, dict):
        raise PluginError(f"decode {what}: not a JSON object")
    return m


def sample_to_pb(s: Sample) -> pb.Sample:
    p = pb.Sample(
        id=s.id,
        context=s.context,
        question=s.question,
        messages=[pb.Message(role=m.role, content=m.content) for m in s.messages],
        choices=s.choices,
        targets=s.targets,
        length=pb.Length(tokens=s.length, tokenizer=s.tokenizer),
        depth=s.depth,
        language=s.language,
        subtask=s.subtask,
        max_new_tokens=s.max_new_tokens,
        window=s.window,
        metadata_json=_encode_map(f"sample {s.id} metadata", s.metadata),
    )
    if s.grid is not None:
        p.grid.SetInParent()  # present even at (0, 0)
        p.grid.length, p.grid.depth = s.grid.length, s.grid.depth
    return p


def sample_from_pb(p: pb.Sample) -> Sample:
    return Sample(
        id=p.id,
        context=p.context,
        question=p.question,
        messages=[Message(m.role, m.content) for m in p.messages],
        choices=list(p.choices),
        targets=list(p.targets),
        length=p.length.tokens,
        tokenizer=p.length.tokenizer,
        depth=p.depth,
        language=p.language,
        subtask=p.subtask,
        max_new_tokens=p.max_new_tokens,
        window=p.window,
        metadata=_decode_map(f"sample {p.id} metadata", p.metadata_json),
        grid=GridPoint(p.grid.length, p.grid.depth) if p.HasField("grid") else None,
    )


def score_to_pb(s: Score) -> pb.ScoreResponse:
    return pb.ScoreResponse(value=s.value, invalid=s.invalid, details_json=_encode_map("score details", s.details), stats=s.stats)


def score_from_pb(p: pb.ScoreResponse) -> Score:
    return Score(value=p.value, invalid=p.invalid, details=_decode_map("score details", p.details_json), stats=list(p.stats))


def aggregate_to_pb(a: Aggregate) -> pb.AggregateResponse:
    return pb.AggregateResponse(
        value=a.value, n=a.n, invalid=a.invalid, ci_low=a.ci_low, ci_high=a.ci_high,
        details_json=_encode_map("aggregate details", a.details),
    )


def aggregate_from_pb(p: pb.AggregateResponse) -> Aggregate:
    return Aggregate(value=p.value, n=p.n, invalid=p.invalid, ci_low=p.ci_low, ci_high=p.ci_high,
                     details=_decode_map("aggregate details", p.details_json))


def generate_request_from_pb(p: pb.GenerateRequest) -> GenerateRequest:
    par = p.params
    return GenerateRequest(
        messages=[Message(m.role, m.content) for m in p.messages],
        temperature=par.temperature if par.HasField("temperature") else None,
        top_p=par.top_p if par.HasField("top_p") else None,
        max_tokens=par.max_tokens,
        stop=list(par.stop),
        seed=par.seed if par.HasField("seed") else None,
        sample=sample_from_pb(p.sample) if p.HasField("sample") else None,
        slot=p.slot if p.HasField("slot") else None,
    )


def generate_request_to_pb(r: GenerateRequest) -> pb.GenerateRequest:
    par = pb.GenerationParams(max_tokens=r.max_tokens, stop=r.stop)
    if r.temperature is not None:
        par.temperature = r.temperature
    if r.top_p is not None:
        par.top_p = r.top_p
    if r.seed is not None:
        par.seed = r.seed
    out = pb.GenerateRequest(messages=[pb.Message(role=m.role, content=m.content) for m in r.messages], params=par)
    if r.sample is not None:
        out.sample.CopyFrom(sample_to_pb(r.sample))
    if r.slot is not None:
        out.slot = r.slot
    return out


def attempts_to_pb(attempts: Optional[List[Attempt]]) -> List[pb.Attempt]:
    return [pb.Attempt(status=a.status, latency_ms=a.latency_ms, error=a.error) for a in attempts or []]


def attempts_from_pb(attempts: Any) -> List[Attempt]:
    return [Attempt(a.status, a.latency_ms, a.error) for a in attempts]


def generation_to_pb(g: Generation) -> pb.GenerateResponse:
    return pb.GenerateResponse(
        text=g.text, finish_reason=g.finish_reason,
        usage=pb.Usage(prompt_tokens=g.prompt_tokens, completion_tokens=g.completion_tokens),
        attempts=attempts_to_pb(g.attempts),
    )


def generation_from_pb(p: pb.GenerateResponse) -> Generation:
    return Generation(text=p.text, finish_reason=p.finish_reason, prompt_tokens=p.usage.prompt_tokens,
                      completion_tokens=p.usage.completion_tokens, attempts=attempts_from_pb(p.attempts))


def tokens_to_pb(t: Tokens) -> pb.TokenizeResponse:
    return pb.TokenizeResponse(tokens=[pb.TokenIDs(ids=ids) for ids in t.ids], tokenizer=t.tokenizer)


def tokens_from_pb(p: pb.TokenizeResponse) -> Tokens:
    return Tokens(ids=[list(t.ids) for t in p.tokens], tokenizer=p.tokenizer)


def retrieval_to_pb(r: Retrieval) -> pb.RetrieveResponse:
    return pb.RetrieveResponse(
        context=r.context,
        chunks=[pb.Chunk(id=c.id, offset=c.offset, score=c.score) for c in r.chunks],
        details_json=_encode_map("retrieve details", r.details),
    )


def retrieval_from_pb(p: pb.RetrieveResponse) -> Retrieval:
    return Retrieval(context=p.context, chunks=[Chunk(c.id, c.offset, c.score) for c in p.chunks],
                     details=_decode_map("retrieve details", p.details_json))


# ---- errors ----


def error_to_pb(err: BaseException) -> pb.Error:
    """The wire form of a component's exception. A plain exception keeps
    only its text, prefixed with its type so "KeyError: 'x'" stays readable."""
    if isinstance(err, PluginError):
        msg = str(err)
    else:
        msg = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
    K = pb.Error.Kind
    e = pb.Error(message=msg)
    if isinstance(err, PluginError) and err.attempts:
        e.attempts.extend(attempts_to_pb(err.attempts))
    if isinstance(err, ConfigError):
        e.kind, e.field, e.inner = K.KIND_CONFIG, err.field, err.msg
    elif isinstance(err, RetryableError):
        e.kind, e.retry_after_ns, e.inner = K.KIND_RETRYABLE, int(err.after * 1e9), err.msg
    elif isinstance(err, RequestError):
        e.kind, e.code, e.inner = K.KIND_REQUEST, err.code, err.msg
    elif isinstance(err, (Unsupported, NotImplementedError)):
        e.kind = K.KIND_UNSUPPORTED
    return e


def error_from_pb(e: pb.Error) -> BaseException:
    """The exception a remote component raised, rebuilt (for the testing
    helpers, which play the host)."""
    K = pb.Error.Kind
    attempts = attempts_from_pb(e.attempts) or None
    if e.kind == K.KIND_CONFIG:
        err: BaseException = ConfigError(e.field, e.inner)
    elif e.kind == K.KIND_RETRYABLE:
        err = RetryableError(e.inner, e.retry_after_ns / 1e9, attempts)
    elif e.kind == K.KIND_REQUEST:
        err = RequestError(e.code, e.inner, attempts)
    elif e.kind == K.KIND_UNSUPPORTED:
        err = Unsupported(e.message)
    else:
        err = PluginError(e.message)
    if isinstance(err, PluginError) and attempts:
        err.attempts = attempts
    if str(err) != e.message:
        err.args = (e.message,)
    return err


# gRPC status codes by error kind name, as sdk/plugin's codeFor.
_CODES = {
    "KIND_CONFIG": "INVALID_ARGUMENT",
    "KIND_RETRYABLE": "UNAVAILABLE",
    "KIND_REQUEST": "FAILED_PRECONDITION",
    "KIND_UNSUPPORTED": "UNIMPLEMENTED",
    "KIND_CANCELED": "CANCELLED",
    "KIND_DEADLINE": "DEADLINE_EXCEEDED",
    "KIND_PANIC": "INTERNAL",
}


def status_code_name(e: pb.Error) -> str:
    try:
        return _CODES.get(pb.Error.Kind.Name(e.kind), "UNKNOWN")
    except ValueError:  # a kind this SDK does not know
        return "UNKNOWN"


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_bytes(num: int, data: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def status_details(code: int, e: pb.Error) -> bytes:
    """A google.rpc.Status carrying e as its one detail, encoded by hand
    (three fields) so the SDK needs no googleapis package: this is what gRPC
    sends as grpc-status-details-bin and Go's status.FromError reads."""
    any_msg = _field_bytes(1, b"type.googleapis.com/" + e.DESCRIPTOR.full_name.encode()) + _field_bytes(2, e.SerializeToString())
    out = b""
    if code:
        out += _varint(1 << 3 | 0) + _varint(code)
    if e.message:
        out += _field_bytes(2, e.message.encode())
    return out + _field_bytes(3, any_msg)


def _fields(buf: bytes) -> List[Tuple[int, Any]]:
    """The top-level (number, value) fields of a protobuf message; only
    varint and length-delimited fields, which is all google.rpc.Status has."""
    out: List[Tuple[int, Any]] = []
    i = 0

    def varint() -> int:
        nonlocal i
        shift = n = 0
        while True:
            c = buf[i]
            i += 1
            n |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                return n

    while i < len(buf):
        tag = varint()
        num, wire = tag >> 3, tag & 7
        if wire == 0:
            out.append((num, varint()))
        elif wire == 2:
            n = varint()
            out.append((num, buf[i:i + n]))
            i += n
        else:
            break
    return out


def parse_status_details(b: bytes) -> Optional[pb.Error]:
    """The hayloft Error inside an encoded google.rpc.Status, if any."""
    for num, val in _fields(b):
        if num == 3:
            parts = dict(_fields(val))
            if parts.get(1, b"").endswith(b"/hayloft.plugin.v1.Error"):
                return pb.Error.FromString(parts.get(2, b""))
    return None


def rpc_error(e: Any, what: str) -> BaseException:
    """The exception behind a failed RPC (a grpc.RpcError): the typed error
    its status detail carries, else a PluginError naming what was called."""
    for key, value in (e.trailing_metadata() or ()):
        if key == "grpc-status-details-bin":
            err = parse_status_details(value)
            if err is not None:
                if err.kind == pb.Error.KIND_UNSPECIFIED:
                    return PluginError(f"{what}: {err.message}")
                return error_from_pb(err)
    return PluginError(f"{what}: {e.code().name}: {e.details()}")


def where(e: BaseException) -> str:
    """" (file.py:LINE)" of the innermost frame that raised e."""
    tb = e.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f" ({os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})"
