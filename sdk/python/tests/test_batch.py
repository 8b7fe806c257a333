"""ScoreBatch's hand-written wire code against the protobuf runtime."""

import math
import subprocess
import sys
import unittest

from hayloft_plugin import GridPoint, Message, PluginError, Sample, Score, _batch, _wire
from hayloft_plugin._proto import plugin_pb2 as pb

FULL = Sample(
    id="s-1 ünï", context="ctx " * 50, question="q?", messages=[Message("system", "be brief"), Message("user", "{{context}}")],
    choices=["a", "b", ""], targets=["t1", "t" * 300], length=-5, tokenizer="cl100k_base", depth=0.25,
    language="zh", subtask="mc", max_new_tokens=-3, window=1 << 40, metadata={"k": [1, 2], "u": "ü"},
    grid=GridPoint(length=32000, depth=-1.0),
)


def batch(*reqs):
    return pb.ScoreBatchRequest(requests=list(reqs)).SerializeToString()


class DecodeTest(unittest.TestCase):
    def decode(self, raw):
        return _batch.decode_score_batch(raw, _wire._decode_map)

    def test_fields_as_protobuf_reads_them(self):
        cases = [
            FULL,
            Sample(id="bare"),
            Sample(id="zero grid", grid=GridPoint()),
            Sample(id="", depth=-0.0, length=0),
        ]
        for smp in cases:
            with self.subTest(smp.id):
                p = _wire.sample_to_pb(smp)
                raw = batch(pb.ScoreRequest(sample=p, prediction="pred ü" * 40))
                (got, pred), = self.decode(raw)
                self.assertEqual(got, _wire.sample_from_pb(pb.Sample.FromString(p.SerializeToString())))
                self.assertEqual(pred, "pred ü" * 40)
                self.assertIsInstance(got, Sample)
        self.assertEqual(self.decode(batch(pb.ScoreRequest(sample=_wire.sample_to_pb(FULL))))[0][0], FULL)

    def test_every_field_is_decoded(self):
        # A field added to the .proto without a case here fails this test:
        # FULL must set every field of pb.Sample.
        p = _wire.sample_to_pb(FULL)
        self.assertEqual({f.name for f, _ in p.ListFields()}, {f.name for f in pb.Sample.DESCRIPTOR.fields})
        # for_aggregate (3) and score_object (4) are hints this decoder skips
        # on purpose (see decode_score_batch): a Python scorer answers with
        # its details, and the host builds the score object from them.
        # ScoreBatchRequest.packed (2) is sent only to plugins that report the
        # "score_batch.packed" feature, which the Python SDK does not.
        # test_hints_are_skipped holds the decoder to that.
        self.assertEqual({f.name: f.number for f in pb.ScoreRequest.DESCRIPTOR.fields}, {"sample": 1, "prediction": 2, "for_aggregate": 3, "score_object": 4})
        self.assertEqual({f.name: f.number for f in pb.ScoreBatchRequest.DESCRIPTOR.fields}, {"requests": 1, "packed": 2})

    def test_hints_are_skipped(self):
        raw = batch(pb.ScoreRequest(sample=pb.Sample(id="a"), prediction="p", for_aggregate=True), pb.ScoreRequest(prediction="q", score_object=True))
        self.assertEqual([(s.id, p) for s, p in self.decode(raw)], [("a", "p"), ("", "q")])

    def test_fresh_lists_per_sample(self):
        raw = batch(pb.ScoreRequest(sample=pb.Sample(id="a")), pb.ScoreRequest(sample=pb.Sample(id="b")))
        (a, _), (b, _) = self.decode(raw)
        a.targets.append("x")
        a.metadata["x"] = 1
        self.assertEqual((b.targets, b.metadata), ([], {}))

    def test_missing_sample_and_unknown_fields(self):
        # field 15 of Sample (varint), 3 of ScoreRequest (fixed32), 9 of the
        # batch (fixed64): skipped, as protobuf skips them.
        smp = pb.Sample(id="x").SerializeToString() + b"\x78\x05"
        req = b"\x0a" + bytes([len(smp)]) + smp + b"\x12\x01p" + b"\x1d\x00\x00\x00\x00"
        raw = b"\x0a" + bytes([len(req)]) + req + b"\x49" + b"\x00" * 8 + batch(pb.ScoreRequest(prediction="q"))
        got = self.decode(raw)
        self.assertEqual([(s.id, p) for s, p in got], [("x", "p"), ("", "q")])

    def test_bad_metadata_fails_its_request_only(self):
        raw = batch(pb.ScoreRequest(sample=pb.Sample(id="a", metadata_json=b"[1]")), pb.ScoreRequest(sample=pb.Sample(id="b")))
        (a, _), (b, _) = self.decode(raw)
        self.assertIsInstance(a, PluginError)
        self.assertIn("sample a metadata", str(a))
        self.assertEqual(b.id, "b")

    def test_truncated(self):
        raw = batch(pb.ScoreRequest(sample=_wire.sample_to_pb(FULL), prediction="p"))
        for cut in (1, 2, 5, len(raw) // 2, len(raw) - 1):
            with self.subTest(cut=cut), self.assertRaises(_batch.DecodeError):
                self.decode(raw[:cut])


class EncodeTest(unittest.TestCase):
    def test_as_protobuf_reads_it(self):
        scores = [Score(), Score(value=0.5, invalid=True, details={"a": "ü"}, stats=[1.0, -2.5, math.inf]),
                  Score(value=-0.0), Score(value=1)]
        err = pb.Error(kind=pb.Error.KIND_REQUEST, code="exception", message="boom")
        results = [(True, _batch.encode_score(s, _wire._encode_map)) for s in scores] + [(False, err.SerializeToString())]
        got = pb.ScoreBatchResponse.FromString(_batch.encode_results(results)).results
        self.assertEqual(len(got), 5)
        for s, r in zip(scores, got):
            self.assertTrue(r.HasField("response"))
            self.assertEqual(_wire.score_from_pb(r.response), Score(float(s.value), s.invalid, s.details, s.stats))
        self.assertEqual(math.copysign(1, got[2].response.value), -1)
        self.assertEqual(got[4].error, err)

    def test_long_fields(self):
        s = Score(details={"x": "y" * 100000}, stats=[0.5] * 3000)
        r = pb.ScoreResponse.FromString(_batch.encode_score(s, _wire._encode_map))
        self.assertEqual((len(r.details_json), len(r.stats)), (len(_wire._encode_map("", s.details)), 3000))

    def test_wrong_value_type_raises(self):
        with self.assertRaises(Exception):
            _batch.encode_score(Score(value="1"), _wire._encode_map)


class ScoreItemsTest(unittest.TestCase):
    def test_as_the_general_encoding(self):
        # Every shape a scorer's answer takes, through the fast loop and
        # through encode_score and encode_results: the same bytes.
        answers = {
            "value": Score(value=0.75), "zero": Score(), "negative zero": Score(value=-0.0), "int": Score(value=1),
            "invalid": Score(invalid=True), "details": Score(value=1, details={"k": "ü"}), "stats": Score(stats=[0.5]),
            "number": 3, "bool": True, "wrong type": "1", "wrong value": Score(value="x"), "raises": ValueError("boom"),
        }
        bad = PluginError("sample m metadata: not a JSON object")
        items = [(Sample(id=k), "p") for k in answers] + [(bad, "p")]

        def call(sample, prediction):
            a = answers[sample.id]
            if isinstance(a, Exception):
                raise a
            return a

        def as_score(r, sample):
            if isinstance(r, Score):
                return r
            if isinstance(r, (int, float)):
                return Score(value=float(r))
            raise PluginError(f"returned {type(r).__name__} for sample {sample.id!r}")

        def fail(e):
            return pb.Error(kind=pb.Error.KIND_REQUEST, code="exception", message=str(e)).SerializeToString()

        want = []
        for smp, pred in items:
            try:
                if isinstance(smp, BaseException):
                    raise smp
                want.append((True, _batch.encode_score(as_score(call(smp, pred), smp), _wire._encode_map)))
            except Exception as e:
                want.append((False, fail(e)))
        got = _batch.score_items(items, call, as_score, fail, _wire._encode_map)
        self.assertEqual(got, _batch.encode_results(want))
        res = pb.ScoreBatchResponse.FromString(got).results
        self.assertEqual([r.HasField("error") for r in res], [False] * 9 + [True] * 4)
        self.assertEqual([r.response.value for r in res[:4]], [0.75, 0, -0.0, 1])
        self.assertIn("returned str", res[9].error.message)
        self.assertEqual(res[11].error.message, "boom")
        self.assertIn("metadata", res[12].error.message)


class BrokerTest(unittest.TestCase):
    def test_conn_info(self):
        from hayloft_plugin._wire import _field_bytes
        from hayloft_plugin.cache import Broker

        b = Broker()
        # ConnInfo{service_id, network, address, knock}: the knock (field 4)
        # is for multiplexed brokers and ignored.
        b.offer(b"\x08\x05" + _field_bytes(2, b"unix") + _field_bytes(3, b"/tmp/s5") + _field_bytes(4, b"\x08\x01"))
        b.offer(b"\x08\x06" + _field_bytes(2, b"tcp") + _field_bytes(3, b"127.0.0.1:1234"))
        b.offer(b"\x08\x07")  # no address: not an offer
        self.assertEqual(b.address(6), ("tcp", "127.0.0.1:1234"))
        self.assertEqual(b.address(5), ("unix", "/tmp/s5"))
        with self.assertRaises(PluginError) as cm:
            b.address(7, timeout=0.05)
        self.assertIn("service 7", str(cm.exception))

    def test_hashes_checked(self):
        from hayloft_plugin.cache import EmbeddingCache

        class Chan:
            def unary_unary(self, *a, **k):
                return lambda req: self.fail_if_called()

            def close(self):
                pass

        c = EmbeddingCache(Chan())
        with self.assertRaises(ValueError):
            c.get_embeddings("e", [b"short"])
        with self.assertRaises(ValueError):
            c.put_embeddings("e", [b"x" * 32], [])


class LazyTest(unittest.TestCase):
    def test_grpc_without_asyncio_until_used(self):
        code = """
import sys, threading
from hayloft_plugin import _lazy
_lazy.defer_grpc_asyncio()
import grpc
assert type(sys.modules["asyncio"]).__name__ == "_Deferred", sys.modules["asyncio"]
assert type(sys.modules["grpc.aio"]).__name__ == "_Deferred"
_lazy.release()
assert "asyncio" not in sys.modules and "grpc.aio" not in sys.modules
assert not [m for m in sys.modules if m.startswith("asyncio.")]
# grpc.aio, still bound on grpc, imports on first use and shares its namespace.
got = []
ts = [threading.Thread(target=lambda: got.append(grpc.aio.server)) for _ in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
import grpc.aio as real
assert len(set(got)) == 1 and got[0] is real.server and type(grpc.aio).__name__ == "module"
import asyncio
async def f():
    return 42
assert asyncio.run(f()) == 42
print("ok")
"""
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=_sdk_dir())
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "ok"), out.stderr)


def _sdk_dir():
    import os

    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


if __name__ == "__main__":
    unittest.main()
