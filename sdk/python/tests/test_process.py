"""A packed plugin as hayloft runs it: its own process, the go-plugin
handshake on stdout, gRPC on a unix socket."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile

import grpc

from hayloft_plugin import _pack
from hayloft_plugin._proto import plugin_pb2 as pb
from hayloft_plugin._proto import plugin_pb2_grpc as rpc
from hayloft_plugin._serve import COOKIE_KEY, COOKIE_VALUE

HERE = os.path.dirname(os.path.abspath(__file__))


def pack(tmp, target):
    out = os.path.join(tmp, target.split(":")[0] + ".pyz")
    sha = _pack.pack(target, out, python=sys.executable, path=[HERE])
    return out, sha


def unary(chan, method, data=b""):
    return chan.unary_unary(method)(data, timeout=10)


class PackTest(unittest.TestCase):
    def test_reproducible_and_hash(self):
        with tempfile.TemporaryDirectory() as tmp:
            a, sha = pack(tmp, "noisy:plugin")
            with open(a, "rb") as f:
                data = f.read()
            self.assertEqual(hashlib.sha256(data).hexdigest(), sha)
            self.assertTrue(data.startswith(b"#!" + sys.executable.encode() + b"\n"))
            self.assertTrue(os.access(a, os.X_OK))
            _, sha2 = pack(tmp, "noisy:plugin")
            self.assertEqual(sha, sha2)

    def test_describe_falls_back_to_run_time(self):
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "late.py"), "w") as f:
                f.write("import os\nfrom hayloft_plugin import Plugin\n"
                        "if os.environ.get('LATE_FAIL'):\n    raise RuntimeError('not here')\n"
                        "plugin = Plugin('late', '1')\n\n@plugin.scorer('s')\ndef s():\n    return lambda smp, p: 1.0\n")
            env = dict(os.environ, LATE_FAIL="1", PYTHONPATH=os.path.dirname(HERE))
            r = subprocess.run([sys.executable, "-m", "hayloft_plugin", "pack", "late:plugin", "-o", os.path.join(tmp, "l.pyz"),
                                "--path", tmp, "--python", sys.executable], capture_output=True, text=True, env=env, check=True)
            self.assertIn("does not import here (late: import failed: RuntimeError: not here", r.stderr)
            env.pop("LATE_FAIL")
            r = subprocess.run([os.path.join(tmp, "l.pyz"), "describe"], capture_output=True, text=True, env=env, check=True)
            self.assertEqual(json.loads(r.stdout)["components"], [{"kind": "scorer", "name": "s"}])
            with zipfile.ZipFile(os.path.join(tmp, "l.pyz")) as z:
                self.assertNotIn(_pack.DESCRIBE_ENTRY, z.namelist(), "nothing stored to describe it")

    def test_pack_cli_prints_sha256(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "n.pyz")
            r = subprocess.run([sys.executable, "-m", "hayloft_plugin", "pack", "noisy:plugin", "-o", out, "--path", HERE,
                                "--python", sys.executable], capture_output=True, text=True,
                               cwd=os.path.dirname(HERE), check=True)
            with open(out, "rb") as f:
                self.assertIn(f'sha256 = "{hashlib.sha256(f.read()).hexdigest()}"', r.stdout)


class ProcessTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.pyz, _ = pack(self.tmp.name, "noisy:plugin")

    def test_describe_survives_prints(self):
        r = subprocess.run([self.pyz, "describe"], capture_output=True, text=True, check=True)
        info = json.loads(r.stdout)
        self.assertEqual(info["name"], "noisy")
        self.assertEqual(info["components"], [{"kind": "scorer", "name": "loud"}])
        # Described at pack time: the module is not imported to answer.
        self.assertNotIn("hello from import", r.stderr)
        # The same answer is in the archive, where hayloft reads it without
        # running the program.
        with zipfile.ZipFile(self.pyz) as z:
            self.assertEqual(json.loads(z.read(_pack.DESCRIBE_ENTRY)), info)
        # Described at run time (a module that did not import at pack time,
        # or run unpacked): its prints go to stderr, not into the JSON.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.path.dirname(HERE)]))
        r = subprocess.run([sys.executable, "-m", "hayloft_plugin", "run", "noisy:plugin", "describe"], capture_output=True,
                           text=True, check=True, env=env)
        self.assertEqual(json.loads(r.stdout), info)
        self.assertIn("hello from import", r.stderr)

    def test_no_cookie(self):
        r = subprocess.run([self.pyz, "start", "scorer", "loud"], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != COOKIE_KEY})
        self.assertEqual(r.returncode, 1)
        self.assertIn("hayloft starts it itself", r.stderr)
        self.assertEqual(r.stdout, "")

    def start(self):
        env = dict(os.environ, **{COOKIE_KEY: COOKIE_VALUE, "PLUGIN_PROTOCOL_VERSIONS": "1", "PLUGIN_UNIX_SOCKET_DIR": self.tmp.name})
        p = subprocess.Popen([self.pyz, "start", "scorer", "loud"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.addCleanup(lambda: (p.poll() is None and p.kill(), p.wait(), p.stdout.close(), p.stderr.close()))
        line = p.stdout.readline().decode()
        parts = line.rstrip("\n").split("|")
        self.assertEqual(parts[:3], ["1", "1", "unix"], line)
        self.assertEqual(parts[4:], ["grpc", ""], line)
        self.assertTrue(parts[3].startswith(self.tmp.name))
        chan = grpc.insecure_channel("unix:" + parts[3])
        self.addCleanup(chan.close)
        return p, chan

    def test_serve_stdio_shutdown(self):
        p, chan = self.start()
        # go-plugin's health check.
        self.assertEqual(unary(chan, "/grpc.health.v1.Health/Check", b"\x0a\x06plugin"), b"\x08\x01")
        lc = rpc.LifecycleStub(chan)
        resp = lc.Configure(pb.ConfigureRequest(kind="scorer", name="loud", protocol="hayloft.plugin.v1"))
        self.assertEqual((resp.plugin_name, resp.protocol), ("noisy", "hayloft.plugin.v1"))
        # The prints reach the host over GRPCStdio, not the handshake channel.
        stdio = chan.unary_stream("/plugin.GRPCStdio/StreamStdio")(b"")
        got = b""
        for msg in stdio:
            got += msg
            if b"hello from import" in got and b"and to stderr" in got:
                break
        stdio.cancel()
        self.assertEqual(rpc.ScorerStub(chan).Score(pb.ScoreRequest(sample=pb.Sample(id="x"))).value, 1.0)
        # Ctrl-C is the host's to handle.
        p.send_signal(signal.SIGINT)
        self.assertEqual(rpc.ScorerStub(chan).Score(pb.ScoreRequest(sample=pb.Sample(id="y"))).value, 1.0)
        self.assertEqual(unary(chan, "/plugin.GRPCController/Shutdown"), b"")
        self.assertEqual(p.wait(timeout=10), 0)
        self.assertEqual(p.stdout.read(), b"", "user prints leaked onto the protocol's stdout")
        # Logs are hclog JSON lines.
        for line in p.stderr.read().decode().splitlines():
            entry = json.loads(line)
            self.assertIn(entry["@level"], ("trace", "debug", "info", "warn", "error"))

    def test_config_error_detail(self):
        _, chan = self.start()
        with self.assertRaises(grpc.RpcError) as cm:
            rpc.LifecycleStub(chan).Configure(pb.ConfigureRequest(kind="scorer", name="loud", options_json=b'{"x": 1}'))
        e = cm.exception
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        from hayloft_plugin._wire import parse_status_details

        detail = dict(e.trailing_metadata())["grpc-status-details-bin"]
        err = parse_status_details(detail)
        self.assertEqual((err.kind, err.field, err.inner), (pb.Error.KIND_CONFIG, "x", "unknown option"))

    def test_exits_when_parent_dies(self):
        # A parent that starts the plugin and is then killed with SIGKILL.
        env = dict(os.environ, **{COOKIE_KEY: COOKIE_VALUE, "PLUGIN_UNIX_SOCKET_DIR": self.tmp.name})
        code = ("import subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE); "
                "sys.stdout.write(str(p.pid) + '\\n' + p.stdout.readline().decode()); sys.stdout.flush(); "
                "import time; time.sleep(60)")
        parent = subprocess.Popen([sys.executable, "-c", code, self.pyz, "start", "scorer", "loud"],
                                  stdout=subprocess.PIPE, env=env)
        pid = int(parent.stdout.readline())
        self.assertIn(b"|unix|", parent.stdout.readline())
        parent.kill()
        parent.wait()
        parent.stdout.close()
        deadline = time.monotonic() + 10
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().split()[2] == "Z":
                        break  # exited; only its entry waits for a reaper
            except FileNotFoundError:
                break
            time.sleep(0.05)
        self.assertLess(time.monotonic(), deadline, "the plugin outlived its killed parent")


if __name__ == "__main__":
    unittest.main()
