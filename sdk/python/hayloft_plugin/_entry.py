"""The entry point of a packed plugin (and of `python3 -m hayloft_plugin
run`): protect stdout and stderr before the user's module is imported, so a
print at import never breaks the handshake, and turn an import failure into
one line naming the plugin and the cause."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from typing import List, Optional

from . import _stdio


def _where(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    # The innermost frame outside importlib's machinery is the user's line.
    frames = [f for f in tb if "importlib" not in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f" ({os.path.basename(f.filename)}:{f.lineno})"


def run(target: str, argv: Optional[List[str]] = None) -> None:
    """Import MODULE:ATTR (ATTR defaults to "plugin") and run its Plugin's
    main with argv (default sys.argv[1:])."""
    from ._stdio import fail

    args = list(sys.argv[1:] if argv is None else argv)
    _stdio.protect()
    if not args or args[0] != "start":
        _stdio.route_to_stderr()
    module, _, attr = target.partition(":")
    attr = attr or "plugin"
    missing = [m for m in ("grpc", "google.protobuf") if _absent(m)]
    if missing:
        fail(f"{module}: this Python ({sys.executable}) lacks {' and '.join(missing)}: "
             "install grpcio and protobuf (Debian: python3-grpcio python3-protobuf)")
    try:
        mod = importlib.import_module(module)
    except BaseException as e:  # SystemExit too: the plugin cannot start either way
        fail(f"{module}: import failed: {type(e).__name__}: {e}{_where(e)}", "".join(traceback.format_exception(e)))
    plugin = getattr(mod, attr, None)
    from .plugin import Plugin

    if not isinstance(plugin, Plugin):
        fail(f"{module}: {attr} is {type(plugin).__name__}, not a hayloft_plugin.Plugin")
    plugin.main(args)


def _absent(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True
