"""One chat completion from any OpenAI-compatible endpoint, for whoever asks a model something
(the search's generator, the spec drafter).

Endpoint faults (timeouts, refused connections, 429 with Retry-After, 5xx, empty or malformed
answers) are retried with exponential backoff, then raised as one ChatError that says what
happened; they never crash the caller. The API key is read from the environment variable the
config names and goes nowhere else.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .redaction import redact, register

if TYPE_CHECKING:  # openai takes 0.4 s to import: only a client that talks to a model pays it
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
    max_answer_bytes: int = 256 * 1024  # a larger answer is refused unread
    max_prompt_bytes: int = 256 * 1024  # a larger prompt is never sent

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


class ChatError(RuntimeError):
    """The endpoint gave no usable answer; the message says why, without the key."""


class ChatClient:
    def __init__(self, config: LLMConfig, *, client: Any = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config
        self._sleep = sleep
        register(os.environ.get(config.api_key_env))
        import openai

        self._client = client or openai.OpenAI(base_url=config.base_url,
                                               api_key=os.environ.get(config.api_key_env) or "not-needed",
                                               timeout=config.timeout, max_retries=0)

    def ask(self, system: str, prompt: str, temperature: float | None = None, deadline: float | None = None) -> str:
        """The model's answer, redacted of anything that looks like a secret; raises ChatError
        (its text redacted too) when no usable answer came, by `deadline` (monotonic clock) too."""
        if len(prompt.encode()) > self.config.max_prompt_bytes:
            raise ChatError(f"the prompt is {_kb(len(prompt.encode()))}, over the {_kb(self.config.max_prompt_bytes)} "
                            "cap; not sent")
        import openai

        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
        delay = 1.0
        last = ""
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            wait = delay
            if deadline is not None and time.monotonic() >= deadline - 0.05:
                raise ChatError("the search's time ran out before the model answered")
            try:
                content = self._complete(messages, self.config.temperature if temperature is None else temperature,
                                         deadline)
                if content:
                    return redact(content)
                last = "an empty or malformed answer"
            except AnswerTooLarge as e:
                raise ChatError(redact(str(e))) from None
            except openai.RateLimitError as e:
                last = "429 rate limited"
                wait = _retry_after(e) or delay
            except openai.APIStatusError as e:
                if e.status_code < 500:
                    raise ChatError(redact(f"{self.config.base_url} refused the request: HTTP {e.status_code} "
                                           f"{_short(e.message)}")) from None
                last = f"HTTP {e.status_code}"
            except (openai.APITimeoutError, TimeoutError):
                last = f"no answer within {self.config.timeout:.0f} s"
            except openai.APIConnectionError as e:
                last = f"cannot connect ({_short(str(e.__cause__ or e))})"
            except (openai.APIResponseValidationError, ValueError, KeyError, TypeError, AttributeError) as e:
                last = f"a malformed answer ({type(e).__name__})"
            if attempt + 1 < attempts:
                left = deadline - time.monotonic() if deadline is not None else MAX_BACKOFF * 2
                self._sleep(max(0.0, min(wait, MAX_BACKOFF * 2, left)))
                delay = min(delay * 2, MAX_BACKOFF)
        raise ChatError(redact(f"{self.config.base_url}: {last} (gave up after {attempts} attempts)"))

    def _complete(self, messages: list[dict], temperature: float, until: float | None = None) -> str:
        """One request, its answer read as it arrives: no more than `max_answer_bytes` (a
        larger one is refused unread) and no longer than `timeout` in all, nor past `until`
        (an endpoint that drips a byte a second never times out per read)."""
        deadline = time.monotonic() + self.config.timeout
        if until is not None:
            deadline = min(deadline, until)
        cap = self.config.max_answer_bytes
        client = self._client
        if hasattr(client, "with_options"):  # no single read may outlast the deadline either
            client = client.with_options(timeout=max(0.1, deadline - time.monotonic()))
        with client.chat.completions.with_streaming_response.create(
                model=self.config.model, messages=messages, temperature=temperature,
                max_tokens=self.config.max_tokens) as response:
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > cap:
                raise AnswerTooLarge(int(declared), cap)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > cap:
                    raise AnswerTooLarge(len(body), cap, read_all=False)
                if time.monotonic() > deadline:
                    raise TimeoutError
        return _content(json.loads(bytes(body)))


class AnswerTooLarge(Exception):
    def __init__(self, size: int, cap: int, read_all: bool = True) -> None:
        size_text = _kb(size) if read_all else f"over {_kb(cap)}"
        super().__init__(f"the model's answer is {size_text}, over the {_kb(cap)} cap (llm.maxAnswerBytes); "
                         "refused unread")


def _content(data: Any) -> str:
    content = data["choices"][0]["message"]["content"] if data.get("choices") else None
    return content.strip() if isinstance(content, str) else ""


def _kb(n: int) -> str:
    return f"{n / 1024:.0f} KB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"


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
