"""acme in Python: the arith task and numeric scorer of examples/plugin-acme,
written with the hayloft_plugin SDK.

    python3 -m hayloft_plugin pack acme:plugin -o acme.pyz   # prints the sha256
    hayloft run acme.hcl
"""

import random
import re
from dataclasses import dataclass

from hayloft_plugin import CODE_BAD_REQUEST, ConfigError, Plugin, RequestError, Sample, Score, path_option

plugin = Plugin("acme", "1.0.0")

FILLER = "The barn was quiet and the hay was dry. "
QUESTION = "What is the sum of the first number and the second number? Answer with the number only."


@dataclass
class ArithOptions:
    count: int = 20
    seed: int = 1
    filler_sentences: int = 50
    # Filler sentences from a file, one a line, in place of the built-in
    # one; a relative path is beside the config file.
    filler_file: str = path_option("")


@plugin.task("arith")
def arith(opts: ArithOptions):
    """Sums hidden in filler text."""
    if opts.count < 1:
        raise ConfigError("count", f"must be at least 1, got {opts.count}")
    if opts.filler_sentences < 0:
        raise ConfigError("filler_sentences", "must not be negative")
    filler = [FILLER]
    if opts.filler_file:
        try:
            with open(opts.filler_file, encoding="utf-8") as f:
                filler = [line.strip() + " " for line in f if line.strip()]
        except OSError as e:
            raise ConfigError("filler_file", f"{e.strerror}: {opts.filler_file}") from None
        if not filler:
            raise ConfigError("filler_file", f"{opts.filler_file} has no sentences")
    return Arith(opts, filler)


class Arith:
    def __init__(self, opts: ArithOptions, filler):
        self.opts = opts
        self.filler = filler

    def count(self, limit):
        return self.opts.count

    def samples(self, limit):
        rng = random.Random(self.opts.seed)
        filler = self.opts.filler_sentences
        for i in range(self.opts.count):
            a, b = rng.randrange(1000), rng.randrange(1000)
            pos = rng.randrange(filler + 1)
            parts = [self.filler[j % len(self.filler)] for j in range(filler)]
            parts.insert(pos, f"The first number is {a} and the second number is {b}. ")
            yield Sample(
                id=str(i),
                context="".join(parts),
                question=QUESTION,
                targets=[str(a + b)],
                depth=pos / filler if filler else 0.0,
                language="en",
            )


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class NumericOptions:
    tolerance: float = 0.0


@plugin.scorer("numeric")
def numeric(opts: NumericOptions):
    """1 when the first number in the prediction equals a target within the
    tolerance; a prediction without a number is invalid, not wrong."""
    if opts.tolerance < 0:
        raise ConfigError("tolerance", "must not be negative")

    def score(sample, prediction):
        if not sample.targets:
            raise RequestError(CODE_BAD_REQUEST, f"sample {sample.id} has no targets")
        m = NUMBER.search(prediction)
        if m is None:
            return Score(invalid=True, details={"reason": "no number in prediction"})
        got = float(m.group())
        for t in sample.targets:
            try:
                if abs(got - float(t)) <= opts.tolerance:
                    return Score(value=1, details={"parsed": got})
            except ValueError:
                continue
        return Score(value=0, details={"parsed": got})

    return score


if __name__ == "__main__":
    plugin.main()
