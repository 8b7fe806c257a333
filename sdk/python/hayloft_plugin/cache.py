"""The kernel's embedding cache, as a plugin component receives it.

hayloft keeps embeddings in the run's journal, keyed by (embedder identity,
SHA-256 of a chunk's text), so a second retrieval ablation over the same
documents embeds nothing again (sdk.EmbeddingCache). A component that
caches embeddings defines use_embedding_cache(cache); hayloft offers the
cache to retrievers, and the SDK hands it over before provision(). A
component the host gives no cache (hayloft validate, a run without a
journal) is never called.

    class Dense:
        def use_embedding_cache(self, cache):
            self.cache = cache

        def retrieve(self, sample):
            hashes = [hashlib.sha256(c.encode()).digest() for c in chunks]
            vecs = self.cache.get_embeddings("my-server/model-x", hashes)
            ...
            self.cache.put_embeddings("my-server/model-x", missing_hashes, new_vectors)

The cache is served by the host over go-plugin's broker: a gRPC
connection the host offers this process while it configures the component.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .errors import PluginError

__all__ = ["EmbeddingCache"]

# How long Configure waits for the host's address of the cache (go-plugin's
# broker waits as long for a Dial).
BROKER_TIMEOUT = 5.0


class EmbeddingCache:
    """Vectors keyed by (embedder, 32-byte SHA-256 of a chunk's text). The
    embedder identity names the server and model and holds no secret."""

    def __init__(self, channel: Any):
        from ._proto import plugin_pb2_grpc as rpc

        self._channel = channel
        self._stub = rpc.EmbeddingCacheStub(channel)

    def get_embeddings(self, embedder: str, hashes: Sequence[bytes]) -> List[Optional[List[float]]]:
        """out[i] is the vector cached for hashes[i], or None."""
        from ._proto import plugin_pb2 as pb

        hashes = _check(hashes)
        resp = self._call(self._stub.GetEmbeddings, pb.GetEmbeddingsRequest(embedder=embedder, chunk_sha256=hashes))
        if len(resp.vectors) != len(hashes):
            raise PluginError(f"embedding cache: {len(resp.vectors)} vectors for {len(hashes)} hashes")
        return [list(v.values) or None for v in resp.vectors]

    def put_embeddings(self, embedder: str, hashes: Sequence[bytes], vectors: Sequence[Sequence[float]]) -> None:
        """Cache vectors[i] as the vector of hashes[i], replacing any."""
        from ._proto import plugin_pb2 as pb

        hashes = _check(hashes)
        if len(vectors) != len(hashes):
            raise ValueError(f"put_embeddings: {len(vectors)} vectors for {len(hashes)} hashes")
        req = pb.PutEmbeddingsRequest(embedder=embedder, chunk_sha256=hashes,
                                      vectors=[pb.EmbeddingVector(values=v) for v in vectors])
        self._call(self._stub.PutEmbeddings, req)

    def _call(self, fn: Any, req: Any) -> Any:
        import grpc

        from . import _wire

        try:
            return fn(req)
        except grpc.RpcError as e:
            raise _wire.rpc_error(e, "embedding cache") from None

    def close(self) -> None:
        self._channel.close()


def _check(hashes: Sequence[bytes]) -> List[bytes]:
    out = [bytes(h) for h in hashes]
    for i, h in enumerate(out):
        if len(h) != 32:
            raise ValueError(f"hash {i} is {len(h)} bytes, want a 32-byte SHA-256 digest")
    return out


class Broker:
    """The plugin side of go-plugin's GRPCBroker: the host sends, on the
    StartStream stream, the address of each service it offers under an id
    (ConnInfo); dial() waits for it and connects."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._offers: Dict[int, Tuple[str, str]] = {}

    def offer(self, conn_info: bytes) -> None:
        """Record one encoded ConnInfo (service_id = 1, network = 2,
        address = 3; knock = 4 is for multiplexed brokers, which this
        plugin does not announce)."""
        from ._wire import _fields

        f = dict(_fields(conn_info))
        sid, net, addr = f.get(1, 0), f.get(2, b""), f.get(3, b"")
        if not isinstance(sid, int) or not sid or not isinstance(addr, bytes) or not addr:
            return
        with self._cond:
            self._offers[sid] = (bytes(net).decode() or "unix", addr.decode())
            self._cond.notify_all()

    def address(self, sid: int, timeout: float = BROKER_TIMEOUT) -> Tuple[str, str]:
        with self._cond:
            if not self._cond.wait_for(lambda: sid in self._offers, timeout):
                raise PluginError(f"the host offered service {sid} over the plugin broker but sent no address within {timeout:.0f} s")
            return self._offers.pop(sid)

    def dial_cache(self, sid: int, options: Any = ()) -> EmbeddingCache:
        import grpc

        net, addr = self.address(sid)
        target = "unix:" + addr if net == "unix" else addr
        return EmbeddingCache(grpc.insecure_channel(target, options=list(options)))
