"""Secrets never leave the process: not in logs, messages, diagnostics, stored history or reports.

An endpoint can echo the request's key (a 401 body that quotes it, a proxy that reflects
headers into the answer), and from there it would travel everywhere text goes. So every text
that came from outside is redacted where it enters (the model's answers and errors), and again
where text leaves (the log, the screen, the editor, the store, the report): the key we were
given, the values of environment variables named like secrets, and anything shaped like a
well-known kind of key.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Iterable
from urllib.parse import quote

MARK = "[redacted]"
MIN_SECRET = 8  # shorter values would redact ordinary words
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.I)
_SHAPES = re.compile("|".join([
    r"\bsk-(?:proj-|ant-(?:api\d\d-)?|or-v1-|svcacct-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, OpenRouter
    r"\b(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}",  # GitHub
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google
    r"\b(?:hf|gsk|nvapi|pplx|xai)[_-][A-Za-z0-9_\-]{24,}",  # Hugging Face, Groq, NVIDIA, Perplexity, xAI
]))
# A value after a label that says it is a secret: `Bearer X`, `api_key=X`, `"x-api-key": "X"`.
_LABELLED = re.compile(r"(?i)(\b(?:bearer|basic)\s+|\b(?:api[_-]?key|x-api-key|access[_-]?token|client[_-]?secret|"
                       r"authorization)[\"']?\s*[:=]\s*[\"']?(?:bearer\s+)?)([^\s\"',;]{8,})")
_known: set[str] = set()
_lock = threading.Lock()


def register(secret: str | None) -> None:
    """Remember a secret this process holds (the API key it read), to redact it everywhere."""
    if secret and len(secret) >= MIN_SECRET:
        with _lock:
            _known.update({secret, quote(secret, safe="")})


def register_environment(names: Iterable[str] = ()) -> None:
    """The values of the named variables, and of every variable named like a secret."""
    for name, value in os.environ.items():
        if name in names or _SECRET_NAME.search(name):
            register(value)
    for name in names:
        register(os.environ.get(name))


def redact(text: str) -> str:
    """`text` with every known secret and key-shaped string replaced by [redacted]."""
    if not text:
        return text
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for secret in known:
        if secret in text:
            text = text.replace(secret, MARK)
    return _LABELLED.sub(lambda m: m.group(1) + MARK, _SHAPES.sub(MARK, text))


class RedactingFilter(logging.Filter):
    """Log records at any level, their arguments and tracebacks included, leave redacted."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        clean = redact(message)
        if clean != message or record.args:
            record.msg, record.args = clean, None
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
