"""The server's hand-written pieces against the protobuf runtime: the
method table it registers, and Configure served on bytes."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import grpc

from hayloft_plugin import _pack, _serve
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
        # features (5) stays empty: this SDK serves none of the protocol's
        # later features (calls.score_batch: its ScoreBatch is the unary RPC).
        self.assertEqual({f.name: f.number for f in pb.ConfigureResponse.DESCRIPTOR.fields},
                         {"plugin_name": 1, "plugin_version": 2, "protocol": 3, "capabilities": 4, "features": 5})
        got = pb.ConfigureResponse.FromString(_serve.configure_response("acme", "1.0", "hayloft.plugin.v1", ["closer", "aggregator"]))
        self.assertEqual((got.plugin_name, got.plugin_version, got.protocol, list(got.capabilities)),
                         ("acme", "1.0", "hayloft.plugin.v1", ["closer", "aggregator"]))
        self.assertEqual(_serve.configure_response("", "", "", []), b"")

    def test_malformed(self):
        from hayloft_plugin import _batch

        for raw in (b"\x0a\x05ab", b"\x08", b"\x0a"):
            with self.subTest(raw=raw), self.assertRaises(_batch.DecodeError):
                _serve.ConfigureRequest.parse(raw)


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
                self.assertEqual((resp.plugin_name, resp.plugin_version), ("lean", "1.0"))
                out = pb.ScoreBatchResponse.FromString(call("Scorer/ScoreBatch", pb.ScoreBatchRequest(
                    requests=[pb.ScoreRequest(sample=pb.Sample(id="a"), prediction="p")])))
                self.assertEqual(json.loads(out.results[0].response.details_json), {"google.protobuf": False})
                self.assertEqual(call("Lifecycle/Close", pb.CloseRequest()), b"")
                # A malformed Configure is an error, not a crash.
                with self.assertRaises(grpc.RpcError) as cm:
                    chan.unary_unary("/hayloft.plugin.v1.Lifecycle/Configure")(b"\x0a\x05ab", timeout=10)
                self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                chan.unary_unary("/plugin.GRPCController/Shutdown")(b"", timeout=10)
            self.assertEqual(p.wait(timeout=10), 0)


if __name__ == "__main__":
    unittest.main()
