"""Options that every GPU command takes."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rich.console import Console

from ..llmclient import LLMConfig
from ..redaction import redact


def fail(message: str, code: int) -> int:
    """One line on stderr, no traceback; the exit status to return."""
    print(redact(f"fsr: {message}"), file=sys.stderr)
    return code


class _Redacting:
    """A text stream that redacts what is written to it (the console's last line of defence:
    texts from outside are redacted where they enter already)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(redact(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def make_console(stderr: bool = False, **kwargs: Any) -> Console:
    """A rich console on stdout (or stderr) that never shows a secret."""
    return Console(file=_Redacting(sys.stderr if stderr else sys.stdout), **kwargs)


def add_gpu_options(p: argparse.ArgumentParser, several: bool = False) -> None:
    if several:
        p.add_argument("--gpu", default="0", help="GPU index, several (0,1), or all: a round's candidates "
                                                  "fan out over them (default 0)")
    else:
        p.add_argument("--gpu", type=int, default=0, help="GPU index (default 0)")
    p.add_argument("--no-sanitize", action="store_true", help="skip compute-sanitizer on round leaders and the winner")
    p.add_argument("--min-gain", type=float, default=0.02,
                   help="a win's whole speedup interval must lie above 1 + this (default 0.02: 2%%)")
    p.add_argument("--flag", action="append", default=[], dest="flags", metavar="FLAG",
                   help="extra nvcc flag, e.g. --flag=-use_fast_math (repeatable)")
    p.add_argument("-I", action="append", default=[], dest="include_dirs", metavar="DIR", help="include directory")


def add_ray_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ray", metavar="ADDRESS", default=os.environ.get("FSR_RAY_ADDRESS", ""),
                   help="evaluate on the GPUs of a Ray cluster: auto, ray://host:10001, or local "
                        "(default: $FSR_RAY_ADDRESS; none: this machine's GPU)")


def add_llm_options(p: argparse.ArgumentParser, what: str = "none: the built-in generator") -> None:
    p.add_argument("--llm-base-url", default=os.environ.get("FSR_LLM_BASE_URL", ""),
                   help=f"OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (default: $FSR_LLM_BASE_URL; {what})")
    p.add_argument("--llm-model", default=os.environ.get("FSR_LLM_MODEL", ""))
    p.add_argument("--llm-key-env", default=os.environ.get("FSR_LLM_KEY_ENV", "OPENAI_API_KEY"),
                   help="name of the environment variable holding the API key (default OPENAI_API_KEY)")
    p.add_argument("--llm-temperature", type=float, default=0.7)
    p.add_argument("--llm-max-answer-bytes", type=int, default=256 * 1024,
                   help="a model's answer larger than this is refused unread (default 262144)")


def llm_config(args: argparse.Namespace) -> LLMConfig:
    return LLMConfig(base_url=args.llm_base_url, model=args.llm_model, api_key_env=args.llm_key_env,
                     temperature=args.llm_temperature, max_answer_bytes=args.llm_max_answer_bytes)
