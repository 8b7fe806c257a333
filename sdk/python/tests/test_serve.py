"""The server's hand-written pieces against the protobuf runtime: the
method table it registers, and Configure served on bytes."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import grpc

from hayloft_plugin import _batch, _pack, _serve
from hayloft_plugin._proto import plugin_pb2 as pb
from hayloft_plugin._serve import COOKIE_KEY, COOKIE_VALUE

HERE = os.path.dirname(os.path.abspath(__file__))


class TableTest(unittest.TestCase):
    def test_services_as_generated(self):
        # A method added to the .proto without a row in SERVICES fails here.
        # EmbeddingCache is the host's service, which a plugin calls.
        want = {}
        for name, svc in pb.DESCRIPTOR.services_by_name.items():
            if name == "EmbeddingCache":
                continue
            want[name] = tuple(
                (m.name, m.input_type.name,
                 ("stream" if m.client_streaming else "unary") + "_" + ("stream" if m.server_streaming else "unary"))
                for m in svc.methods)
        self.assertEqual(_serve.SERVICES, want)
        for service, method in _serve.RAW:
            self.assertIn(method, [m[0] for m in _serve.SERVICES[service]])


class ConfigureTest(unittest.TestCase):
    def test_request_as_protobuf_writes_it(self):
        cases = [
            pb.ConfigureRequest(),
            pb.ConfigureRequest(kind="scorer", name="ü" * 100, options_json=b'{"a": 1}' * 40, protocol="hayloft.plugin.v1",
                                check_only=True, embedding_cache=(1 << 32) - 1),
        ]
        # Every field of the message is read: a field added to the .proto
        # without one here fails.
        self.assertEqual({f.name for f in pb.ConfigureRequest.DESCRIPTOR.fields}, set(_serve.ConfigureRequest.__slots__))
        for want in cases:
            got = _serve.ConfigureRequest.parse(want.SerializeToString() + b"\x78\x01")  # an unknown field 15
            for f in _serve.ConfigureRequest.__slots__:
                self.assertEqual(getattr(got, f), getattr(want, f), f)

    def test_response_as_protobuf_reads_it(self):
        # Every field of the message is written: a field added to the
        # .proto without a case here fails.
        self.assertEqual({f.name: f.number for f in pb.ConfigureResponse.DESCRIPTOR.fields},
                         {"plugin_name": 1, "plugin_version": 2, "protocol": 3, "capabilities": 4, "features": 5,
                          "served_model": 6, "transport_options": 7})
        got = pb.ConfigureResponse.FromString(_serve.configure_response(
            "acme", "1.0", "hayloft.plugin.v1", ["closer", "aggregator"], ["calls.score_batch"],
            "model-ü", ["timeout", "max_retries"]))
        self.assertEqual((got.plugin_name, got.plugin_version, got.protocol, list(got.capabilities), list(got.features),
                          got.served_model, list(got.transport_options)),
                         ("acme", "1.0", "hayloft.plugin.v1", ["closer", "aggregator"], ["calls.score_batch"],
                          "model-ü", ["timeout", "max_retries"]))
        self.assertEqual(_serve.configure_response("", "", "", [], []), b"")
        self.assertEqual(_serve.configure_response("", "", "", [], [], "", []), b"")


class CallsTest(unittest.TestCase):
    def test_calls_as_protobuf_writes_them(self):
        # The fields _batch.calls reads, as numbered in the .proto.
        self.assertEqual({f.name: f.number for f in pb.Call.DESCRIPTOR.fields if f.name in
                          ("id", "deadline_unix_nano", "cancel", "generate", "score", "retrieve", "score_batch")},
                         {"id": 1, "deadline_unix_nano": 2, "cancel": 3, "generate": 4, "score": 5, "retrieve": 6, "score_batch": 8})
        sb = pb.ScoreBatchRequest(requests=[pb.ScoreRequest(sample=pb.Sample(id="a"), prediction="p")])
        calls = [pb.Call(id=(1 << 64) - 1, deadline_unix_nano=-5, score_batch=sb),
                 pb.Call(id=2, score=pb.ScoreRequest(prediction="q"), want_prefilled=True),
                 pb.Call(id=3, cancel=True)]
        got = _batch.calls(pb.CallBatch(calls=calls).SerializeToString())
        self.assertEqual([(cid, dl, cancel, b) for cid, dl, cancel, b, _ in got],
                         [((1 << 64) - 1, -5, False, sb.SerializeToString()), (2, 0, False, None), (3, 0, True, None)])
        self.assertEqual([pb.Call.FromString(c) for *_, c in got[1:]], calls[1:])
        self.assertEqual(got[0][4], b"", "a score_batch call is not copied whole")
        with self.assertRaises(_batch.DecodeError):
            _batch.calls(pb.CallBatch(calls=calls).SerializeToString()[:-3])

    def test_replies_as_protobuf_reads_them(self):
        self.assertEqual({f.name: f.number for f in pb.Reply.DESCRIPTOR.fields if f.name in ("id", "error", "score_batch")},
                         {"id": 1, "error": 2, "score_batch": 7})
        resp = pb.ScoreBatchResponse(results=[pb.ScoreResult(response=pb.ScoreResponse(value=0.5))])
        err = pb.Error(kind=pb.Error.KIND_DEADLINE, message="late")
        raw = _batch.reply_batch([_batch.reply(7, score_batch=resp.SerializeToString()),
                                  _batch.reply(1 << 40, error=err.SerializeToString())])
        self.assertEqual(list(pb.ReplyBatch.FromString(raw).replies),
                         [pb.Reply(id=7, score_batch=resp), pb.Reply(id=1 << 40, error=err)])

    def test_malformed(self):
        for raw in (b"\x0a\x05ab", b"\x08", b"\x0a"):
            with self.subTest(raw=raw), self.assertRaises(_batch.DecodeError):
                _serve.ConfigureRequest.parse(raw)


class RunRawTest(unittest.TestCase):
    def test_score_batch_to_other_kinds_and_late(self):
        import logging
        import time

        from hayloft_plugin import Plugin, Score
        from hayloft_plugin._runner import Runner

        class Model:
            def generate(self, req):
                return "x"

        p = Plugin("t", "1")
        p.model("m")(Model)
        p.scorer("s")(lambda: (lambda smp, pred: Score(value=2.0)))
        batch = pb.ScoreBatchRequest(requests=[pb.ScoreRequest(prediction="p")]).SerializeToString()
        model = Runner(p.build("model", "m"), logging.getLogger("t"))
        r = pb.Reply.FromString(model.run_raw(5, 0, batch, b""))
        self.assertEqual((r.id, r.error.kind), (5, pb.Error.KIND_UNSUPPORTED))
        scorer = Runner(p.build("scorer", "s"), logging.getLogger("t"))
        r = pb.Reply.FromString(scorer.run_raw(6, time.time_ns() - 1, batch, b""))
        self.assertEqual((r.id, r.error.kind), (6, pb.Error.KIND_DEADLINE))
        r = pb.Reply.FromString(scorer.run_raw(7, 0, batch, b""))
        self.assertEqual((r.id, [x.response.value for x in r.score_batch.results]), (7, [2.0]))
        r = pb.Reply.FromString(scorer.run_raw(8, 0, b"\x0a\x05ab", b""))
        self.assertEqual(r.id, 8)
        self.assertIn("malformed", r.error.message)


class LeanTest(unittest.TestCase):
    def test_scorer_path_imports_no_protobuf(self):
        with tempfile.TemporaryDirectory() as tmp:
            pyz = os.path.join(tmp, "lean.pyz")
            _pack.pack("lean:plugin", pyz, python=sys.executable, path=[HERE])
            env = dict(os.environ, **{COOKIE_KEY: COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "1", "PLUGIN_UNIX_SOCKET_DIR": tmp})
            p = subprocess.Popen([pyz, "start", "scorer", "modules"], stdout=subprocess.PIPE, env=env)
            self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(), p.stdout.close()))
            addr = p.stdout.readline().decode().split("|")[3]
            with grpc.insecure_channel("unix:" + addr) as chan:
                def call(method, req):
                    return chan.unary_unary("/hayloft.plugin.v1." + method)(req.SerializeToString(), timeout=10)

                resp = pb.ConfigureResponse.FromString(
                    call("Lifecycle/Configure", pb.ConfigureRequest(kind="scorer", name="modules", protocol="hayloft.plugin.v1")))
                self.assertEqual((resp.plugin_name, resp.plugin_version, list(resp.features)), ("lean", "1.0", ["calls.score_batch"]))
                batch = pb.ScoreBatchRequest(requests=[pb.ScoreRequest(sample=pb.Sample(id="a"), prediction="p")])
                out = pb.ScoreBatchResponse.FromString(call("Scorer/ScoreBatch", batch))
                self.assertEqual(json.loads(out.results[0].response.details_json), {"google.protobuf": False})
                # The same over the Calls stream (the calls.score_batch
                # feature), then a plain Score call, which takes the
                # protobuf runtime.
                calls = [pb.CallBatch(calls=[pb.Call(id=9, score_batch=batch)]),
                         pb.CallBatch(calls=[pb.Call(id=10, score=batch.requests[0]), pb.Call(id=9, cancel=True)])]
                stream = chan.stream_stream("/hayloft.plugin.v1.Calls/Stream")((c.SerializeToString() for c in calls), timeout=10)
                replies = [r for m in stream for r in pb.ReplyBatch.FromString(m).replies]
                self.assertEqual([r.id for r in replies], [9, 10])
                self.assertEqual(json.loads(replies[0].score_batch.results[0].response.details_json), {"google.protobuf": False})
                self.assertEqual(json.loads(replies[1].score.details_json), {"google.protobuf": True})
                self.assertEqual(call("Lifecycle/Close", pb.CloseRequest()), b"")
                # A malformed Configure is an error, not a crash.
                with self.assertRaises(grpc.RpcError) as cm:
                    chan.unary_unary("/hayloft.plugin.v1.Lifecycle/Configure")(b"\x0a\x05ab", timeout=10)
                self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                try:
                    chan.unary_unary("/plugin.GRPCController/Shutdown")(b"", timeout=10)
                except grpc.RpcError:
                    pass  # the process may close the connection before the reply has arrived
            self.assertEqual(p.wait(timeout=10), 0)


if __name__ == "__main__":
    unittest.main()
