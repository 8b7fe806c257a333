"""The four kinds over a real gRPC connection (hayloft_plugin.testing)."""

import unittest

from hayloft_plugin import (ConfigError, GenerateRequest, Message, PluginError, RequestError, RetryableError, Sample,
                            Unsupported, testing)
from hayloft_plugin._proto import plugin_pb2 as pb
from hayloft_plugin.testing import ScorerCase

from .demo import plugin


def smp(id_, *targets, context=""):
    return Sample(id=id_, targets=list(targets), context=context)


class TaskTest(unittest.TestCase):
    def test_conformance(self):
        testing.check_task(plugin, "grid", {"n": 40})

    def test_samples_round_trip(self):
        with testing.connect(plugin, "task", "grid", {"n": 3, "prefix": "p"}) as t:
            got = list(t.samples())
            self.assertEqual([s.id for s in got], ["p0", "p1", "p2"])
            self.assertEqual(got[2].metadata, {"i": 2})
            self.assertEqual((got[2].length, got[2].tokenizer, got[2].depth, got[2].window), (2, "words", 1.0, 200))
            self.assertEqual([s.id for s in t.samples(2)], ["p0", "p1"])
            self.assertEqual((t.count(), t.count(2)), (3, 2))

    def test_per_item_error(self):
        with testing.connect(plugin, "task", "grid", {"n": 3, "fail_at": 1}) as t:
            got = list(t.samples())
        self.assertEqual(got[0].id, "s0")
        self.assertIsInstance(got[1], RequestError)
        self.assertEqual(got[1].code, "bad_item")
        self.assertEqual(got[2].id, "s2")

    def test_endless_task_stops(self):
        with testing.connect(plugin, "task", "endless") as t:
            self.assertEqual(len(list(t.samples(1000))), 1000)
            with self.assertRaises(Unsupported):
                t.count()

    def test_check_task_finds_problems(self):
        from hayloft_plugin import Plugin

        bad = Plugin("bad", "0")

        @bad.task("dups")
        def dups():
            return lambda: iter([Sample(id="a", depth=2.0), Sample(id="a"), Sample(id="")])

        with self.assertRaises(AssertionError) as cm:
            testing.check_task(bad, "dups")
        text = str(cm.exception)
        for want in ["depth 2.0", "share id 'a'", "empty id"]:
            self.assertIn(want, text)

    def test_config_errors(self):
        cases = [({"n": 0}, "n"), ({"nn": 1}, "nn"), ({"n": "x"}, "n"), ({"depths": [1, "a"]}, "depths[1]")]
        for opts, field in cases:
            with self.subTest(opts=opts):
                with self.assertRaises(ConfigError) as cm:
                    testing.connect(plugin, "task", "grid", opts)
                self.assertEqual(cm.exception.field, field)
        with self.assertRaises(ConfigError) as cm:
            testing.connect(plugin, "task", "endless", {"x": 1})
        self.assertEqual(cm.exception.field, "x")
        with self.assertRaises(Unsupported):
            testing.connect(plugin, "task", "nope")


class ScorerTest(unittest.TestCase):
    def test_conformance(self):
        testing.check_scorer(plugin, "match", [
            ScorerCase("right", smp("1", "a"), "a", want=1),
            ScorerCase("wrong", smp("2", "a"), "b", want=0),
            ScorerCase("invalid", smp("3", "a"), "", invalid=True),
        ])
        testing.check_scorer(plugin, "match", [ScorerCase("case", smp("1", "A"), "a", want=1)], {"ignore_case": True})

    def test_check_scorer_finds_wrong_values(self):
        with self.assertRaises(AssertionError) as cm:
            testing.check_scorer(plugin, "match", [ScorerCase("right", smp("1", "a"), "a", want=0)])
        self.assertIn("value = 1.0, want 0", str(cm.exception))

    def test_aggregate_and_errors(self):
        with testing.connect(plugin, "scorer", "match") as s:
            self.assertEqual(set(s.capabilities), {"aggregator"})
            sc = [s.score(smp("1", "a"), "a"), s.score(smp("2", "a"), "b"), s.score(smp("3", "a"), "")]
            self.assertEqual(sc[0].details, {"prediction": "a"})
            self.assertEqual(sc[0].stats, [1.0])
            a = s.aggregate(sc)
            self.assertEqual((a.value, a.n, a.invalid), (0.5, 2, 1))
            with self.assertRaises(RequestError) as cm:
                s.score(smp("4"), "a")
            self.assertEqual((cm.exception.code, str(cm.exception)), ("bad_request", "bad_request: sample 4 has no targets"))

    def test_one_sample_raises_the_rest_score(self):
        with testing.connect(plugin, "scorer", "raises") as s:
            reqs = [pb.ScoreRequest(sample=pb.Sample(id=i), prediction="x") for i in ("a", "bad", "c")]
            got = s.stream(reqs)
        self.assertEqual(got[0].value, 1.0)
        self.assertIsInstance(got[1], RequestError)
        self.assertEqual(got[1].code, "exception")
        self.assertRegex(str(got[1]), r"^exception: ValueError: cannot score bad \(demo\.py:\d+\)$")
        self.assertEqual(got[2].value, 1.0)

    def test_score_batch(self):
        for name in ("raises", "pidscore"):
            with testing.connect(plugin, "scorer", name) as s:
                got = s.score_batch([(smp(i, "a"), "x" * n) for n, i in enumerate(["a", "bad", "c", "d"])])
            self.assertEqual(len(got), 4)
            self.assertEqual([isinstance(g, RequestError) for g in got], [False, name == "raises", False, False])
            if name == "pidscore":
                self.assertEqual([g.value for g in got], [0.0, 1.0, 2.0, 3.0])

    def test_wrong_type(self):
        with testing.connect(plugin, "scorer", "wrongtype") as s:
            with self.assertRaises(PluginError) as cm:
                s.score(smp("x", "a"), "a")
        self.assertIn("returned str for sample 'x', want Score or a number", str(cm.exception))

    def test_processes(self):
        with testing.connect(plugin, "scorer", "pidscore") as s:
            reqs = [pb.ScoreRequest(sample=pb.Sample(id=str(i)), prediction="x" * i) for i in range(200)]
            got = s.stream(reqs)
            self.assertEqual([g.value for g in got], [float(i) for i in range(200)])
            self.assertEqual(len({g.details["pid"] for g in got}), 2)
            import os

            self.assertNotIn(os.getpid(), {g.details["pid"] for g in got})


class ModelTest(unittest.TestCase):
    def test_slot_round_trip(self):
        from hayloft_plugin import _wire

        for slot in (None, 0, 3):
            req = GenerateRequest(messages=[Message("user", "abc")], slot=slot)
            self.assertEqual(_wire.generate_request_from_pb(_wire.generate_request_to_pb(req)).slot, slot)

    def test_model(self):
        req = GenerateRequest(messages=[Message("user", "abc")], temperature=0.0, seed=3)
        testing.check_model(plugin, "echo", [req])
        with testing.connect(plugin, "model", "echo") as m:
            self.assertEqual(set(m.capabilities), {"tokenizer", "sample"})
            g = m.generate(req)
            self.assertEqual((g.text, g.finish_reason, g.prompt_tokens), ("cba", "stop", 3))
            with self.assertRaises(RetryableError) as cm:
                m.generate(GenerateRequest(messages=[], max_tokens=-1))
            self.assertEqual((cm.exception.after, str(cm.exception)), (1.5, "retryable: busy"))

    def test_threads_run_calls_at_once(self):
        import time

        with testing.connect(plugin, "model", "slow") as m:
            start = time.monotonic()
            got = m.stream([GenerateRequest(messages=[])] * 20)
            took = time.monotonic() - start
        self.assertEqual([g.text for g in got], ["done"] * 20)
        self.assertLess(took, 20 * 0.2 / 2, "20 calls of 0.2 s did not overlap")


class ServedModelTest(unittest.TestCase):
    """A model's served_model and transport_options attributes reach the
    host in ConfigureResponse (the Go SDK's sdk.ServedModeler and
    sdk.TransportOptioner): hayloft keys the model's answers by them."""

    def test_reported(self):
        import os
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            server = os.path.join(d, "server")
            with open(server, "w") as f:
                f.write("model-a\n")
            with testing.connect(plugin, "model", "served", {"server": server, "timeout": 90}) as m:
                self.assertEqual((m.served_model, m.transport_options), ("model-a", ["timeout", "max_retries"]))
                self.assertEqual(m.generate(GenerateRequest(messages=[])).text, "model-a answers 42")
            # Validation does not provision: the model has not learned it.
            with testing.connect(plugin, "model", "served", {"server": server}, check_only=True) as m:
                self.assertEqual((m.served_model, m.transport_options), ("", ["timeout", "max_retries"]))

    def test_absent(self):
        with testing.connect(plugin, "model", "echo") as m:
            self.assertEqual((m.served_model, m.transport_options), ("", []))

    def test_property_and_set(self):
        from hayloft_plugin import Plugin

        p = Plugin("p", "0")

        @p.model("m")
        def m():
            class M:
                transport_options = frozenset({"b", "a"})

                @property
                def served_model(self):
                    return "computed"

                def generate(self, req):
                    return ""

            return M()

        with testing.connect(p, "model", "m") as r:
            self.assertEqual((r.served_model, r.transport_options), ("computed", ["a", "b"]))

    def test_only_models_report(self):
        from hayloft_plugin import Plugin

        p = Plugin("p", "0")

        @p.scorer("s")
        def s():
            class S:
                served_model = "x"
                transport_options = ["timeout"]

                def score(self, sample, prediction):
                    return 1

            return S()

        with testing.connect(p, "scorer", "s") as r:
            self.assertEqual((r.served_model, r.transport_options), ("", []))

    def test_wrong_types_fail_configure(self):
        from hayloft_plugin import Plugin

        p = Plugin("p", "0")
        closed = []
        cases = {
            "method": ({"served_model": lambda self: "m"}, "served_model is a method"),
            "number": ({"served_model": 3}, "served_model is int, want str"),
            "string": ({"transport_options": "timeout"}, "transport_options is str, want a list of str"),
            "items": ({"transport_options": ["timeout", 5]}, "transport_options[1] is int, want str"),
            "callable": ({"transport_options": lambda self: ["timeout"]}, "transport_options is a method"),
        }
        def register(name, attrs):
            ns = dict(attrs, generate=lambda self, req: "", close=lambda self: closed.append(name))
            p.model(name)(lambda: type("M", (), ns)())

        for name, (attrs, _) in cases.items():
            register(name, attrs)
        for name, (_, want) in cases.items():
            with self.subTest(name):
                with self.assertRaises(PluginError) as cm:
                    testing.connect(p, "model", name)
                self.assertIn(f"model {name!r}: {want}", str(cm.exception))
        self.assertEqual(sorted(closed), sorted(cases), "a model refused at Configure is closed")


class RetrieverTest(unittest.TestCase):
    def test_retriever(self):
        samples = [Sample(id="a", context="abcdef", question="q")]
        testing.check_retriever(plugin, "firsthalf", samples)
        with testing.connect(plugin, "retriever", "firsthalf") as r:
            self.assertEqual(r.retrieve(samples[0]).context, "abc")

    def test_embedding_cache(self):
        smp = Sample(id="a", context="Hay. The loft is full. Barn.", question="q")
        cache = testing.MemoryCache()
        with testing.connect(plugin, "retriever", "cached", embedding_cache=cache) as r:
            first, second = r.retrieve(smp), r.retrieve(smp)
        self.assertEqual(first.context, "The loft is full")
        self.assertEqual(first.details, {"embedded": 3, "cache": True})
        self.assertEqual(second.details, {"embedded": 0, "cache": True})
        self.assertEqual(len(cache.vectors), 3)
        self.assertEqual((cache.gets, cache.puts), (2, 1))
        self.assertEqual(cache.vectors[("demo/toy", __import__("hashlib").sha256(b"Barn").digest())], [4.0, 66.0])
        # Without a cache, and for hayloft validate, the component is never handed one.
        for check_only in (False, True):
            with testing.connect(plugin, "retriever", "cached", check_only=check_only) as r:
                if not check_only:
                    self.assertEqual(r.retrieve(smp).details, {"embedded": 3, "cache": False})


class WrongKindTest(unittest.TestCase):
    def test_wrong_kind_call(self):
        with testing.connect(plugin, "scorer", "match") as s:
            got = s.stream([Sample(id="a")])
        self.assertIsInstance(got[0], Unsupported)


if __name__ == "__main__":
    unittest.main()
