"""One chat completion from any OpenAI-compatible endpoint, for whoever asks a model something
(the search's generator, the spec drafter).

Endpoint faults (timeouts, refused connections, 429 with Retry-After, 5xx, empty or malformed
answers) are retried with exponential backoff, then raised as one ChatError that says what
happened; they never crash the caller. The API key is read from the environment variable the
config names and goes nowhere else.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import openai

MAX_BACKOFF = 30.0


@dataclass(frozen=True)
class LLMConfig:
    """Any OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, ... The key itself never lives
    here, only the name of the environment variable that holds it."""

    base_url: str = ""  # empty: use the built-in generator
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.7
    timeout: float = 120.0
    max_retries: int = 4
    max_tokens: int = 4096

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class ChatError(RuntimeError):
    """The endpoint gave no usable answer; the message says why, without the key."""


class ChatClient:
    def __init__(self, config: LLMConfig, *, client: Any = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self._sleep = sleep
        self._client = client or openai.OpenAI(base_url=config.base_url,
                                               api_key=os.environ.get(config.api_key_env) or "not-needed",
                                               timeout=config.timeout, max_retries=0)

    def ask(self, system: str, prompt: str, temperature: float | None = None) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        delay = 1.0
        last = ""
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            wait = delay
            try:
                response = self._client.chat.completions.create(
                    model=self.config.model, messages=messages,
                    temperature=self.config.temperature if temperature is None else temperature,
                    max_tokens=self.config.max_tokens)
                content = _content(response)
                if content:
                    return content
                last = "an empty or malformed answer"
            except openai.RateLimitError as e:
                last = "429 rate limited"
                wait = _retry_after(e) or delay
            except openai.APIStatusError as e:
                if e.status_code < 500:
                    raise ChatError(f"{self.config.base_url} refused the request: HTTP {e.status_code} "
                                    f"{_short(e.message)}") from None
                last = f"HTTP {e.status_code}"
            except openai.APITimeoutError:
                last = f"no answer within {self.config.timeout:.0f} s"
            except openai.APIConnectionError as e:
                last = f"cannot connect ({_short(str(e.__cause__ or e))})"
            except (openai.APIResponseValidationError, ValueError, KeyError, TypeError) as e:
                last = f"a malformed answer ({type(e).__name__})"
            if attempt + 1 < attempts:
                self._sleep(min(wait, MAX_BACKOFF * 2))
                delay = min(delay * 2, MAX_BACKOFF)
        raise ChatError(f"{self.config.base_url}: {last} (gave up after {attempts} attempts)")


def _content(response: Any) -> str:
    choices = getattr(response, "choices", None) or []
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    return content.strip() if isinstance(content, str) else ""


def _retry_after(error: openai.APIStatusError) -> float | None:
    headers = getattr(error.response, "headers", {}) or {}
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                return None
    return None


def _short(text: str) -> str:
    return " ".join(str(text).split())[:160]
