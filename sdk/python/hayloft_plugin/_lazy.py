"""Modules loaded on first use instead of at import.

`import grpc` (grpcio 1.51, Debian's) imports asyncio from its Cython core
and grpc.aio at the end of grpc/__init__.py: about a quarter of a Python
plugin's start-up, for an event loop the synchronous server hayloft talks
to never runs. defer() puts a placeholder in sys.modules before grpc is
imported; the placeholder becomes the real module, in place, the first time
anything reads one of its attributes, so user code that imports asyncio (or
grpc.aio) gets the real thing and notices nothing.

Only for the import of grpc: release() takes the placeholders that are
still unused out of sys.modules once grpc is imported, so a later `import
asyncio` anywhere is a plain import, as thread-safe as any (a placeholder
in sys.modules would let two threads import a submodule before its parent
has loaded). What keeps a placeholder after that (cygrpc's module global
asyncio, the attribute grpc.aio) imports the module on first use, which
only asyncio gRPC would do, and takes its namespace. (One difference
remains: a plugin that first imports asyncio inside functions running on
several threads at once meets CPython 3.11's own race between asyncio and
asyncio.events, which an import at the top of the module avoids.)

importlib.util.LazyLoader does the same but, in Python 3.11, loads the
module as soon as the import system reads its __spec__ (which every import
of it does) and is not thread-safe; this placeholder answers the import
system's questions without loading it.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import threading
import types
from typing import Optional

# What the import system reads of a module in sys.modules: answered without
# loading it.
_IMPORT_ATTRS = frozenset({"__spec__", "__name__", "__loader__", "__path__", "__file__", "__package__", "__class__"})

_lock = threading.RLock()


class _Deferred(types.ModuleType):
    def __getattribute__(self, attr: str):
        if attr in _IMPORT_ATTRS:
            return types.ModuleType.__getattribute__(self, attr)
        _load(self)
        if type(self) is _Deferred:
            # Still loading, on this thread: the module's own imports read it.
            return types.ModuleType.__getattribute__(self, attr)
        return getattr(self, attr)

    def __setattr__(self, attr: str, value) -> None:
        if attr not in _IMPORT_ATTRS:
            _load(self)
        types.ModuleType.__setattr__(self, attr, value)

    def __dir__(self):
        _load(self)
        return types.ModuleType.__dir__(self)


def _loading(m: types.ModuleType) -> bool:
    return types.ModuleType.__getattribute__(m, "__dict__").get("_hayloft_loading", False)


def _load(m: types.ModuleType) -> None:
    d = types.ModuleType.__getattribute__(m, "__dict__")
    spec = d["__spec__"]
    if sys.modules.get(spec.name) is not m:
        # Released: the module is imported as any other (the import
        # system's locks make that thread-safe), and the placeholder takes
        # its namespace.
        real = importlib.import_module(spec.name)
        with _lock:
            if type(m) is _Deferred:
                d.update(types.ModuleType.__getattribute__(real, "__dict__"))
                m.__class__ = types.ModuleType
        return
    # Still in sys.modules: only while grpc is imported, on one thread.
    with _lock:  # reentrant: the module's own imports read it while it loads
        if type(m) is not _Deferred or _loading(m):
            return
        d["_hayloft_loading"] = True
        try:
            spec.loader.exec_module(m)
        except BaseException:
            sys.modules.pop(spec.name, None)  # the next import tries afresh
            raise
        finally:
            del d["_hayloft_loading"]
        m.__class__ = types.ModuleType


def defer(name: str, spec: Optional[importlib.machinery.ModuleSpec] = None) -> bool:
    """Put a placeholder for module name in sys.modules, unless the module
    is imported already or cannot be found. For a submodule, pass its spec
    (finding it would import the parent)."""
    if name in sys.modules:
        return False
    if spec is None:
        spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return False
    m = importlib.util.module_from_spec(spec)
    if type(m) is not types.ModuleType:
        return False  # an extension or a custom module type: leave it alone
    m.__class__ = _Deferred
    sys.modules[name] = m
    return True


def release() -> None:
    """Take the placeholders nothing has used out of sys.modules."""
    for name in _DEFERRED:
        m = sys.modules.get(name)
        if m is not None and type(m) is _Deferred:
            del sys.modules[name]


_DEFERRED = ("asyncio", "grpc.aio")


def defer_grpc_asyncio() -> None:
    """Defer asyncio and grpc.aio, which `import grpc` loads and the
    synchronous server never uses. Call before the first import of grpc,
    and release() after it."""
    if "grpc" in sys.modules:
        return
    defer("asyncio")
    top = importlib.util.find_spec("grpc")
    if top is None or not top.submodule_search_locations:
        return
    for base in top.submodule_search_locations:
        init = os.path.join(base, "aio", "__init__.py")
        if os.path.exists(init):
            spec = importlib.util.spec_from_file_location(
                "grpc.aio", init, submodule_search_locations=[os.path.dirname(init)])
            if spec is not None:
                defer("grpc.aio", spec)
            return
