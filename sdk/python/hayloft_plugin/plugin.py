"""Plugin: the registry of the components one plugin program serves, and
the adapters that give every component the one shape the server calls.

A component is whatever its factory returns; the server only needs a few
methods of it, looked up by name (see the README's "Write a plugin in
Python"): a task has samples(limit) (or is that callable), a scorer
score(sample, prediction) (or is that callable), a model generate(request),
a retriever retrieve(sample). Optional methods: count, aggregate, tokenize,
provision, validate, close; optional attributes reads_context and, for a
model, served_model and transport_options (plain attributes or properties,
as reads_context: they describe the component, the host calls nothing).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import sys
import typing
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional

from . import options as _options
from .errors import ConfigError, PluginError, Unsupported
from .types import Aggregate, Generation, GenerateRequest, Retrieval, Sample, Score, Tokens

__all__ = ["Plugin", "KINDS"]

KINDS = ("task", "model", "scorer", "retriever")
PROTOCOL = "hayloft.plugin.v1"

# Capability names, as package sdk/plugin reports them.
CAP_AGGREGATOR = "aggregator"
CAP_TOKENIZER = "tokenizer"
CAP_VALIDATOR = "validator"
CAP_CLOSER = "closer"
CAP_SAMPLE = "sample"


@dataclass
class Registration:
    """One component a plugin serves, as registered."""

    kind: str
    name: str
    factory: Callable[..., Any]
    # How the factory takes its options: a dataclass to decode into, dict
    # for the raw object, or None for a factory without parameters.
    options: Any
    threads: int
    processes: int


def _options_of(kind: str, name: str, factory: Callable[..., Any]) -> Any:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return dict
    params = [p for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params:
        return None
    if len(params) > 1 and any(p.default is p.empty for p in params[1:]):
        raise TypeError(f"{kind} {name!r}: the factory must take one argument, the options")
    ann = params[0].annotation
    if isinstance(ann, str) or ann is params[0].empty:
        try:
            ann = typing.get_type_hints(factory).get(params[0].name, dict)
        except Exception:  # an annotation that does not resolve: take the raw dict
            ann = dict
    if dataclasses.is_dataclass(ann):
        return ann
    return dict


class Plugin:
    """The components one plugin program serves.

        plugin = Plugin("acme", "1.0.0")

        @plugin.scorer("numeric")
        def numeric(opts: NumericOptions):
            return Numeric(opts)

        if __name__ == "__main__":
            plugin.main()
    """

    def __init__(self, name: str, version: str):
        if not name:
            raise ValueError("Plugin needs a name")
        self.name = name
        self.version = version
        # Where the plugin is defined, so worker processes can import it.
        self.module = sys._getframe(1).f_globals.get("__name__", "__main__")
        self._reg: Dict[tuple, Registration] = {}

    def _register(self, kind: str, name: str, threads: int, processes: int) -> Callable:
        if not name:
            raise ValueError(f"register {kind} with an empty name")
        if threads < 1 or processes < 0:
            raise ValueError(f"{kind} {name!r}: threads must be at least 1 and processes not negative")

        def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
            if (kind, name) in self._reg:
                raise ValueError(f"{kind} {name!r} registered twice")
            self._reg[(kind, name)] = Registration(kind, name, factory, _options_of(kind, name, factory), threads, processes)
            return factory

        return deco

    def task(self, name: str) -> Callable:
        """Register a task factory: factory(options) returns an object with
        samples(limit) yielding Samples (or the generator function itself)."""
        return self._register("task", name, 1, 0)

    def scorer(self, name: str, *, threads: int = 1, processes: int = 0) -> Callable:
        """Register a scorer factory: factory(options) returns an object with
        score(sample, prediction) -> Score or a number (or that function).

        threads: calls scored at once in threads; the default 1 scores on
        the thread that reads the calls, which is fastest for a scorer that
        does not wait on I/O. processes: scorer worker processes, for
        CPU-bound scorers (one GIL serialises threads); each builds its own
        component from the same options. Pays above about a millisecond of
        work per sample."""
        return self._register("scorer", name, threads, processes)

    def model(self, name: str, *, threads: int = 64) -> Callable:
        """Register a model factory: factory(options) returns an object with
        generate(request) -> Generation or str. hayloft bounds how many
        requests are in flight (max_concurrency); threads bounds this side.
        Optional: tokenize(texts), and the attributes served_model (a str)
        and transport_options (option names), which refine the key hayloft
        journals the model's answers under (Component.served_model)."""
        return self._register("model", name, threads, 0)

    def retriever(self, name: str, *, threads: int = 8) -> Callable:
        """Register a retriever factory: factory(options) returns an object
        with retrieve(sample) -> Retrieval or str (the new context)."""
        return self._register("retriever", name, threads, 0)

    def components(self) -> List[Dict[str, str]]:
        """What the plugin serves, sorted by kind then name, as `describe`
        prints it."""
        keys = sorted(self._reg, key=lambda k: (KINDS.index(k[0]), k[1]))
        return [{"kind": k, "name": n} for k, n in keys]

    def describe(self) -> Dict[str, Any]:
        return {"name": self.name, "version": self.version, "protocol": PROTOCOL, "components": self.components()}

    def registration(self, kind: str, name: str) -> Optional[Registration]:
        return self._reg.get((kind, name))

    def build(self, kind: str, name: str, options: Any = None, provision: bool = True, cache: Any = None) -> "Component":
        """Build kind/name from options (a dict, JSON bytes or None), as
        Configure does. Option errors are ConfigError; provision=False
        checks the options without calling the component's provision().
        cache, the host's EmbeddingCache, goes to the component's
        use_embedding_cache(cache) before provision(), if it has one."""
        reg = self._reg.get((kind, name))
        if reg is None:
            raise Unsupported(f"plugin {self.name!r} has no {kind} {name!r}")
        raw, base_dir = _parse_options(options)
        if reg.options is None:
            if raw:
                key = next(iter(raw))
                raise ConfigError(key, "unknown option")
            obj = reg.factory()
        elif reg.options is dict:
            obj = reg.factory(raw)
        else:
            obj = reg.factory(_options.decode(raw, reg.options, base_dir))
        comp = Component(reg, obj)
        use = getattr(obj, "use_embedding_cache", None)
        if cache is not None and callable(use):
            use(cache)
        if provision:
            prov = getattr(obj, "provision", None)
            if callable(prov):
                prov()
        return comp

    def main(self, argv: Optional[List[str]] = None) -> None:
        """The plugin program's main: `describe` prints what it serves as
        JSON, `start <kind> <name>` serves that component to the hayloft
        that started the process. Does not return."""
        from . import _stdio

        args = list(sys.argv[1:] if argv is None else argv)
        if args == ["describe"]:
            # Without the server's modules (protobuf, grpc): hayloft runs
            # describe once per plugin file before it starts anything.
            import json

            _stdio.route_to_stderr()
            _stdio.write_stdout((json.dumps(self.describe()) + "\n").encode())
            _stdio.exit_now(0)
        from . import _serve

        _serve.main(self, args)


def _parse_options(options: Any) -> "tuple[Dict[str, Any], str]":
    """The options object, and the config file's directory the host sent
    with it ("" if none)."""
    if options is None:
        return {}, ""
    if isinstance(options, (bytes, bytearray, str)):
        if not options or not str(options if isinstance(options, str) else options.decode()).strip():
            return {}, ""
        import json  # here, not at the top: start-up does not need it

        try:
            options = json.loads(options)
        except ValueError as e:
            raise ConfigError("", f"options are not JSON: {e}") from None
        if options is None:  # JSON null: no options
            return {}, ""
    if not isinstance(options, dict):
        raise ConfigError("", f"options must be an object, got {type(options).__name__}")
    # The host adds the config file's directory under a reserved key; it is
    # no option of the component's, so strict decoding must not see it, and
    # path options (options.path_option) resolve against it.
    base_dir = options.pop(_options.BASE_DIR_KEY, "")
    return options, base_dir if isinstance(base_dir, str) else ""


class Component:
    """One built component in the shape the server calls; its methods check
    what user code returns, so a wrong type is an error naming the component
    instead of a broken reply."""

    def __init__(self, reg: Registration, obj: Any):
        self.reg = reg
        self.kind = reg.kind
        self.name = reg.name
        self.obj = obj
        self.label = f"{reg.kind} {reg.name!r}"
        method = {"task": "samples", "scorer": "score", "model": "generate", "retriever": "retrieve"}[reg.kind]
        fn = getattr(obj, method, None)
        if not callable(fn):
            if reg.kind in ("task", "scorer") and callable(obj) and not inspect.isclass(obj):
                fn = obj
            else:
                raise PluginError(f"{self.label}: the factory returned {type(obj).__name__}, which has no {method}() method")
        self._call = fn
        self._samples_takes_limit = reg.kind == "task" and _takes_argument(fn)

    def _opt(self, name: str) -> Optional[Callable]:
        fn = getattr(self.obj, name, None)
        return fn if callable(fn) else None

    def capabilities(self) -> List[str]:
        caps = []
        if self.kind == "scorer" and self._opt("aggregate"):
            caps.append(CAP_AGGREGATOR)
        if self.kind == "model" and self._opt("tokenize"):
            caps.append(CAP_TOKENIZER)
        if self._opt("validate"):
            caps.append(CAP_VALIDATOR)
        if self._opt("close"):
            caps.append(CAP_CLOSER)
        if self.kind in ("scorer", "model") and getattr(self.obj, "reads_context", False) is True:
            caps.append(CAP_SAMPLE)
        return caps

    def served_model(self) -> str:
        """The model a model component answers as, when it says so (its
        served_model attribute, read once provisioned: the Go SDK's
        sdk.ServedModeler); "" otherwise. hayloft keys the model's answers
        by it when the config names no model, so that a server restarted
        with another model behind the same address is asked again."""
        if self.kind != "model":
            return ""
        v = getattr(self.obj, "served_model", None)
        if v is None:
            return ""
        if not isinstance(v, str):
            raise PluginError(f"{self.label}: served_model {_want_attribute(v, 'str')}")
        return v

    def transport_options(self) -> List[str]:
        """The names of a model component's options that change how a
        request travels (a timeout, retries) but never the answer, when it
        says so (its transport_options attribute: the Go SDK's
        sdk.TransportOptioner); hayloft leaves them out of the model's cache
        key, so raising a timeout does not ask everything again."""
        if self.kind != "model":
            return []
        v = getattr(self.obj, "transport_options", None)
        if v is None:
            return []
        # A str is iterable too: "timeout" would name seven one-letter options.
        if isinstance(v, (str, bytes)) or callable(v) or not isinstance(v, collections.abc.Iterable):
            raise PluginError(f"{self.label}: transport_options {_want_attribute(v, 'a list of str')}")
        names = list(v)
        for i, n in enumerate(names):
            if not isinstance(n, str):
                raise PluginError(f"{self.label}: transport_options[{i}] is {type(n).__name__}, want str")
        # A set's order changes from one process to the next (string hash
        # randomisation): sorted, the response says the same every time.
        return sorted(names) if isinstance(v, (set, frozenset)) else names

    def validate(self) -> None:
        fn = self._opt("validate")
        if fn:
            fn()

    def close(self) -> None:
        fn = self._opt("close")
        if fn:
            fn()

    # ---- task ----

    def samples(self, limit: int) -> Iterator[Any]:
        """The task's samples (or per-item exceptions), at most limit when
        limit > 0, checked."""
        it = self._call(limit) if self._samples_takes_limit else self._call()
        n = 0
        for item in it:
            if limit > 0 and n >= limit:
                break
            n += 1
            if isinstance(item, BaseException):
                yield item
                continue
            if not isinstance(item, Sample):
                raise PluginError(f"{self.label} yielded {type(item).__name__} as item {n - 1}, want a Sample")
            yield item

    def count(self, limit: int) -> Optional[int]:
        fn = self._opt("count")
        if fn is None:
            return None
        n = fn(limit) if _takes_argument(fn) else fn()
        if isinstance(n, bool) or not isinstance(n, int):
            raise PluginError(f"{self.label}: count() returned {type(n).__name__}, want int")
        return min(n, limit) if limit > 0 else n

    # ---- scorer ----

    def score(self, sample: Sample, prediction: str) -> Score:
        return self.as_score(self._call(sample, prediction), sample)

    def as_score(self, r: Any, sample: Sample) -> Score:
        """What the scorer returned for sample, as a Score."""
        if isinstance(r, Score):
            return r
        if isinstance(r, (int, float)):  # bool included: True scores 1
            return Score(value=float(r))
        raise PluginError(f"{self.label} returned {type(r).__name__} for sample {sample.id!r}, want Score or a number")

    def aggregate(self, scores: List[Score]) -> Optional[Aggregate]:
        fn = self._opt("aggregate")
        if fn is None:
            return None
        r = fn(scores)
        if not isinstance(r, Aggregate):
            raise PluginError(f"{self.label}: aggregate() returned {type(r).__name__}, want Aggregate")
        return r

    # ---- model ----

    def generate(self, req: GenerateRequest) -> Generation:
        r = self._call(req)
        if isinstance(r, Generation):
            return r
        if isinstance(r, str):
            return Generation(text=r)
        raise PluginError(f"{self.label} returned {type(r).__name__}, want Generation or str")

    def tokenize(self, texts: List[str]) -> Optional[Tokens]:
        fn = self._opt("tokenize")
        if fn is None:
            return None
        r = fn(texts)
        if not isinstance(r, Tokens):
            raise PluginError(f"{self.label}: tokenize() returned {type(r).__name__}, want Tokens")
        if len(r.ids) != len(texts):
            raise PluginError(f"{self.label}: tokenize() gave {len(r.ids)} id lists for {len(texts)} texts")
        return r

    # ---- retriever ----

    def retrieve(self, sample: Sample) -> Retrieval:
        r = self._call(sample)
        if isinstance(r, Retrieval):
            return r
        if isinstance(r, str):
            return Retrieval(context=r)
        raise PluginError(f"{self.label} returned {type(r).__name__} for sample {sample.id!r}, want Retrieval or str")


def _want_attribute(v: Any, want: str) -> str:
    """Why v is no value of an attribute that wants want; a method gets the
    way out, since Go's optional interfaces are methods."""
    if callable(v):
        return f"is a method; make it an attribute or a @property holding {want}"
    return f"is {type(v).__name__}, want {want}"


def _takes_argument(fn: Callable) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in sig.parameters.values())

