"""hayloft-plugin: write hayloft plugins (tasks, scorers, models,
retrievers) in Python.

    from dataclasses import dataclass
    from hayloft_plugin import Plugin, Score

    plugin = Plugin("acme", "1.0.0")

    @dataclass
    class Options:
        tolerance: float = 0.0

    @plugin.scorer("numeric")
    def numeric(opts: Options):
        def score(sample, prediction):
            return Score(value=float(prediction.strip() in sample.targets))
        return score

Pack it with `python3 -m hayloft_plugin pack acme:plugin -o acme.pyz` and
point a `plugin` block at acme.pyz. The program speaks hayloft's plugin
protocol (sdk/plugin/proto) over go-plugin's handshake, like a Go plugin.
Importing this package does not import grpc: `describe` stays cheap.
"""

from .errors import (
    CODE_BAD_REQUEST,
    CODE_BAD_RESPONSE,
    CODE_CONTEXT_LENGTH,
    CODE_EXCEPTION,
    Attempt,
    ConfigError,
    PluginError,
    RequestError,
    RetryableError,
    Unsupported,
)
from .options import decode, path_option, resolve_path, suggest
from .plugin import Plugin
from .types import (
    CONTEXT_SLOT,
    QUESTION_SLOT,
    Aggregate,
    Chunk,
    GenerateRequest,
    Generation,
    GridPoint,
    Message,
    Retrieval,
    Sample,
    Score,
    Tokens,
)

__version__ = "0.1.0"

__all__ = [
    "Plugin",
    "Sample",
    "GridPoint",
    "Message",
    "Score",
    "Aggregate",
    "GenerateRequest",
    "Generation",
    "Tokens",
    "Chunk",
    "Retrieval",
    "Attempt",
    "ConfigError",
    "RequestError",
    "RetryableError",
    "Unsupported",
    "PluginError",
    "CODE_BAD_REQUEST",
    "CODE_BAD_RESPONSE",
    "CODE_CONTEXT_LENGTH",
    "CODE_EXCEPTION",
    "CONTEXT_SLOT",
    "QUESTION_SLOT",
    "decode",
    "path_option",
    "resolve_path",
    "suggest",
]
