"""The data a component receives and returns, as plain dataclasses. Each
has a docstring: for one without, @dataclass writes one from the class's
inspect.signature, a cost at every start-up.

They mirror package sdk's types field for field; the conversion to and from
the wire lives in _wire.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import Attempt

__all__ = [
    "Message",
    "GridPoint",
    "Sample",
    "Score",
    "Aggregate",
    "GenerateRequest",
    "Generation",
    "Tokens",
    "Chunk",
    "Retrieval",
    "Attempt",
    "CONTEXT_SLOT",
    "QUESTION_SLOT",
]

# Placeholders a task may put in its message templates; hayloft fills them
# after retrieval and truncation (sdk.ContextSlot, sdk.QuestionSlot).
CONTEXT_SLOT = "{{context}}"
QUESTION_SLOT = "{{question}}"


@dataclass
class Message:
    """One chat message (sdk.Message)."""

    role: str  # "system", "user" or "assistant"
    content: str


@dataclass
class GridPoint:
    """A sample's place in its benchmark's grid, as asked for
    (sdk.GridPoint): length in the task's unit (0 when the grid has no
    length axis), depth 0..1 (negative when it has no depth axis). Reports
    bucket a length x depth grid by it."""

    length: int = 0
    depth: float = 0.0


@dataclass
class Sample:
    """One evaluation item (sdk.Sample). length is the context's size in
    tokens as measured by tokenizer; depth is the evidence's relative
    position (0..1), negative when it does not apply. metadata must be
    JSON-encodable."""

    id: str
    context: str = ""
    question: str = ""
    messages: List[Message] = field(default_factory=list)
    choices: List[str] = field(default_factory=list)
    targets: List[str] = field(default_factory=list)
    length: int = 0
    tokenizer: str = ""
    depth: float = -1.0
    language: str = ""
    subtask: str = ""
    max_new_tokens: int = 0
    # A context window in tokens to fit this sample to in place of the
    # model's, when smaller (a truncation study); 0 leaves the model's.
    window: int = 0
    metadata: Dict[str, Any] = field(default_factory=dict)
    # The grid point the task made this sample for; None buckets reports by
    # the measured length and depth.
    grid: Optional[GridPoint] = None


@dataclass
class Score:
    """One sample's score. invalid marks a prediction the scorer could not
    interpret: counted apart, never silently scored 0. stats are sufficient
    statistics for an aggregate."""

    value: float = 0.0
    invalid: bool = False
    details: Dict[str, Any] = field(default_factory=dict)
    stats: List[float] = field(default_factory=list)


@dataclass
class Aggregate:
    """An eval-level metric, for scorers whose corpus value is not the mean."""

    value: float
    n: int
    invalid: int = 0
    ci_low: float = 0.0
    ci_high: float = 0.0
    details: Dict[str, Any] = field(default_factory=dict)


@dataclass
class GenerateRequest:
    """One rendered request. Unset parameters (None) mean the server's
    default. sample has its context only for models with reads_context."""

    messages: List[Message]
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    max_tokens: int = 0
    stop: List[str] = field(default_factory=list)
    seed: Optional[int] = None
    sample: Optional[Sample] = None
    # The server slot hayloft's send order chose (llama-server's id_slot),
    # None when it chose none; advice, not part of the request's identity.
    slot: Optional[int] = None


@dataclass
class Generation:
    """A model's answer (sdk.GenerateResponse)."""

    text: str
    finish_reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: List[Attempt] = field(default_factory=list)


@dataclass
class Tokens:
    """A tokenizer's answer: one id list per text, and its name."""

    ids: List[List[int]]
    tokenizer: str


@dataclass
class Chunk:
    """One retrieved chunk of the context (sdk.Chunk)."""

    id: int
    offset: int  # byte offset in the original context
    score: float


@dataclass
class Retrieval:
    """A retriever's answer: the new context and the chunks it kept
    (sdk.RetrieveResponse)."""

    context: str
    chunks: List[Chunk] = field(default_factory=list)
    details: Dict[str, Any] = field(default_factory=dict)
