"""Logs as hclog JSON on the real stderr, which go-plugin parses back into
entries with levels under the plugin's name in hayloft's output."""

from __future__ import annotations

import logging
import os
import traceback

from . import _stdio

LOG_LEVEL_ENV = "HAYLOFT_PLUGIN_LOG_LEVEL"
TRACE = 5

_LEVELS = {"trace": TRACE, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
           "warning": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 10}

# Fields of a LogRecord that are not the caller's extra= key-value pairs.
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _level_name(no: int) -> str:
    if no <= TRACE:
        return "trace"
    if no <= logging.DEBUG:
        return "debug"
    if no <= logging.INFO:
        return "info"
    if no <= logging.WARNING:
        return "warn"
    return "error"


class HclogHandler(logging.Handler):
    def __init__(self, module: str):
        super().__init__()
        self.module = module

    def emit(self, record: logging.LogRecord) -> None:
        import json  # here, not at the top: start-up does not need them
        from datetime import datetime, timezone

        try:
            entry = {
                "@level": _level_name(record.levelno),
                "@message": record.getMessage(),
                "@module": self.module,
                "@timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            }
            for k, v in vars(record).items():
                if k not in _RESERVED and not k.startswith("_"):
                    entry[k] = v
            if record.exc_info:
                entry["traceback"] = "".join(traceback.format_exception(*record.exc_info))
            if record.name not in ("root", "hayloft_plugin"):
                entry["logger"] = record.name
            _stdio.write_stderr((json.dumps(entry, default=str) + "\n").encode())
        except Exception:  # a log line must never take the plugin down
            pass


def setup(module: str) -> logging.Logger:
    """Route the root logger (the user's logging calls too) to hclog JSON at
    the level the host passed."""
    logging.addLevelName(TRACE, "TRACE")
    level = _LEVELS.get(os.environ.get(LOG_LEVEL_ENV, "").strip().lower(), logging.INFO)
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(HclogHandler(module))
    root.setLevel(level)
    return logging.getLogger("hayloft_plugin")
