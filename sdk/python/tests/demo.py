"""A plugin with one component of each kind, for the tests."""

import os
import time
from dataclasses import dataclass, field
from typing import List, Optional

from hayloft_plugin import (Aggregate, Chunk, ConfigError, Generation, Plugin, RequestError, Retrieval,
                            RetryableError, Sample, Score, Tokens, path_option)

plugin = Plugin("demo", "0.1.0")


@dataclass
class GridOptions:
    n: int = 5
    prefix: str = "s"
    depths: List[float] = field(default_factory=lambda: [0.0, 0.5, 1.0])
    fail_at: Optional[int] = None


@plugin.task("grid")
def grid(opts: GridOptions):
    if opts.n < 1:
        raise ConfigError("n", f"must be at least 1, got {opts.n}")

    class Grid:
        def count(self, limit):
            return opts.n

        def samples(self, limit):
            for i in range(opts.n):
                if opts.fail_at == i:
                    yield RequestError("bad_item", f"item {i} is broken")
                    continue
                yield Sample(id=f"{opts.prefix}{i}", context="ctx " * i, question="q?", targets=[str(i)],
                             depth=opts.depths[i % len(opts.depths)], length=i, tokenizer="words", window=100 * i,
                             metadata={"i": i})

    return Grid()


@plugin.task("endless")
def endless():
    def samples():
        i = 0
        while True:
            yield Sample(id=str(i))
            i += 1

    return samples


@dataclass
class MatchOptions:
    ignore_case: bool = False


@plugin.scorer("match")
def match(opts: MatchOptions):
    class Match:
        def score(self, sample, prediction):
            if not sample.targets:
                raise RequestError("bad_request", f"sample {sample.id} has no targets")
            if prediction == "":
                return Score(invalid=True)
            p = prediction.lower() if opts.ignore_case else prediction
            ts = [t.lower() if opts.ignore_case else t for t in sample.targets]
            return Score(value=float(p in ts), details={"prediction": prediction}, stats=[1.0])

        def aggregate(self, scores):
            valid = [s for s in scores if not s.invalid]
            mean = sum(s.value for s in valid) / len(valid) if valid else 0.0
            return Aggregate(value=mean, n=len(valid), invalid=len(scores) - len(valid))

    return Match()


@plugin.scorer("pidscore", processes=2)
def pidscore():
    def score(sample, prediction):
        return Score(value=len(prediction), details={"pid": os.getpid()})

    return score


@plugin.scorer("wrongtype")
def wrongtype():
    return lambda sample, prediction: "yes"


@plugin.scorer("raises")
def raises():
    def score(sample, prediction):
        if sample.id == "bad":
            raise ValueError("cannot score bad")
        return True

    return score


@plugin.model("echo")
def echo(opts: dict):
    class Echo:
        reads_context = True

        def generate(self, req):
            if req.max_tokens < 0:
                raise RetryableError("busy", after=1.5)
            last = req.messages[-1].content if req.messages else ""
            return Generation(text=last[::-1], finish_reason="stop", prompt_tokens=len(last), completion_tokens=1)

        def tokenize(self, texts):
            return Tokens(ids=[[len(w) for w in t.split()] for t in texts], tokenizer="lens")

    return Echo()


@plugin.model("slow")
def slow():
    def generate(req):
        time.sleep(0.2)
        return "done"

    class Slow:
        pass

    s = Slow()
    s.generate = generate
    return s


@dataclass
class ServedOptions:
    # Stands for a server's address: the file's first line is the model
    # "the server" serves now, learned in provision() as an
    # OpenAI-compatible client learns it from /v1/models.
    server: str = path_option("")
    timeout: float = 30.0
    max_retries: int = 2


@plugin.model("served")
def served(opts: ServedOptions):
    class Served:
        # They change how a request would travel, never the answer: hayloft
        # keeps them out of the model's cache key.
        transport_options = ("timeout", "max_retries")
        served_model = ""

        def provision(self):
            if opts.server:
                with open(opts.server) as f:
                    self.served_model = f.readline().strip()

        def generate(self, req):
            return f"{self.served_model or 'nobody'} answers 42"

    return Served()


@plugin.retriever("firsthalf")
def firsthalf():
    def retrieve(sample):
        half = len(sample.context) // 2
        return Retrieval(context=sample.context[:half], chunks=[Chunk(id=0, offset=0, score=1.0)])

    class R:
        pass

    r = R()
    r.retrieve = retrieve
    return r


@plugin.retriever("cached")
def cached():
    """Embeds the context's sentences (a toy vector: length and first
    letter), through the host's embedding cache when it offers one."""
    import hashlib

    class Cached:
        cache = None

        def use_embedding_cache(self, cache):
            self.cache = cache

        def retrieve(self, sample):
            chunks = [c.strip() for c in sample.context.split(".") if c.strip()]
            hashes = [hashlib.sha256(c.encode()).digest() for c in chunks]
            vecs = self.cache.get_embeddings("demo/toy", hashes) if self.cache else [None] * len(chunks)
            todo = [i for i, v in enumerate(vecs) if v is None]
            for i in todo:
                vecs[i] = [float(len(chunks[i])), float(ord(chunks[i][0]))]
            if self.cache and todo:
                self.cache.put_embeddings("demo/toy", [hashes[i] for i in todo], [vecs[i] for i in todo])
            best = max(range(len(chunks)), key=lambda i: vecs[i][0])
            return Retrieval(context=chunks[best], details={"embedded": len(todo), "cache": self.cache is not None})

    return Cached()
