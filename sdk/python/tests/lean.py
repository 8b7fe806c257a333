"""A scorer that reports whether its process has imported the protobuf
runtime, which a scorer under `hayloft score` (Configure, ScoreBatch,
Close) does not need."""

import sys

from hayloft_plugin import Plugin, Score

plugin = Plugin("lean", "1.0")


@plugin.scorer("modules")
def modules():
    def score(sample, prediction):
        return Score(value=1.0, details={"google.protobuf": "google.protobuf" in sys.modules})

    return score
