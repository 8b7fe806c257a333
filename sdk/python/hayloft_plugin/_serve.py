"""The plugin side of hayloft.plugin.v1 over go-plugin's gRPC transport.

What a Go plugin gets from hashicorp/go-plugin and sdk/plugin, done for a
Python program: the cookie check and the handshake line, a unix socket, the
GRPCController (Shutdown), GRPCStdio and GRPCBroker services and the health
check go-plugin expects, SIGINT ignored (the host handles Ctrl-C), exit
when the host dies, message limits for 1M-token contexts, and the hayloft
services themselves with the multiplexed Calls stream and SampleBatches.
"""

from __future__ import annotations

import gc
import logging
import os
import queue
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Iterator, List, Optional, Sequence

from . import _batch, _log, _stdio, _wire
from ._wire import pb
from .errors import ConfigError, PluginError
from .plugin import KINDS, PROTOCOL, Component, Plugin

COOKIE_KEY = "HAYLOFT_PLUGIN"
COOKIE_VALUE = "4c1d0e5b-hayloft-plugin-1b7f"
CORE_PROTOCOL_VERSION = 1
APP_PROTOCOL_VERSION = 1
# One gRPC message either way (sdk/plugin.MaxMessageSize).
MAX_MESSAGE_SIZE = 256 << 20
# One batch message's encoded size; more waits for the next (maxBatchBytes).
MAX_BATCH_BYTES = 4 << 20
# How far a task may run ahead of the stream (sampleQueue).
SAMPLE_QUEUE = 16

USAGE = """usage: {prog} describe
       {prog} start <kind> <name>

This is a hayloft plugin ({protocol}); hayloft starts it itself.
"""


def main(plugin: Plugin, argv: Optional[List[str]] = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 3 and args[0] == "start":
        serve(plugin, args[1], args[2])
        _exit(0)
    if len(args) == 3 and args[0] == "worker":
        from ._workers import worker_main

        collect_from_here()
        worker_main(plugin, args[1], args[2])
        _exit(0)
    _stdio.route_to_stderr()
    prog = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else plugin.name
    _stdio.write_stderr(USAGE.format(prog=prog, protocol=PROTOCOL).encode())
    _exit(2)


_exit = _stdio.exit_now
fail = _stdio.fail


def collect_from_here() -> None:
    """Turn the cyclic garbage collector on, with what start-up built left
    out of its passes. The entry points (a packed plugin's __main__,
    `python3 -m hayloft_plugin run`) turn it off before the first import:
    importing grpc, the SDK and the plugin allocates much and frees almost
    nothing, and the passes it triggered were a few milliseconds of a
    ~80 ms start. What start-up built (modules, classes, the plugin's
    tables) lives as long as the process, so gc.freeze keeps every later
    pass from walking it again, which a scorer's many short-lived objects
    trigger. A plugin that wants the collector off while it serves can
    turn it off in its component's factory, which runs after this."""
    gc.freeze()
    gc.enable()


def watch_parent(log: logging.Logger) -> None:
    """Exit when the parent dies. go-plugin kills its plugins on a clean
    shutdown, but a host killed with SIGKILL gets no say, and the plugin
    would be reparented and live on."""
    ppid = os.getppid()
    if ppid <= 1:
        return

    def loop() -> None:
        while True:
            time.sleep(0.2)
            if os.getppid() != ppid:
                log.warning("parent process is gone; exiting", extra={"parent_pid": ppid})
                _exit(3)

    threading.Thread(target=loop, name="hayloft-parent-watch", daemon=True).start()


def serve(plugin: Plugin, kind: str, name: str) -> None:
    """Serve kind/name to the hayloft that started this process until it
    shuts the plugin down or dies."""
    if os.environ.get(COOKIE_KEY) != COOKIE_VALUE:
        fail("This program is a hayloft plugin; hayloft starts it itself "
             f"(the {COOKIE_KEY} handshake variable is not set).")
    if kind not in KINDS or plugin.registration(kind, name) is None:
        fail(f"{plugin.name}: no {kind} {name!r} in plugin {plugin.name!r}")
    if os.environ.get("PLUGIN_CLIENT_CERT"):
        fail(f"{plugin.name}: the host asked for go-plugin's automatic mTLS, which the Python SDK does not offer")
    st = _stdio.protect()
    # Ctrl-C reaches the whole process group; the host decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log = _log.setup(plugin.name)
    watch_parent(log)

    from . import _lazy

    _lazy.defer_grpc_asyncio()
    import grpc

    _lazy.release()

    done = threading.Event()
    server = grpc.server(
        ThreadPoolExecutor(max_workers=64, thread_name_prefix="hayloft-grpc"),
        options=_channel_options(),
    )
    state = State(plugin, log, kind, name)
    register(server, state)
    server.add_generic_rpc_handlers(_goplugin_handlers(server, done, st, state.broker))

    sockdir = _socket_dir()
    path = os.path.join(sockdir, "sock")
    try:
        server.add_insecure_port("unix:" + path)
        server.start()
        _stdio.write_stdout(f"{CORE_PROTOCOL_VERSION}|{APP_PROTOCOL_VERSION}|unix|{path}|grpc|\n".encode())
        collect_from_here()
        log.debug("plugin address", extra={"network": "unix", "address": path})
        done.wait()
        # No server.stop: the process exits next, which ends every call
        # and the connection at once, and the host waits for that exit
        # (stopping the server first added 0.5-7 ms to it).
        state.shutdown()
    finally:
        _remove_socket_dir(sockdir, path)


def _remove_socket_dir(sockdir: str, path: str) -> None:
    try:
        if os.path.exists(path):
            os.remove(path)
        os.rmdir(sockdir)
    except OSError:
        import shutil

        shutil.rmtree(sockdir, ignore_errors=True)


def _socket_dir() -> str:
    """A new private directory for the socket, where go-plugin puts its own
    (PLUGIN_UNIX_SOCKET_DIR, else the temporary directory). Not tempfile:
    it imports random and shutil, a few milliseconds of start-up."""
    base = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or os.environ.get("TMPDIR") or "/tmp"
    for _ in range(100):
        d = os.path.join(base, "plugin" + os.urandom(6).hex())
        try:
            os.mkdir(d, 0o700)
            return d
        except FileExistsError:
            continue
    raise OSError(f"no new directory for the plugin's socket in {base}")


def _channel_options() -> List[Any]:
    return [("grpc.max_receive_message_length", MAX_MESSAGE_SIZE), ("grpc.max_send_message_length", MAX_MESSAGE_SIZE)]


# The hayloft services a plugin serves, as plugin_pb2_grpc would add them:
# per service, each method's name, request message and shape.
# tests/test_serve.py holds this to the generated descriptors.
SERVICES = {
    "Lifecycle": (("Configure", "ConfigureRequest", "unary_unary"), ("Validate", "ValidateRequest", "unary_unary"),
                  ("Close", "CloseRequest", "unary_unary")),
    "Task": (("Samples", "SamplesRequest", "unary_stream"), ("SampleBatches", "SamplesRequest", "unary_stream"),
             ("CountSamples", "SamplesRequest", "unary_unary")),
    "Model": (("Generate", "GenerateRequest", "unary_unary"), ("Tokenize", "TokenizeRequest", "unary_unary")),
    "Scorer": (("Score", "ScoreRequest", "unary_unary"), ("Aggregate", "AggregateRequest", "unary_unary"),
               ("ScoreBatch", "ScoreBatchRequest", "unary_unary")),
    "Retriever": (("Retrieve", "RetrieveRequest", "unary_unary"),),
    "Calls": (("Stream", "CallBatch", "stream_stream"),),
}

# Methods served on raw bytes, without the protobuf runtime: all a scorer
# under `hayloft score` is asked, so its process never imports protobuf.
RAW = {("Lifecycle", "Configure"), ("Lifecycle", "Close"), ("Scorer", "ScoreBatch"), ("Calls", "Stream")}

# The protocol feature this SDK serves, reported by a scorer that scores on
# the stream's thread: ScoreBatch calls on the Calls stream, which spare
# both sides a gRPC call per batch.
FEATURE_SCORE_BATCH_CALL = "calls.score_batch"


def _parser(message: str) -> Any:
    return lambda data: getattr(pb, message).FromString(data)


def _serialize(msg: Any) -> bytes:
    return msg.SerializeToString()


def register(server: Any, state: "State") -> None:
    """Add the hayloft services to a grpc server. Their messages are
    parsed with classes looked up at the first call, not here, so serving
    starts without the protobuf runtime."""
    import grpc

    impls = {"Lifecycle": _Lifecycle(state), "Task": _Task(state), "Model": _Model(state), "Scorer": _Scorer(state),
             "Retriever": _Retriever(state), "Calls": _Calls(state)}
    handlers = []
    for service, methods in SERVICES.items():
        table = {}
        for name, request, shape in methods:
            make = getattr(grpc, shape + "_rpc_method_handler")
            fn = getattr(impls[service], name)
            if (service, name) in RAW:
                table[name] = make(fn)
            else:
                table[name] = make(fn, request_deserializer=_parser(request), response_serializer=_serialize)
        handlers.append(grpc.method_handlers_generic_handler("hayloft.plugin.v1." + service, table))
    server.add_generic_rpc_handlers(tuple(handlers))


# ---- go-plugin's own services ----


def _goplugin_handlers(server: Any, done: threading.Event, st: Any, broker: Any) -> Any:
    """GRPCController, GRPCStdio, GRPCBroker and grpc.health.v1, served with
    raw bytes: their messages are one or two fields, encoded here by hand."""
    import grpc

    ident = dict(request_deserializer=None, response_serializer=None)

    def shutdown(_req: bytes, ctx: Any) -> bytes:
        # Answer first, then stop: the host waits for the reply, and the
        # callback runs once it is sent.
        if not ctx.add_callback(done.set):
            done.set()
        return b""

    def stream_stdio(_req: bytes, ctx: Any) -> Iterator[bytes]:
        q: "queue.Queue[Optional[bytes]]" = queue.Queue()

        def sink(channel: int, data: bytes) -> None:
            # StdioData{channel = 1 (varint), data = 2 (bytes)}
            q.put(b"\x08" + bytes([channel]) + _wire._field_bytes(2, data))

        st.attach(sink)
        ctx.add_callback(lambda: q.put(None))
        try:
            while True:
                msg = q.get()
                if msg is None:
                    return
                yield msg
        finally:
            st.attach(None)

    def start_stream(req_iter: Iterator[bytes], ctx: Any) -> Iterator[bytes]:
        # The host announces the services it offers (the embedding cache)
        # on this stream; this SDK offers the host none. Open for as long as
        # the host keeps it, as go-plugin's server keeps it.
        for info in req_iter:
            broker.offer(info)
        return iter(())

    def health_check(_req: bytes, _ctx: Any) -> bytes:
        return b"\x08\x01"  # HealthCheckResponse{status: SERVING}

    return (
        grpc.method_handlers_generic_handler("plugin.GRPCController", {
            "Shutdown": grpc.unary_unary_rpc_method_handler(shutdown, **ident)}),
        grpc.method_handlers_generic_handler("plugin.GRPCStdio", {
            "StreamStdio": grpc.unary_stream_rpc_method_handler(stream_stdio, **ident)}),
        grpc.method_handlers_generic_handler("plugin.GRPCBroker", {
            "StartStream": grpc.stream_stream_rpc_method_handler(start_stream, **ident)}),
        grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
            "Check": grpc.unary_unary_rpc_method_handler(health_check, **ident)}),
    )


# ---- hayloft's services ----


class State:
    """The one component this process serves, built by Configure."""

    def __init__(self, plugin: Plugin, log: logging.Logger, kind: str = "", name: str = ""):
        self.plugin = plugin
        self.log = log
        self.kind, self.name = kind, name
        self.mu = threading.Lock()
        self.comp: Optional[Component] = None
        self.runner: Any = None
        self.threads: Optional[ThreadPoolExecutor] = None
        self.workers: Any = None
        self.options = b""
        from .cache import Broker

        self.broker = Broker()
        self.cache: Any = None  # the host's EmbeddingCache, when it offers one

    def component(self, kind: str, ctx: Any) -> Component:
        with self.mu:
            c = self.comp
        if c is None:
            abort(ctx, pb.Error(message="plugin component not configured: call Configure first"), "FAILED_PRECONDITION")
        if c.kind != kind:
            abort(ctx, pb.Error(kind=pb.Error.KIND_UNSUPPORTED,
                                message=f"the configured component is a {c.kind}, not a {kind}: unsupported"))
        return c

    def fail(self, ctx: Any, method: str, e: BaseException) -> None:
        abort(ctx, self.runner.error(method, e) if self.runner else _wire.error_to_pb(e))

    def shutdown(self) -> None:
        with self.mu:
            workers, threads, cache = self.workers, self.threads, self.cache
            self.workers = self.threads = self.cache = None
        if cache:
            cache.close()
        if workers:
            workers.close()
        if threads:
            threads.shutdown(wait=False)


def abort(ctx: Any, e: Any, code_name: str = "") -> None:
    """End the call with e as the gRPC status detail, as the Go SDK does."""
    import grpc

    code = grpc.StatusCode[code_name or _wire.status_code_name(e)]
    ctx.set_trailing_metadata((("grpc-status-details-bin", _wire.status_details(code.value[0], e)),))
    ctx.abort(code, e.message)


class ConfigureRequest:
    """The fields of a hayloft.plugin.v1.ConfigureRequest (kind = 1,
    name = 2, options_json = 3, protocol = 4, check_only = 5,
    embedding_cache = 6); tests/test_serve.py checks them against the
    protobuf runtime."""

    __slots__ = ("kind", "name", "options_json", "protocol", "check_only", "embedding_cache")

    def __init__(self, kind: str = "", name: str = "", options_json: bytes = b"", protocol: str = "",
                 check_only: bool = False, embedding_cache: int = 0):
        self.kind, self.name, self.options_json, self.protocol = kind, name, options_json, protocol
        self.check_only, self.embedding_cache = check_only, embedding_cache

    @classmethod
    def parse(cls, raw: bytes) -> "ConfigureRequest":
        f = _batch.fields(raw)
        return cls(kind=_text(f.get(1)), name=_text(f.get(2)), options_json=_bytes(f.get(3)),
                   protocol=_text(f.get(4)), check_only=bool(_int(f.get(5))), embedding_cache=_int(f.get(6)) & 0xFFFFFFFF)


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else ""


def _bytes(v: Any) -> bytes:
    return v if isinstance(v, bytes) else b""


def _int(v: Any) -> int:
    return v if isinstance(v, int) else 0


def configure_response(plugin_name: str, plugin_version: str, protocol: str, capabilities: List[str],
                       features: List[str], served_model: str = "", transport_options: Sequence[str] = ()) -> bytes:
    """An encoded ConfigureResponse (plugin_name = 1, plugin_version = 2,
    protocol = 3, capabilities = 4, features = 5, served_model = 6,
    transport_options = 7)."""
    out = b""
    for num, v in ((1, plugin_name), (2, plugin_version), (3, protocol)):
        if v:
            out += _wire._field_bytes(num, v.encode())
    for c in capabilities:
        out += _wire._field_bytes(4, c.encode())
    for f in features:
        out += _wire._field_bytes(5, f.encode())
    if served_model:
        out += _wire._field_bytes(6, served_model.encode())
    for o in transport_options:
        out += _wire._field_bytes(7, o.encode())
    return out


class _Lifecycle:
    def __init__(self, s: State):
        self.s = s

    def Configure(self, raw: bytes, ctx: Any) -> bytes:
        """Served on bytes (RAW): a ConfigureRequest's few fields are read
        and its response written by hand."""
        from ._runner import Runner

        try:
            req = ConfigureRequest.parse(raw)
        except (_batch.DecodeError, UnicodeDecodeError) as e:
            abort(ctx, pb.Error(message=f"Configure: malformed request: {e}"), "INVALID_ARGUMENT")
        s = self.s
        if req.protocol and req.protocol != PROTOCOL:
            abort(ctx, pb.Error(message=f"plugin {s.plugin.name!r} speaks {PROTOCOL}, this hayloft speaks {req.protocol}"),
                  "FAILED_PRECONDITION")
        if s.kind and (req.kind != s.kind or req.name != s.name):
            abort(ctx, pb.Error(message=f"this process serves {s.kind} {s.name!r}, not {req.kind} {req.name!r}"),
                  "FAILED_PRECONDITION")
        with s.mu:
            if s.comp is not None:
                abort(ctx, pb.Error(message=f"plugin component already configured as {s.comp.kind}"), "FAILED_PRECONDITION")
            cache = None
            if req.embedding_cache and not req.check_only:
                try:
                    cache = s.broker.dial_cache(req.embedding_cache, _channel_options())
                except Exception as e:
                    abort(ctx, _wire.error_to_pb(PluginError(f"dial the host's embedding cache: {e}")))
            comp = None
            try:
                comp = s.plugin.build(req.kind, req.name, req.options_json, provision=not req.check_only, cache=cache)
                # Read once, here, as the Go SDK does: a model learns what it
                # serves when provisioned, and the host keys its answers by
                # what this response says.
                served, transport = comp.served_model(), comp.transport_options()
            except Exception as e:
                if comp is not None:
                    # Built and provisioned, then refused: release what
                    # provision() took, as Close would have.
                    try:
                        comp.close()
                    except Exception as ce:
                        s.log.warning("close %s %r after a failed Configure: %s", req.kind, req.name, ce)
                if cache is not None:
                    cache.close()
                if not isinstance(e, PluginError):
                    s.log.error("exception building %s %r", req.kind, req.name, exc_info=e)
                abort(ctx, _wire.error_to_pb(e))
            s.cache = cache
            reg = comp.reg
            if not req.check_only:
                if reg.processes > 0:
                    from ._workers import WorkerPool

                    try:
                        s.workers = WorkerPool(reg.processes, s.plugin, req.kind, req.name, bytes(req.options_json), self._push_nowhere, s.log)
                    except Exception as e:
                        abort(ctx, _wire.error_to_pb(ConfigError("", f"start worker processes: {e}")))
                elif reg.threads > 1:
                    s.threads = ThreadPoolExecutor(max_workers=reg.threads, thread_name_prefix=f"hayloft-{reg.kind}")
            s.comp, s.runner = comp, Runner(comp, s.log)
            inline = s.threads is None and s.workers is None
        s.log.debug("configured", extra={"kind": req.kind, "name": req.name})
        # A scorer with threads or processes keeps ScoreBatch's unary RPC,
        # which spreads a batch over them.
        features = [FEATURE_SCORE_BATCH_CALL] if comp.kind == "scorer" and inline else []
        return configure_response(s.plugin.name, s.plugin.version, PROTOCOL, comp.capabilities(), features,
                                  served, transport)

    @staticmethod
    def _push_nowhere(_reply: Any) -> None:
        # Replaced per stream: a WorkerPool's replies go to the stream whose
        # call it is (see _Calls).
        pass

    def Validate(self, req: Any, ctx: Any) -> Any:
        s = self.s
        with s.mu:
            c = s.comp
        if c is None:
            abort(ctx, pb.Error(message="plugin component not configured: call Configure first"), "FAILED_PRECONDITION")
        try:
            c.validate()
        except Exception as e:
            s.fail(ctx, "validate", e)
        return pb.ValidateResponse()

    def Close(self, _raw: bytes, ctx: Any) -> bytes:
        """Served on bytes (RAW): CloseRequest and CloseResponse are
        empty."""
        s = self.s
        with s.mu:
            c, s.comp = s.comp, None
        s.shutdown()
        if c is not None:
            try:
                c.close()
            except Exception as e:
                s.fail(ctx, "close", e)
        return b""


class _Task:
    def __init__(self, s: State):
        self.s = s

    def _items(self, comp: Component, limit: int, stop: threading.Event) -> Iterator[Any]:
        """The task's items in wire form; an exception ends the stream after
        it is sent as the last item's error."""
        it = comp.samples(limit)
        try:
            while not stop.is_set():
                try:
                    item = next(it)
                except StopIteration:
                    return
                except Exception as e:
                    yield pb.SamplesResponse(error=self.s.runner.error("samples", e))
                    return
                if isinstance(item, BaseException):
                    yield pb.SamplesResponse(error=self.s.runner.error("samples", item))
                    continue
                try:
                    yield pb.SamplesResponse(sample=_wire.sample_to_pb(item))
                except Exception as e:
                    yield pb.SamplesResponse(error=self.s.runner.error("samples", e))
        finally:
            close = getattr(it, "close", None)
            if close:
                close()

    def Samples(self, req: Any, ctx: Any) -> Iterator[Any]:
        comp = self.s.component("task", ctx)
        stop = threading.Event()
        ctx.add_callback(stop.set)
        yield from self._items(comp, req.limit, stop)

    def SampleBatches(self, req: Any, ctx: Any) -> Iterator[Any]:
        comp = self.s.component("task", ctx)
        stop = threading.Event()
        ctx.add_callback(stop.set)
        items: "queue.Queue[Any]" = queue.Queue(maxsize=SAMPLE_QUEUE)
        end = object()

        def produce() -> None:
            try:
                for msg in self._items(comp, req.limit, stop):
                    while not stop.is_set():
                        try:
                            items.put(msg, timeout=0.1)
                            break
                        except queue.Full:
                            continue
            finally:
                items.put(end)

        threading.Thread(target=produce, name="hayloft-task", daemon=True).start()
        try:
            while True:
                msg = items.get()
                if msg is end:
                    return
                batch, size = [msg], msg.ByteSize()
                while size < MAX_BATCH_BYTES:
                    try:
                        m = items.get_nowait()
                    except queue.Empty:
                        break
                    if m is end:
                        yield pb.SampleBatch(items=batch)
                        return
                    batch.append(m)
                    size += m.ByteSize()
                yield pb.SampleBatch(items=batch)
        finally:
            stop.set()

    def CountSamples(self, req: Any, ctx: Any) -> Any:
        comp = self.s.component("task", ctx)
        try:
            n = comp.count(req.limit)
        except Exception as e:
            self.s.fail(ctx, "count", e)
        if n is None:
            abort(ctx, pb.Error(kind=pb.Error.KIND_UNSUPPORTED, message="task cannot count its samples: unsupported"))
        return pb.CountSamplesResponse(count=n)


class _Model:
    def __init__(self, s: State):
        self.s = s

    def Generate(self, req: Any, ctx: Any) -> Any:
        self.s.component("model", ctx)
        try:
            return self.s.runner.generate(req)
        except Exception as e:
            abort(ctx, self.s.runner.call_error("generate", e))

    def Tokenize(self, req: Any, ctx: Any) -> Any:
        comp = self.s.component("model", ctx)
        try:
            t = comp.tokenize(list(req.texts))
        except Exception as e:
            self.s.fail(ctx, "tokenize", e)
        if t is None:
            abort(ctx, pb.Error(kind=pb.Error.KIND_UNSUPPORTED, message="model has no tokenizer: unsupported"))
        return _wire.tokens_to_pb(t)


class _Scorer:
    def __init__(self, s: State):
        self.s = s

    def Score(self, req: Any, ctx: Any) -> Any:
        self.s.component("scorer", ctx)
        try:
            return self.s.runner.score(req)
        except Exception as e:
            abort(ctx, self.s.runner.call_error("score", e))

    def ScoreBatch(self, raw: bytes, ctx: Any) -> bytes:
        """Many requests in one message; each result answers the request at
        its index, and a failing request fails alone. They run where the
        Calls stream would run them: on this thread, in the scorer's
        threads, or in its worker processes. Served on raw bytes (see
        _batch): the cheap path for the many small requests of `hayloft
        score`."""
        s = self.s
        comp = s.component("scorer", ctx)
        with s.mu:
            runner, threads, workers = s.runner, s.threads, s.workers
        if workers is not None:
            return self._in_workers(pb.ScoreBatchRequest.FromString(raw), workers).SerializeToString()
        try:
            if threads is None:
                return runner.score_batch(raw)
            items = _batch.decode_score_batch(raw, _wire._decode_map)
        except (_batch.DecodeError, UnicodeDecodeError) as e:
            abort(ctx, pb.Error(message=f"ScoreBatch: malformed request: {e}"), "INVALID_ARGUMENT")
        encode_map = _wire._encode_map

        def fail(e: BaseException) -> bytes:
            return runner.call_error("score", e).SerializeToString()

        score = comp.score

        def one(item: Any) -> Any:
            sample, prediction = item
            try:
                if isinstance(sample, BaseException):
                    raise sample
                return True, _batch.encode_score(score(sample, prediction), encode_map)
            except Exception as e:
                return False, fail(e)

        return _batch.encode_results(list(threads.map(one, items)))

    @staticmethod
    def _in_workers(req: Any, workers: Any) -> Any:
        calls = [pb.Call(id=i, score=r) for i, r in enumerate(req.requests)]
        replies: List[Any] = [None] * len(calls)
        left = threading.Semaphore(0)

        def done(r: Any) -> None:
            replies[r.id] = r
            left.release()

        for c in calls:
            workers.submit(c, done)
        for _ in calls:
            left.acquire()
        out = pb.ScoreBatchResponse()
        for r in replies:
            res = out.results.add()
            if r.HasField("error"):
                res.error.CopyFrom(r.error)
            else:
                res.response.CopyFrom(r.score)
        return out

    def Aggregate(self, req: Any, ctx: Any) -> Any:
        comp = self.s.component("scorer", ctx)
        try:
            a = comp.aggregate([_wire.score_from_pb(x) for x in req.scores])
        except Exception as e:
            self.s.fail(ctx, "aggregate", e)
        if a is None:
            abort(ctx, pb.Error(kind=pb.Error.KIND_UNSUPPORTED, message="scorer has no aggregator: unsupported"))
        return _wire.aggregate_to_pb(a)


class _Retriever:
    def __init__(self, s: State):
        self.s = s

    def Retrieve(self, req: Any, ctx: Any) -> Any:
        self.s.component("retriever", ctx)
        try:
            return self.s.runner.retrieve(req)
        except Exception as e:
            abort(ctx, self.s.runner.call_error("retrieve", e))


class _Replies:
    """Finished calls' replies, waiting for the sending loop, and a count of
    calls still running."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.q: List[Any] = []
        self.running = 0
        self.input_done = False

    def begin(self) -> None:
        with self.cond:
            self.running += 1

    def push(self, r: Any) -> None:
        with self.cond:
            self.running -= 1
            self.q.append(r)
            self.cond.notify()

    def close_input(self) -> None:
        with self.cond:
            self.input_done = True
            self.cond.notify()

    def take(self) -> "tuple[List[Any], bool]":
        """Up to MAX_BATCH_BYTES of replies (at least one), and whether the
        stream is finished once they are sent."""
        with self.cond:
            while not self.q and not (self.input_done and self.running == 0):
                self.cond.wait()
            n, size = 0, 0
            while n < len(self.q):
                size += self.q[n].ByteSize() if len(self.q) > 1 else 0
                if n > 0 and size > MAX_BATCH_BYTES:
                    break
                n += 1
            batch, self.q = self.q[:n], self.q[n:]
            return batch, (not self.q and self.input_done and self.running == 0)


def _split(replies: List[bytes]) -> Iterator[List[bytes]]:
    """Encoded replies in runs of at most MAX_BATCH_BYTES (at least one
    each)."""
    while replies:
        n, size = 1, len(replies[0])
        while n < len(replies) and size + len(replies[n]) <= MAX_BATCH_BYTES:
            size += len(replies[n])
            n += 1
        yield replies[:n]
        replies = replies[n:]


class _Inbox:
    """Calls received and not yet run, as _batch.calls gives them. A reader
    thread fills it while the stream's thread runs what has queued: at a
    high rate many messages' calls run and are answered together, as the
    host batches its side."""

    def __init__(self, log: logging.Logger) -> None:
        self.cond = threading.Condition()
        self.calls: List[Any] = []
        self.closed = False
        self.log = log

    def fill(self, request_iterator: Iterator[bytes]) -> None:
        try:
            for raw in request_iterator:
                calls = [c for c in _batch.calls(raw) if not c[2]]  # cancels: Python cannot stop a running call
                with self.cond:
                    self.calls.extend(calls)
                    self.cond.notify()
        except _batch.DecodeError as e:
            self.log.error("malformed CallBatch from the host; the Calls stream ends", extra={"error": str(e)})
        except Exception:
            pass  # the host went away; the stream's end says so
        finally:
            with self.cond:
                self.closed = True
                self.cond.notify()

    def take(self) -> List[Any]:
        """Every call queued, waiting for one; [] once the host is done."""
        with self.cond:
            while not self.calls and not self.closed:
                self.cond.wait()
            calls, self.calls = self.calls, []
            return calls


class _Calls:
    """The multiplexed Calls stream: calls arrive in batches and run on the
    stream's own thread (components with threads=1), in a thread pool, or
    in the worker processes; replies go back batched in completion order.
    Served on bytes (RAW): on the stream's own thread a scorer's ScoreBatch
    calls never meet the protobuf runtime (Runner.run_raw)."""

    def __init__(self, s: State):
        self.s = s

    @staticmethod
    def _inline(runner: Any, request_iterator: Iterator[bytes], log: logging.Logger) -> Iterator[bytes]:
        inbox = _Inbox(log)
        threading.Thread(target=inbox.fill, args=(request_iterator,), name="hayloft-calls", daemon=True).start()
        while True:
            calls = inbox.take()
            if not calls:
                return
            done: List[bytes] = []
            for cid, deadline, _, batch, call in calls:
                done.append(runner.run_raw(cid, deadline, batch, call))
                if batch is not None:
                    # A batch's reply goes out at once: the host writes
                    # its lines while the next batch is scored.
                    for replies in _split(done):
                        yield _batch.reply_batch(replies)
                    done = []
            for replies in _split(done):
                yield _batch.reply_batch(replies)

    def Stream(self, request_iterator: Iterator[bytes], ctx: Any) -> Iterator[bytes]:
        s = self.s
        with s.mu:
            runner, threads, workers = s.runner, s.threads, s.workers
        if runner is None:
            abort(ctx, pb.Error(message="plugin component not configured: call Configure first"), "FAILED_PRECONDITION")
        if workers is None and threads is None:
            yield from self._inline(runner, request_iterator, s.log)
            return
        for replies in self._pooled(runner, threads, workers, (pb.CallBatch.FromString(b) for b in request_iterator)):
            yield pb.ReplyBatch(replies=replies).SerializeToString()

    @staticmethod
    def _pooled(runner: Any, threads: Any, workers: Any, request_iterator: Iterator[Any]) -> Iterator[List[Any]]:
        out = _Replies()
        if workers is not None:
            workers.push = out.push

        def run_into(call: Any) -> None:
            out.push(runner.run(call))

        def read() -> None:
            try:
                for batch in request_iterator:
                    for call in batch.calls:
                        if call.cancel:
                            continue  # Python cannot stop a running call; the host drops its reply
                        out.begin()
                        if workers is not None:
                            workers.submit(call)
                        else:
                            threads.submit(run_into, call)
            except Exception:
                pass  # the host went away; the stream's end says so
            finally:
                out.close_input()

        threading.Thread(target=read, name="hayloft-calls", daemon=True).start()
        while True:
            batch, finished = out.take()
            if batch:
                yield batch
            if finished:
                return
