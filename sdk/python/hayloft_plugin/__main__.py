"""python3 -m hayloft_plugin pack MODULE:ATTR -o OUT.pyz [--python INTERP] [--path DIR]
python3 -m hayloft_plugin run MODULE:ATTR describe | start <kind> <name>"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m hayloft_plugin", description="hayloft plugins in Python")
    sub = p.add_subparsers(dest="cmd", required=True)
    pk = sub.add_parser("pack", help="write one executable .pyz of a plugin and print its sha256")
    pk.add_argument("target", metavar="MODULE:ATTR", help="the module and its Plugin, e.g. acme:plugin")
    pk.add_argument("-o", "--output", required=True, help="the .pyz to write")
    pk.add_argument("--python", default="/usr/bin/env python3",
                    help="the interpreter on the .pyz's #! line (default: %(default)s); it needs grpcio and protobuf")
    pk.add_argument("--path", action="append", default=[], help="where to find MODULE (default: the current directory)")
    rn = sub.add_parser("run", help="run a plugin from its module, without packing (for development)")
    rn.add_argument("target", metavar="MODULE:ATTR")
    rn.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    if a.cmd == "pack":
        from ._pack import pack

        sha = pack(a.target, a.output, a.python, a.path or None)
        print(f"{a.output}\nsha256 = \"{sha}\"")
        return 0
    import gc

    gc.disable()  # until the plugin serves, as in a packed plugin (_serve.collect_from_here)
    from ._entry import run

    sys.path.insert(0, "")
    run(a.target, a.args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
