"""Strict option decoding, as sdk.Options.Decode does it.

A component declares its options as a dataclass; decode() fills one from the
JSON object hayloft sends. An unknown name is a ConfigError naming it and
suggesting the nearest known name, a value of the wrong type is a ConfigError
naming the field, so a typo never silently falls back to a default.

A field made with path_option() (or field(metadata={"hayloft": "path"}), as
a Go field tagged `hayloft:"path"`) holds a file path: hayloft sends the
directory of the config file the block came from, and a relative path is
resolved against it, so it names the same file wherever hayloft runs from.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from typing import Any, Dict, List, Optional, Sequence

from .errors import ConfigError

__all__ = ["decode", "suggest", "path_option", "resolve_path", "BASE_DIR_KEY"]

# The reserved option under which hayloft passes the config file's directory
# (sdk's baseDirKey); it is no option of the component's.
BASE_DIR_KEY = "$hayloft.base_dir"
_PATH = "path"


def path_option(default: Any = dataclasses.MISSING, *, default_factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field holding a file path (a str, or a list, dict or
    Optional of str): relative paths resolve against the config file's
    directory, as Go options tagged `hayloft:"path"` do.

        @dataclass
        class Options:
            file: str = path_option("data/items.jsonl")
    """
    return dataclasses.field(default=default, default_factory=default_factory, metadata={"hayloft": _PATH})


def resolve_path(base_dir: str, p: str) -> str:
    """p resolved against base_dir (sdk.Options.Path): unchanged when empty,
    absolute, a URL, or when there is no base directory."""
    if not base_dir or not p or os.path.isabs(p) or "://" in p:
        return p
    return os.path.normpath(os.path.join(base_dir, p))


def _resolve(base_dir: str, v: Any) -> Any:
    if isinstance(v, str):
        return resolve_path(base_dir, v)
    if isinstance(v, list):
        return [_resolve(base_dir, x) for x in v]
    if isinstance(v, dict):
        return {k: _resolve(base_dir, x) for k, x in v.items()}
    return v


def suggest(name: str, candidates: Sequence[str]) -> str:
    """The candidate nearest to name, or "" when none is a likely typo
    (the rule of sdk.Suggest: edit distance at most 2 and fewer edits than
    name has characters, or a shared prefix of three or more characters)."""
    lname = name.lower()
    best, best_dist = "", 3
    for c in candidates:
        if c == name:
            continue
        lc = c.lower()
        d = _levenshtein(lname, lc)
        if d > 2 and _prefix_pair(lname, lc):
            d = 2
        if d < best_dist and d < len(name):
            best, best_dist = c, d
    return best


def _prefix_pair(a: str, b: str) -> bool:
    if len(a) > len(b):
        a, b = b, a
    return len(a) >= 3 and b.startswith(a)


def _levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
        prev = cur
    return prev[len(b)]


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number " + repr(v)
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _type_name(t: Any) -> str:
    origin = typing.get_origin(t)
    if origin in (list, List, Sequence):
        (arg,) = typing.get_args(t) or (Any,)
        return "list of " + _type_name(arg)
    if origin in (dict, Dict):
        return "object"
    if origin is typing.Union:
        return " or ".join(_type_name(a) for a in typing.get_args(t) if a is not type(None))
    return getattr(t, "__name__", str(t))


def _convert(path: str, t: Any, v: Any, base_dir: str = "") -> Any:
    if t is Any:
        return v
    origin = typing.get_origin(t)
    if origin is typing.Union:
        args = typing.get_args(t)
        if v is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) == 1:
            return _convert(path, inner[0], v, base_dir)
        for a in inner:
            try:
                return _convert(path, a, v, base_dir)
            except ConfigError:
                pass
        raise ConfigError(path, f"want {_type_name(t)}, got {_json_type(v)}")
    if origin in (list, List, Sequence) or t is list:
        if not isinstance(v, list):
            raise ConfigError(path, f"want {_type_name(t)}, got {_json_type(v)}")
        (arg,) = typing.get_args(t) or (Any,)
        return [_convert(f"{path}[{i}]", arg, x, base_dir) for i, x in enumerate(v)]
    if origin in (dict, Dict) or t is dict:
        if not isinstance(v, dict):
            raise ConfigError(path, f"want object, got {_json_type(v)}")
        args = typing.get_args(t)
        vt = args[1] if len(args) == 2 else Any
        return {k: _convert(f"{path}.{k}", vt, x, base_dir) for k, x in v.items()}
    if dataclasses.is_dataclass(t):
        if not isinstance(v, dict):
            raise ConfigError(path, f"want object, got {_json_type(v)}")
        return _decode_into(t, v, path + ".", base_dir)
    if t is bool:
        if isinstance(v, bool):
            return v
    elif t is int:
        if isinstance(v, int) and not isinstance(v, bool):
            return v
        if isinstance(v, float) and v.is_integer():
            return int(v)  # JSON has one number type; 3.0 is 3
    elif t is float:
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    elif t is str:
        if isinstance(v, str):
            return v
    else:
        raise TypeError(f"option {path}: unsupported type {t!r} in the options dataclass")
    raise ConfigError(path, f"want {_type_name(t)}, got {_json_type(v)}")


def _decode_into(cls: type, raw: Dict[str, Any], prefix: str = "", base_dir: str = "") -> Any:
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.init]
    names = [f.name for f in fields]
    for key in raw:
        if key not in names:
            msg = "unknown option"
            near = suggest(key, names)
            if near:
                msg += f'; did you mean "{near}"?'
            raise ConfigError(prefix + key, msg)
    kwargs = {}
    for f in fields:
        if f.name in raw:
            v = _convert(prefix + f.name, hints.get(f.name, Any), raw[f.name], base_dir)
            if base_dir and f.metadata.get("hayloft") == _PATH:
                v = _resolve(base_dir, v)
            kwargs[f.name] = v
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:  # type: ignore[misc]
            raise ConfigError(prefix + f.name, "required option is missing")
    return cls(**kwargs)


def decode(raw: Optional[Dict[str, Any]], cls: type, base_dir: str = "") -> Any:
    """Fill the dataclass cls from the options object raw, strictly. Errors
    are ConfigError naming the field. Path fields (path_option) given
    relative resolve against base_dir, or the BASE_DIR_KEY in raw; defaults
    are left as written."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"decode: {cls!r} is not a dataclass")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("", f"options must be an object, got {_json_type(raw)}")
    if BASE_DIR_KEY in raw:
        raw = dict(raw)
        bd = raw.pop(BASE_DIR_KEY)
        base_dir = base_dir or (bd if isinstance(bd, str) else "")
    return _decode_into(cls, raw, "", base_dir)
