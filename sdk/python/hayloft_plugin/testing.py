"""Conformance checks for Python plugin authors: the checks of Go's
sdk/sdktest (CheckTask, CheckScorer), plus check_model and
check_retriever, run over a real gRPC connection to the plugin served in
this process, through the same services hayloft calls. Whatever breaks
across the process boundary (an option that does not decode strictly,
metadata that is not JSON, an error that loses its kind) breaks here too.

    from hayloft_plugin import testing
    testing.check_task(plugin, "arith", {"count": 5})
    testing.check_scorer(plugin, "numeric", [testing.ScorerCase("right", sample, "42", want=1)])
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import tempfile
import threading

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional

from . import _wire
from ._proto import plugin_pb2 as pb
from .errors import PluginError, Unsupported
from .plugin import Plugin
from .types import GenerateRequest, Generation, Retrieval, Sample, Score

__all__ = ["connect", "Remote", "MemoryCache", "ScorerCase", "check_task", "check_scorer", "check_model", "check_retriever",
           "MAX_CHECKED_SAMPLES"]

# How many samples check_task reads per pass.
MAX_CHECKED_SAMPLES = 1000


def _rebuild(e: Any) -> BaseException:
    """The component's exception from an RPC error."""
    for key, value in (e.trailing_metadata() or ()):
        if key == "grpc-status-details-bin":
            err = _wire.parse_status_details(value)
            if err is not None:
                return _wire.error_from_pb(err)
    return _wire.rpc_error(e, "plugin rpc")


class Remote:
    """A component configured in a plugin served over gRPC in this process;
    close() (or a with block) stops both."""

    def __init__(self, plugin: Plugin, kind: str, name: str, options: Any = None, check_only: bool = False,
                 embedding_cache: Any = None):
        import grpc

        from . import _serve
        from ._proto import plugin_pb2_grpc as rpc

        self.kind, self.name = kind, name
        self._dir = tempfile.mkdtemp(prefix="hayloft-test")
        path = os.path.join(self._dir, "sock")
        opts = [("grpc.max_receive_message_length", _serve.MAX_MESSAGE_SIZE),
                ("grpc.max_send_message_length", _serve.MAX_MESSAGE_SIZE)]
        self._server = grpc.server(ThreadPoolExecutor(max_workers=32), options=opts)
        self._state = _serve.State(plugin, logging.getLogger("hayloft_plugin.testing"))
        _serve.register(self._server, self._state)
        self._server.add_insecure_port("unix:" + path)
        self._server.start()
        self._channel = grpc.insecure_channel("unix:" + path, options=opts)
        self._lc = rpc.LifecycleStub(self._channel)
        self._task = rpc.TaskStub(self._channel)
        self._model = rpc.ModelStub(self._channel)
        self._scorer = rpc.ScorerStub(self._channel)
        self._retriever = rpc.RetrieverStub(self._channel)
        self._calls = rpc.CallsStub(self._channel)
        self._grpc = grpc
        if isinstance(options, (dict, type(None))):
            options = json.dumps(options or {}).encode()
        cache_id = 0
        if embedding_cache is not None:
            # As go-plugin's broker does for the host: listen on a socket
            # of its own, announce it under an id, pass the id.
            cache_id = 7
            cpath = os.path.join(self._dir, "cache")
            self._cache_server = grpc.server(ThreadPoolExecutor(max_workers=4), options=opts)
            rpc.add_EmbeddingCacheServicer_to_server(_CacheServicer(embedding_cache), self._cache_server)
            self._cache_server.add_insecure_port("unix:" + cpath)
            self._cache_server.start()
            self._state.broker.offer(b"\x08" + bytes([cache_id]) + _wire._field_bytes(2, b"unix") + _wire._field_bytes(3, cpath.encode()))
        try:
            resp = self._lc.Configure(pb.ConfigureRequest(kind=kind, name=name, options_json=options,
                                                          protocol="hayloft.plugin.v1", check_only=check_only,
                                                          embedding_cache=cache_id))
        except grpc.RpcError as e:
            self.close()
            raise _rebuild(e) from None
        self.capabilities = list(resp.capabilities)
        # A model's cache identity, as hayloft reads it (served_model and
        # transport_options of the component).
        self.served_model = resp.served_model
        self.transport_options = list(resp.transport_options)

    def __enter__(self) -> "Remote":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        try:
            self._lc.Close(pb.CloseRequest(), timeout=10)
        except Exception:
            pass
        self._channel.close()
        self._server.stop(0)
        self._state.shutdown()
        if getattr(self, "_cache_server", None) is not None:
            self._cache_server.stop(0)
        shutil.rmtree(self._dir, ignore_errors=True)

    def _unary(self, fn: Any, req: Any) -> Any:
        try:
            return fn(req)
        except self._grpc.RpcError as e:
            raise _rebuild(e) from None

    # ---- task ----

    def samples(self, limit: int = 0) -> Iterator[Any]:
        """The task's samples over SampleBatches; a per-item error comes as
        an exception instance. Closing the generator cancels the stream."""
        stream = self._task.SampleBatches(pb.SamplesRequest(limit=limit))
        try:
            for batch in stream:
                for item in batch.items:
                    if item.HasField("error"):
                        yield _wire.error_from_pb(item.error)
                    else:
                        yield _wire.sample_from_pb(item.sample)
        except self._grpc.RpcError as e:
            if e.code() != self._grpc.StatusCode.CANCELLED:
                raise _rebuild(e) from None
        finally:
            stream.cancel()

    def count(self, limit: int = 0) -> int:
        return self._unary(self._task.CountSamples, pb.SamplesRequest(limit=limit)).count

    # ---- scorer, model, retriever ----

    def score(self, sample: Sample, prediction: str) -> Score:
        req = pb.ScoreRequest(sample=_wire.sample_to_pb(sample), prediction=prediction)
        return _wire.score_from_pb(self._unary(self._scorer.Score, req))

    def score_batch(self, requests: List[Any]) -> List[Any]:
        """ScoreBatch: (sample, prediction) pairs scored in one message; each
        item is a Score or the exception of that request."""
        req = pb.ScoreBatchRequest(requests=[pb.ScoreRequest(sample=_wire.sample_to_pb(smp), prediction=pred)
                                             for smp, pred in requests])
        out: List[Any] = []
        for r in self._unary(self._scorer.ScoreBatch, req).results:
            out.append(_wire.error_from_pb(r.error) if r.HasField("error") else _wire.score_from_pb(r.response))
        return out

    def aggregate(self, scores: List[Score]) -> Any:
        req = pb.AggregateRequest(scores=[_wire.score_to_pb(s) for s in scores])
        return _wire.aggregate_from_pb(self._unary(self._scorer.Aggregate, req))

    def generate(self, req: GenerateRequest) -> Generation:
        return _wire.generation_from_pb(self._unary(self._model.Generate, _wire.generate_request_to_pb(req)))

    def retrieve(self, sample: Sample) -> Retrieval:
        req = pb.RetrieveRequest(sample=_wire.sample_to_pb(sample))
        return _wire.retrieval_from_pb(self._unary(self._retriever.Retrieve, req))

    def stream(self, calls: List[Any]) -> List[Any]:
        """Send calls (ScoreRequest, GenerateRequest or RetrieveRequest
        messages, or Samples for a retriever) in one batch over the Calls
        stream; return each call's result or exception, in call order."""
        batch = pb.CallBatch()
        for i, c in enumerate(calls, 1):
            call = batch.calls.add(id=i)
            if isinstance(c, pb.ScoreRequest):
                call.score.CopyFrom(c)
            elif isinstance(c, GenerateRequest):
                call.generate.CopyFrom(_wire.generate_request_to_pb(c))
            elif isinstance(c, Sample):
                call.retrieve.CopyFrom(pb.RetrieveRequest(sample=_wire.sample_to_pb(c)))
            else:
                raise TypeError(f"stream: cannot send {type(c).__name__}")
        out: List[Any] = [None] * len(calls)
        try:
            for rb in self._calls.Stream(iter([batch])):
                for r in rb.replies:
                    which = r.WhichOneof("response")
                    if r.HasField("error"):
                        out[r.id - 1] = _wire.error_from_pb(r.error)
                    elif which == "score":
                        out[r.id - 1] = _wire.score_from_pb(r.score)
                    elif which == "generate":
                        out[r.id - 1] = _wire.generation_from_pb(r.generate)
                    elif which == "retrieve":
                        out[r.id - 1] = _wire.retrieval_from_pb(r.retrieve)
        except self._grpc.RpcError as e:
            raise _rebuild(e) from None
        return out


def connect(plugin: Plugin, kind: str, name: str, options: Any = None, check_only: bool = False,
            embedding_cache: Any = None) -> Remote:
    """Configure kind/name with options (a dict) over gRPC; option errors
    raise ConfigError, as hayloft would see them. embedding_cache (an
    object with get_embeddings and put_embeddings, e.g. MemoryCache) is
    offered to the component as hayloft offers its journal: served over
    gRPC and announced on the plugin broker."""
    return Remote(plugin, kind, name, options, check_only, embedding_cache)


class MemoryCache:
    """An embedding cache in a dict, for tests: what hayloft's journal keeps,
    without the journal."""

    def __init__(self) -> None:
        self.vectors: dict = {}
        self.gets = self.puts = 0

    def get_embeddings(self, embedder: str, hashes: List[bytes]) -> List[Optional[List[float]]]:
        self.gets += 1
        return [self.vectors.get((embedder, bytes(h))) for h in hashes]

    def put_embeddings(self, embedder: str, hashes: List[bytes], vectors: List[List[float]]) -> None:
        self.puts += 1
        for h, v in zip(hashes, vectors):
            self.vectors[(embedder, bytes(h))] = list(v)


class _CacheServicer:
    """Serves a Python cache object as hayloft serves its journal."""

    def __init__(self, cache: Any):
        self.cache = cache

    def GetEmbeddings(self, req: Any, ctx: Any) -> Any:
        vecs = self.cache.get_embeddings(req.embedder, list(req.chunk_sha256))
        return pb.GetEmbeddingsResponse(vectors=[pb.EmbeddingVector(values=v or []) for v in vecs])

    def PutEmbeddings(self, req: Any, ctx: Any) -> Any:
        self.cache.put_embeddings(req.embedder, list(req.chunk_sha256), [list(v.values) for v in req.vectors])
        return pb.PutEmbeddingsResponse()


class _Problems:
    def __init__(self, what: str):
        self.what = what
        self.items: List[str] = []

    def __call__(self, msg: str) -> None:
        self.items.append(msg)

    def raise_if_any(self) -> None:
        if self.items:
            raise AssertionError(f"{self.what}:\n  " + "\n  ".join(self.items))


def _check_sample(i: int, s: Sample, fail: _Problems) -> None:
    if not s.id:
        fail(f"sample {i} has an empty id")
    if math.isnan(s.depth) or s.depth > 1:
        fail(f"sample {s.id!r}: depth {s.depth}, want 0..1 or negative")
    if s.length < 0:
        fail(f"sample {s.id!r}: length {s.length} is negative")
    if s.max_new_tokens < 0:
        fail(f"sample {s.id!r}: max_new_tokens {s.max_new_tokens} is negative")
    if s.window < 0:
        fail(f"sample {s.id!r}: window {s.window} is negative")
    for j, m in enumerate(s.messages):
        if m.role not in ("system", "user", "assistant"):
            fail(f"sample {s.id!r}: message {j} has role {m.role!r}, want system, user or assistant")


def _read_ids(task: Remote, limit: int, fail: _Problems) -> Optional[List[str]]:
    ids: List[str] = []
    seen = {}
    gen = task.samples(limit)
    try:
        for item in gen:
            i = len(ids)
            if isinstance(item, BaseException):
                fail(f"sample {i}: {item}")
                return None
            _check_sample(i, item, fail)
            if item.id in seen and item.id:
                fail(f"samples {seen[item.id]} and {i} share id {item.id!r}")
            seen[item.id] = i
            ids.append(item.id)
            if len(ids) >= MAX_CHECKED_SAMPLES:
                break
    except Exception as e:
        fail(f"reading samples: {e}")
        return None
    finally:
        gen.close()
    return ids


def check_task(plugin: Plugin, name: str, options: Any = None) -> None:
    """The contracts hayloft relies on from a task (sdktest.CheckTask):
    samples with unique non-empty ids, depth in 0..1 or negative, lengths
    not negative, known message roles, the same order on every read (a
    restarted plugin resumes by count), count() agreeing with samples, the
    limit honoured, and stopping early ending the stream. Raises
    AssertionError listing every problem."""
    fail = _Problems(f"task {name!r}")
    with connect(plugin, "task", name, options) as task:
        ids = _read_ids(task, 0, fail)
        if ids is not None and not ids:
            fail("task produced no samples")
        if ids:
            again = _read_ids(task, 0, fail)
            if again is not None and again != ids:
                fail(f"order differs between reads: {len(ids)} then {len(again)} samples, "
                     f"first difference at {next((i for i, (a, b) in enumerate(zip(ids, again)) if a != b), min(len(ids), len(again)))}")
            try:
                n = task.count(0)
                if len(ids) < MAX_CHECKED_SAMPLES and n != len(ids):
                    fail(f"count() says {n}, samples yielded {len(ids)}")
                if task.count(1) != 1:
                    fail(f"count with limit 1 says {task.count(1)}")
            except Unsupported:
                pass
            except Exception as e:
                fail(f"count: {e}")
            one = _read_ids(task, 1, fail)
            if one is not None and one != ids[:1]:
                fail(f"limit 1 gave {one}, want the first sample {ids[:1]}")
            # Early stop: take one sample and close; the stream must end.
            done = threading.Event()

            def first() -> None:
                gen = task.samples(0)
                next(gen, None)
                gen.close()
                done.set()

            threading.Thread(target=first, daemon=True).start()
            if not done.wait(30):
                fail("samples did not stop 30s after the consumer stopped")
    fail.raise_if_any()


@dataclass
class ScorerCase:
    """One expectation for check_scorer: sample and prediction scored to
    want (within tol), or invalid."""

    name: str
    sample: Sample
    prediction: str
    want: float = 0.0
    invalid: bool = False
    tol: float = 1e-9


def check_scorer(plugin: Plugin, name: str, cases: List[ScorerCase], options: Any = None) -> None:
    """Score every case one at a time (unary), then all at once over the
    Calls stream and in one ScoreBatch (a scorer must give the same answers
    under load), check
    values and details, and, for scorers with aggregate(), that aggregating
    works and counts at most the cases given (sdktest.CheckScorer)."""
    fail = _Problems(f"scorer {name!r}")
    with connect(plugin, "scorer", name, options) as sc:
        seq: List[Optional[Score]] = []
        for c in cases:
            try:
                s = sc.score(c.sample, c.prediction)
            except Exception as e:
                fail(f"{c.name}: score: {e}")
                seq.append(None)
                continue
            seq.append(s)
            if s.invalid != c.invalid:
                fail(f"{c.name}: invalid = {s.invalid}, want {c.invalid}")
            elif not c.invalid and (math.isnan(s.value) or abs(s.value - c.want) > c.tol):
                fail(f"{c.name}: value = {s.value}, want {c.want} (±{c.tol:g})")
        if not fail.items:
            reqs = [pb.ScoreRequest(sample=_wire.sample_to_pb(c.sample), prediction=c.prediction) for c in cases]
            for c, s, p in zip(cases, seq, sc.stream(reqs)):
                if isinstance(p, BaseException):
                    fail(f"{c.name}: score over the Calls stream: {p}")
                elif s is not None and (p.value != s.value or p.invalid != s.invalid):
                    fail(f"{c.name}: the Calls stream gave {p.value} (invalid {p.invalid}), a lone call {s.value} (invalid {s.invalid})")
            for c, s, p in zip(cases, seq, sc.score_batch([(c.sample, c.prediction) for c in cases])):
                if isinstance(p, BaseException):
                    fail(f"{c.name}: ScoreBatch: {p}")
                elif s is not None and (p.value != s.value or p.invalid != s.invalid):
                    fail(f"{c.name}: ScoreBatch gave {p.value} (invalid {p.invalid}), a lone call {s.value} (invalid {s.invalid})")
            if "aggregator" in sc.capabilities:
                try:
                    a = sc.aggregate([s for s in seq if s is not None])
                    if not 0 <= a.n <= len(cases):
                        fail(f"aggregate: n = {a.n} over {len(cases)} scores")
                    if not 0 <= a.invalid <= len(cases):
                        fail(f"aggregate: invalid = {a.invalid} over {len(cases)} scores")
                    if math.isnan(a.value) and a.n > 0:
                        fail(f"aggregate: value is NaN over {a.n} scores")
                except Unsupported:
                    pass
                except Exception as e:
                    fail(f"aggregate: {e}")
    fail.raise_if_any()


def check_model(plugin: Plugin, name: str, requests: List[GenerateRequest], options: Any = None) -> None:
    """Every request answered with text and non-negative usage, one at a
    time and all at once over the Calls stream (a model must be safe for
    concurrent use)."""
    fail = _Problems(f"model {name!r}")
    with connect(plugin, "model", name, options) as m:
        for i, r in enumerate(requests):
            try:
                g = m.generate(r)
                if g.prompt_tokens < 0 or g.completion_tokens < 0:
                    fail(f"request {i}: negative usage {g.prompt_tokens}/{g.completion_tokens}")
            except Exception as e:
                fail(f"request {i}: generate: {e}")
        for i, g in enumerate(m.stream(list(requests))):
            if isinstance(g, BaseException):
                fail(f"request {i}: generate over the Calls stream: {g}")
    fail.raise_if_any()


def check_retriever(plugin: Plugin, name: str, samples: List[Sample], options: Any = None) -> None:
    """Every sample retrieved, chunk offsets inside the original context and
    scores finite, one at a time and all at once over the Calls stream."""
    fail = _Problems(f"retriever {name!r}")
    with connect(plugin, "retriever", name, options) as rt:
        for s in samples:
            try:
                r = rt.retrieve(s)
            except Exception as e:
                fail(f"sample {s.id!r}: retrieve: {e}")
                continue
            size = len(s.context.encode())
            for c in r.chunks:
                if not 0 <= c.offset <= size:
                    fail(f"sample {s.id!r}: chunk {c.id} offset {c.offset} outside the context's {size} bytes")
                if math.isnan(c.score):
                    fail(f"sample {s.id!r}: chunk {c.id} score is NaN")
        for s, r in zip(samples, rt.stream(list(samples))):
            if isinstance(r, BaseException):
                fail(f"sample {s.id!r}: retrieve over the Calls stream: {r}")
    fail.raise_if_any()


