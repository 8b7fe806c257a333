"""Runs one component's calls from their wire form to their wire form. The
unary RPCs, the multiplexed Calls stream and the worker processes all go
through here, so every path behaves alike. Nothing here imports grpc: worker
processes need only protobuf."""

from __future__ import annotations

import logging
import time

from . import _batch, _wire
from ._wire import pb
from .errors import CODE_EXCEPTION, PluginError, RequestError
from .plugin import Component


class Runner:
    def __init__(self, comp: Component, log: logging.Logger):
        self.comp = comp
        self.log = log

    def score(self, req: pb.ScoreRequest) -> pb.ScoreResponse:
        s = self.comp.score(_wire.sample_from_pb(req.sample), req.prediction)
        return _wire.score_to_pb(s)

    def generate(self, req: pb.GenerateRequest) -> pb.GenerateResponse:
        return _wire.generation_to_pb(self.comp.generate(_wire.generate_request_from_pb(req)))

    def retrieve(self, req: pb.RetrieveRequest) -> pb.RetrieveResponse:
        return _wire.retrieval_to_pb(self.comp.retrieve(_wire.sample_from_pb(req.sample)))

    def error(self, method: str, e: BaseException) -> pb.Error:
        """The wire form of e; exceptions that are not the SDK's typed errors
        are bugs or surprises, logged with their traceback."""
        if not isinstance(e, PluginError):
            self.log.error("exception in %s %s", self.comp.label, method, exc_info=e)
        return _wire.error_to_pb(e)

    def call_error(self, method: str, e: BaseException) -> pb.Error:
        """The error of one score, generate or retrieve call. An exception
        that is not one of the SDK's typed errors concerns that one sample
        (a scorer that chokes on one odd prediction), so it becomes a
        RequestError with code "exception" naming the line that raised:
        hayloft records it against the sample and goes on with the rest."""
        if isinstance(e, PluginError):
            return _wire.error_to_pb(e)
        self.log.error("exception in %s %s", self.comp.label, method, exc_info=e)
        text = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        return _wire.error_to_pb(RequestError(CODE_EXCEPTION, text + _wire.where(e)))

    def score_batch(self, raw: bytes) -> bytes:
        """An encoded ScoreBatchRequest's answer, encoded, scored on this
        thread without protobuf objects (see _batch); a request that fails
        fails alone. A malformed message raises _batch.DecodeError or
        UnicodeDecodeError."""
        items = _batch.decode_score_batch(raw, _wire._decode_map)
        return _batch.score_items(items, self.comp._call, self.comp.as_score,
                                  lambda e: self.call_error("score", e).SerializeToString(), _wire._encode_map)

    def run_raw(self, cid: int, deadline: int, score_batch: "bytes | None", call: bytes) -> bytes:
        """Answer one encoded Call with an encoded Reply; never raises. A
        score_batch call to a scorer is answered on bytes (score_batch
        above), any other through the protobuf runtime (run)."""
        if score_batch is None:
            try:
                c = pb.Call.FromString(call)
            except Exception as e:  # a malformed call fails alone
                return _batch.reply(cid, error=pb.Error(message=f"malformed call: {e}").SerializeToString())
            return self.run(c).SerializeToString()
        if self.comp.kind != "scorer":
            return _batch.reply(cid, error=pb.Error(kind=pb.Error.KIND_UNSUPPORTED, message=(
                f"the configured component is a {self.comp.kind}, not for score_batch calls: unsupported")).SerializeToString())
        if deadline and time.time_ns() > deadline:
            return _batch.reply(cid, error=pb.Error(kind=pb.Error.KIND_DEADLINE, message="context deadline exceeded").SerializeToString())
        try:
            return _batch.reply(cid, score_batch=self.score_batch(score_batch))
        except (_batch.DecodeError, UnicodeDecodeError) as e:
            return _batch.reply(cid, error=pb.Error(message=f"ScoreBatch: malformed request: {e}").SerializeToString())
        except Exception as e:
            return _batch.reply(cid, error=self.error("score_batch", e).SerializeToString())

    def run(self, call: pb.Call) -> pb.Reply:
        """Answer one call; never raises."""
        r = pb.Reply(id=call.id)
        which = call.WhichOneof("request")
        try:
            if call.deadline_unix_nano and time.time_ns() > call.deadline_unix_nano:
                r.error.CopyFrom(pb.Error(kind=pb.Error.KIND_DEADLINE, message="context deadline exceeded"))
            elif which == "score" and self.comp.kind == "scorer":
                r.score.CopyFrom(self.score(call.score))
            elif which == "generate" and self.comp.kind == "model":
                r.generate.CopyFrom(self.generate(call.generate))
            elif which == "retrieve" and self.comp.kind == "retriever":
                r.retrieve.CopyFrom(self.retrieve(call.retrieve))
            elif which == "score_batch" and self.comp.kind == "scorer":
                r.score_batch.ParseFromString(self.score_batch(call.score_batch.SerializeToString()))
            else:
                r.error.CopyFrom(pb.Error(kind=pb.Error.KIND_UNSUPPORTED,
                                          message=f"the configured component is a {self.comp.kind}, not for {which} calls: unsupported"))
        except Exception as e:
            r.ClearField("response")
            r.error.CopyFrom(self.call_error(which or "call", e))
        return r
