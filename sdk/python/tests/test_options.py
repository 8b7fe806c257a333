import unittest
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import os
import tempfile

from hayloft_plugin import ConfigError, Plugin, decode, path_option, suggest


@dataclass
class Inner:
    top_k: int = 5


@dataclass
class Opts:
    count: int = 1
    ratio: float = 0.5
    name: str = "x"
    strict: bool = False
    tags: List[str] = field(default_factory=list)
    weights: Dict[str, float] = field(default_factory=dict)
    limit: Optional[int] = None
    inner: Inner = field(default_factory=Inner)


@dataclass
class Required:
    path: str


class DecodeTest(unittest.TestCase):
    def test_values(self):
        o = decode({"count": 3, "ratio": 1, "tags": ["a"], "weights": {"a": 2}, "limit": 4, "inner": {"top_k": 9},
                    "strict": True, "name": "n"}, Opts)
        self.assertEqual(o, Opts(count=3, ratio=1.0, name="n", strict=True, tags=["a"], weights={"a": 2.0}, limit=4,
                                 inner=Inner(9)))
        self.assertIsInstance(o.ratio, float)
        self.assertEqual(decode(None, Opts), Opts())
        self.assertEqual(decode({"count": 2.0}, Opts).count, 2)
        self.assertIsNone(decode({"limit": None}, Opts).limit)

    def test_errors(self):
        cases = [
            ({"cout": 1}, "cout", 'unknown option; did you mean "count"?'),
            ({"zzzzzz": 1}, "zzzzzz", "unknown option"),
            ({"count": "five"}, "count", "want int, got string"),
            ({"count": True}, "count", "want int, got bool"),
            ({"count": 1.5}, "count", "want int, got number 1.5"),
            ({"ratio": "x"}, "ratio", "want float, got string"),
            ({"strict": 1}, "strict", "want bool, got number 1"),
            ({"tags": "a"}, "tags", "want list of str, got string"),
            ({"tags": ["a", 2]}, "tags[1]", "want str, got number 2"),
            ({"weights": {"a": "b"}}, "weights.a", "want float, got string"),
            ({"inner": {"top": 1}}, "inner.top", 'unknown option; did you mean "top_k"?'),
            ({"limit": "x"}, "limit", "want int, got string"),
        ]
        for raw, field_, msg in cases:
            with self.subTest(raw=raw):
                with self.assertRaises(ConfigError) as cm:
                    decode(raw, Opts)
                self.assertEqual((cm.exception.field, cm.exception.msg), (field_, msg))
                self.assertEqual(str(cm.exception), f"{field_}: {msg}")
        with self.assertRaises(ConfigError) as cm:
            decode({}, Required)
        self.assertEqual(cm.exception.field, "path")
        with self.assertRaises(ConfigError) as cm:
            decode([1], Opts)
        self.assertEqual(cm.exception.field, "")


@dataclass
class PathInner:
    table: str = path_option("")


@dataclass
class PathOpts:
    file: str = path_option("data/default.txt")
    files: List[str] = path_option(default_factory=list)
    map: Dict[str, str] = path_option(default_factory=dict)
    maybe: Optional[str] = path_option(None)
    sub: PathInner = field(default_factory=PathInner)
    tagged: str = field(default="", metadata={"hayloft": "path"})
    name: str = ""  # not a path: left as written


class PathTest(unittest.TestCase):
    # The cases of sdk/options_path_test.go.
    def test_relative_paths_resolve_against_the_config_dir(self):
        d = os.path.join(tempfile.gettempdir(), "conf")
        raw = {"file": "data/h.txt", "files": ["a", "/abs.txt"], "map": {"k": "../b"}, "maybe": "c",
               "sub": {"table": "t.tsv"}, "tagged": "u.tsv", "name": "n/x"}
        cases = [
            ("config file's directory", dict(raw, **{"$hayloft.base_dir": d}), PathOpts(
                file=os.path.join(d, "data/h.txt"), files=[os.path.join(d, "a"), "/abs.txt"],
                map={"k": os.path.normpath(os.path.join(d, "../b"))}, maybe=os.path.join(d, "c"),
                sub=PathInner(os.path.join(d, "t.tsv")), tagged=os.path.join(d, "u.tsv"), name="n/x")),
            # hayloft score --option: no config file, so the current directory.
            ("no base directory", raw, PathOpts(file="data/h.txt", files=["a", "/abs.txt"], map={"k": "../b"}, maybe="c",
                                                sub=PathInner("t.tsv"), tagged="u.tsv", name="n/x")),
            ("URL and empty unchanged", {"file": "https://example.org/x.jsonl", "tagged": "", "$hayloft.base_dir": d},
             PathOpts(file="https://example.org/x.jsonl")),
            ("only the base directory", {"$hayloft.base_dir": d}, PathOpts()),
        ]
        for name, opts, want in cases:
            with self.subTest(name):
                self.assertEqual(decode(opts, PathOpts), want)

    def test_through_plugin_build(self):
        p = Plugin("paths", "0")

        got = {}

        @p.task("u")
        def u(opts: PathOpts):
            got["opts"] = opts
            return lambda: iter([])

        p.build("task", "u", b'{"file": "x.jsonl", "$hayloft.base_dir": "/etc/hay"}')
        self.assertEqual(got["opts"].file, "/etc/hay/x.jsonl")
        with self.assertRaises(ConfigError) as cm:
            p.build("task", "u", b'{"fiel": "x", "$hayloft.base_dir": "/etc/hay"}')
        self.assertEqual(cm.exception.field, "fiel")


class SuggestTest(unittest.TestCase):
    def test_suggest(self):
        # The same rule as sdk.Suggest (sdk/suggest_test.go).
        cases = [
            ("tolerence", ["tolerance", "count"], "tolerance"),
            ("model", ["models", "task"], "models"),
            ("TopK", ["top_k", "topk"], "topk"),
            ("ab", ["xy"], ""),
            ("x", ["y"], ""),
            ("count", ["count"], ""),
            ("lenghts", ["lengths", "depths"], "lengths"),
        ]
        for name, cands, want in cases:
            with self.subTest(name=name):
                self.assertEqual(suggest(name, cands), want)


if __name__ == "__main__":
    unittest.main()
