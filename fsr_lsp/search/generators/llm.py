"""Rewrites from a language model behind any OpenAI-compatible chat-completions endpoint.

Endpoint faults (timeouts, refused connections, 429 with Retry-After, 5xx, empty or malformed
answers) are retried with exponential backoff, then reported as a GeneratorError; they never
crash the search. The API key is read from the environment variable the config names and
goes nowhere else.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import openai

from ..config import LLMConfig
from ..context import RoundContext
from ..prompting import fix_prompt, propose_prompt, system_prompt
from ..proposal import Proposal, Tried
from .base import GeneratorError

_FENCE = re.compile(r"```[ \t]*([\w+#-]*)[^\n]*\n(.*?)```", re.S)
MAX_BACKOFF = 30.0


class LLMGenerator:
    def __init__(self, config: LLMConfig, *, client: Any = None, sleep: Callable[[float], None] = time.sleep,
                 parallel: int = 4) -> None:
        self.config = config
        self.name = f"llm:{config.model}"
        self._sleep = sleep
        self._parallel = parallel
        self._client = client or openai.OpenAI(base_url=config.base_url,
                                               api_key=os.environ.get(config.api_key_env) or "not-needed",
                                               timeout=config.timeout, max_retries=0)

    def propose(self, ctx: RoundContext, n: int) -> list[Proposal]:
        prompts = [propose_prompt(ctx, i, n) for i in range(n)]
        with ThreadPoolExecutor(max_workers=max(1, min(self._parallel, n))) as pool:
            outcomes = list(pool.map(self._ask_safely, prompts))
        proposals = [self._proposal(prompt, answer, ctx.round) for prompt, answer in zip(prompts, outcomes)
                     if not isinstance(answer, GeneratorError)]
        if not proposals:
            errors = [a for a in outcomes if isinstance(a, GeneratorError)]
            raise errors[0] if errors else GeneratorError("the model returned nothing")
        return proposals

    def fix(self, ctx: RoundContext, failed: Tried) -> Proposal | None:
        prompt = fix_prompt(failed)
        answer = self._ask(prompt)
        p = self._proposal(prompt, answer, ctx.round)
        return Proposal(source=p.source, generator=p.generator, note=f"fix of {failed.proposal.note or 'a candidate'}: "
                        f"{p.note}"[:300], prompt=p.prompt, response=p.response, parent=failed.proposal.key,
                        round=ctx.round)

    # ------------------------------------------------------------ one completion

    def _ask_safely(self, prompt: str) -> str | GeneratorError:
        try:
            return self._ask(prompt)
        except GeneratorError as e:
            return e

    def _ask(self, prompt: str) -> str:
        messages = [{"role": "system", "content": system_prompt()}, {"role": "user", "content": prompt}]
        delay = 1.0
        last = ""
        attempts = self.config.max_retries + 1
        for attempt in range(attempts):
            wait = delay
            try:
                response = self._client.chat.completions.create(
                    model=self.config.model, messages=messages, temperature=self.config.temperature,
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
                    raise GeneratorError(f"{self.config.base_url} refused the request: HTTP {e.status_code} "
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
        raise GeneratorError(f"{self.config.base_url}: {last} (gave up after {attempts} attempts)")

    def _proposal(self, prompt: str, answer: str, round_: int) -> Proposal:
        code = extract_code(answer)
        note = _note(answer) if code else "the answer held no CUDA kernel"
        return Proposal(source=code or answer, generator=self.name, note=note, prompt=f"{system_prompt()}\n\n{prompt}",
                        response=answer, round=round_)


def extract_code(answer: str) -> str:
    """The fenced block holding a `__global__` kernel (the longest if several), else ''."""
    blocks = [code for _, code in _FENCE.findall(answer) if "__global__" in code]
    if blocks:
        return max(blocks, key=len).strip() + "\n"
    if "__global__" in answer and "```" not in answer:
        return answer.strip() + "\n"
    return ""


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


def _note(answer: str) -> str:
    prose = _FENCE.sub("", answer).strip()
    return " ".join(prose.split())[:300]


def _short(text: str) -> str:
    return " ".join(str(text).split())[:160]
