"""`python3 -m hayloft_plugin pack MODULE:plugin -o acme.pyz`: one
self-contained, executable zipapp holding the user's module (or package),
this SDK and an entry point, written reproducibly (sorted entries, fixed
timestamps and modes) so the same sources always give the same sha256 to
pin. The pin covers the code in the .pyz; the interpreter named on its
first line and the grpcio and protobuf it imports are not in it.

When the module imports at pack time, its `describe` answer goes into the
archive too, as the entry hayloft-describe.json, which hayloft reads
instead of running the program (kernel/pluginhost/archive.go), and the
packed program prints it without importing anything when run as `describe`:
hayloft needs describe once per plugin file before it starts a component,
and an interpreter's start is most of its cost. A module that does not
import here (a missing dependency, an error) describes itself at run time,
as before."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import marshal
import json
import os
import stat
import subprocess
import sys
import zipfile
from typing import Iterator, List, Optional, Tuple

_EPOCH = (1980, 1, 1, 0, 0, 0)
DEFAULT_PYTHON = "/usr/bin/env python3"
# The archive entry with the describe answer; kernel/pluginhost reads it.
DESCRIBE_ENTRY = "hayloft-describe.json"


def _files(root: str, arcbase: str) -> Iterator[Tuple[str, str]]:
    """(path on disk, name in the archive) of a package's source files."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for f in sorted(filenames):
            if f.endswith((".pyc", ".pyo")) or f.startswith("."):
                continue
            full = os.path.join(dirpath, f)
            yield full, arcbase + "/" + os.path.relpath(full, root).replace(os.sep, "/")


def _module_files(module: str, path: List[str]) -> List[Tuple[str, str]]:
    top = module.split(".")[0]
    saved = sys.path[:]
    sys.path[:0] = path
    try:
        spec = importlib.util.find_spec(top)
    finally:
        sys.path[:] = saved
    if spec is None or not spec.origin or spec.origin in ("built-in", "frozen"):
        raise SystemExit(f"pack: cannot find module {top!r} (searched {', '.join(path)} and sys.path)")
    if spec.submodule_search_locations:
        return list(_files(os.path.dirname(spec.origin), top))
    return [(spec.origin, os.path.basename(spec.origin))]


def _pyc(source: bytes, arc: str) -> bytes:
    """The module compiled by this interpreter, as a hash-based pyc (PEP
    552): zipimport cannot cache bytecode, so without it every start
    compiles every module again (about 45 ms for the SDK). Unchecked: the
    source is not read and hashed again at each start (zipimport would
    inflate and hash every module's source for it); both come from this
    pack and the plugin's sha256 pin covers both, so they cannot disagree
    in a pinned .pyz. Another Python version ignores the pyc (its magic
    differs) and compiles the source as before. No timestamp, so packing
    stays reproducible."""
    code = compile(source, arc, "exec", dont_inherit=True)
    flags = (0b01).to_bytes(4, "little")  # hash-based, unchecked
    return importlib.util.MAGIC_NUMBER + flags + importlib.util.source_hash(source) + marshal.dumps(code)


def _describe(target: str, path: List[str]) -> Optional[str]:
    """The module's describe JSON, from a separate interpreter (the module's
    import may print or fail), or None when it does not import."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path + [p for p in sys.path if p]))
    env.pop("HAYLOFT_PLUGIN", None)
    try:
        r = subprocess.run([sys.executable, "-m", "hayloft_plugin", "run", target, "describe"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"pack: {target} did not describe itself ({e}); the .pyz will at run time", file=sys.stderr)
        return None
    try:
        info = json.loads(r.stdout)
    except ValueError:
        info = None
    if r.returncode != 0 or not isinstance(info, dict) or not info.get("protocol"):
        err = r.stderr.decode(errors="replace").strip().splitlines()
        print(f"pack: {target} does not import here ({err[-1] if err else f'exit {r.returncode}'}); "
              "the .pyz will describe itself at run time", file=sys.stderr)
        return None
    return json.dumps(info, sort_keys=True)


def pack(target: str, output: str, python: str = DEFAULT_PYTHON, path: Optional[List[str]] = None) -> str:
    """Write the zipapp for MODULE:ATTR to output; return its hex sha256."""
    module, _, attr = target.partition(":")
    if not module:
        raise SystemExit("pack: want MODULE:ATTR, e.g. acme:plugin")
    search = [os.path.abspath(p) for p in (path or [os.getcwd()])]
    entries = _module_files(module, search)
    sdk_dir = os.path.dirname(os.path.abspath(__file__))
    entries += [(f, a) for f, a in _files(sdk_dir, "hayloft_plugin") if "/tests/" not in a]
    target = module + ":" + (attr or "plugin")
    # The collector is off until the plugin serves (_serve.collect_from_here):
    # start-up allocates much and frees almost nothing.
    main = "# Generated by hayloft_plugin pack.\nimport gc\n\ngc.disable()\n"
    described = _describe(target, search)
    if described is not None:
        main += ("import sys\n\n"
                 "if sys.argv[1:] == [\"describe\"]:\n"
                 "    # What the module described at pack time: no import needed.\n"
                 f"    sys.stdout.write({described!r} + \"\\n\")\n"
                 "    sys.exit(0)\n")
    main += f"from hayloft_plugin._entry import run\n\nrun({target!r})\n"
    names = {}
    for full, arc in entries:
        if arc in names and names[arc] != full:
            raise SystemExit(f"pack: {arc} would come from both {names[arc]} and {full}")
        names[arc] = full
    buf = io.BytesIO()
    # Stored, not deflated: zipimport reads each module twice (its spec,
    # then its code) and inflating costs more start-up than the bytes save.
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        def add(arc: str, data: bytes) -> None:
            info = zipfile.ZipInfo(arc, date_time=_EPOCH)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_STORED
            z.writestr(info, data)

        add("__main__.py", main.encode())
        if described is not None:
            add(DESCRIBE_ENTRY, described.encode() + b"\n")
        for arc in sorted(names):
            with open(names[arc], "rb") as f:
                data = f.read()
            add(arc, data)
            if arc.endswith(".py"):
                add(arc + "c", _pyc(data, arc))
    data = b"#!" + python.encode() + b"\n" + buf.getvalue()
    tmp = output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.chmod(tmp, 0o755)
    os.replace(tmp, output)
    return hashlib.sha256(data).hexdigest()
