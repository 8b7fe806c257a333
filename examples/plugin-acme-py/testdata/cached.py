"""A retriever that embeds the context's sentences (a toy vector: length
and first letter) through hayloft's embedding cache when hayloft offers
one, for the test of the cache over go-plugin's broker."""

import hashlib

from hayloft_plugin import Plugin, Retrieval

plugin = Plugin("cached", "1.0")


@plugin.retriever("toy")
def toy():
    return Toy()


class Toy:
    cache = None

    def use_embedding_cache(self, cache):
        self.cache = cache

    def retrieve(self, sample):
        chunks = [c.strip() for c in sample.context.split(".") if c.strip()]
        hashes = [hashlib.sha256(c.encode()).digest() for c in chunks]
        vecs = self.cache.get_embeddings("cached/toy", hashes) if self.cache else [None] * len(chunks)
        todo = [i for i, v in enumerate(vecs) if v is None]
        for i in todo:
            vecs[i] = [float(len(chunks[i])), float(ord(chunks[i][0]))]
        if self.cache and todo:
            self.cache.put_embeddings("cached/toy", [hashes[i] for i in todo], [vecs[i] for i in todo])
        best = max(range(len(chunks)), key=lambda i: vecs[i][0])
        return Retrieval(context=chunks[best], details={"embedded": len(todo), "cache": self.cache is not None})
