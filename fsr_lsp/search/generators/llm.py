"""Rewrites from a language model behind any OpenAI-compatible chat-completions endpoint.

Endpoint faults (timeouts, refused connections, 429 with Retry-After, 5xx, empty or malformed
answers) are retried with exponential backoff, then reported as a GeneratorError; they never
crash the search. The API key is read from the environment variable the config names and
goes nowhere else.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Callable

from ...kernels import Kernel
from ...llmclient import ChatClient, ChatError
from ...specs import Spec
from ..config import LLMConfig
from ..context import RoundContext
from ..labels import code_label, model_label
from ..prompting import fix_prompt, propose_prompt, system_prompt
from ..proposal import Proposal, Tried
from .base import GeneratorError
from .screening import first_to_verify, screened_order
from .structural import structural_proposals

_FENCE = re.compile(r"```[ \t]*([\w+#-]*)[^\n]*\n(.*?)```", re.S)


class LLMGenerator:
    wants_profile = True  # the loop profiles each round's leader for the next prompt

    def __init__(self, config: LLMConfig, *, client: Any = None, sleep: Callable[[float], None] = time.sleep,
                 parallel: int = 8) -> None:
        self.config = config
        self.name = f"llm:{config.model}"
        self._parallel = parallel
        self._chat = ChatClient(config, client=client, sleep=sleep)
        self._losers: dict[str, str] = {}  # structural rewrites that screened slower than the original: key -> note

    def likely_first(self, kernel: Kernel, spec: Spec, definition: str) -> list[Proposal]:
        """fsr's structural rewrites open the first round here too (compiled ahead while the
        worker starts)."""
        return structural_proposals(kernel, spec, definition)

    def propose(self, ctx: RoundContext, n: int) -> list[Proposal]:
        if ctx.round == 0 and ctx.rounds > 1:
            # fsr's own structural rewrite, where one applies, goes first and alone: the model's
            # first round then sees it measured (its code, its speedup) as an example
            structural = [p for p in structural_proposals(ctx.kernel, ctx.spec, ctx.definition, ctx.round, ctx.gpu,
                                                     ctx.launch_fixed)
                          if p.key not in self._losers]
            screened: dict[str, float] = {}
            structural = screened_order(ctx, structural, self._losers, screened)  # the ones that lose here left out
            if structural:
                return first_to_verify(ctx, structural, screened)[:n]
        # the model is told what was tried: the verified history, and fsr's rewrites that lost at their screening
        ctx.screened_out = [self._losers[k] for k in sorted(self._losers)]
        prompts = [propose_prompt(ctx, i, n) for i in range(n)]
        outcomes = self._ask_all(prompts, ctx)
        proposals = [self._proposal(ctx, prompt, answer) for prompt, answer in zip(prompts, outcomes)
                     if not isinstance(answer, GeneratorError)]
        if not proposals:
            errors = [a for a in outcomes if isinstance(a, GeneratorError)]
            raise errors[0] if errors else GeneratorError("the model returned nothing")
        return proposals

    def fix(self, ctx: RoundContext, failed: Tried) -> Proposal | None:
        prompt = fix_prompt(failed)
        if prompt is None:
            return None  # too long to send back: the candidate is dropped, not fixed
        (answer,) = self._ask_all([prompt], ctx)
        if isinstance(answer, GeneratorError):
            raise answer
        p = self._proposal(ctx, prompt, answer)
        return Proposal(source=p.source, generator=p.generator, note=f"fix of {failed.proposal.note or 'a candidate'}: "
                        f"{p.note}"[:300], prompt=p.prompt, response=p.response, parent=failed.proposal.key,
                        round=ctx.round)

    # ------------------------------------------------------------ completions

    def _ask_all(self, prompts: list[str], ctx: RoundContext) -> list[str | GeneratorError]:
        """Each prompt's answer (or why none), asked side by side on daemon threads that the
        search stops waiting for when it is cancelled: a hanging endpoint then keeps neither the
        search nor the process (a server's exit) waiting."""
        outcomes: list[str | GeneratorError | None] = [None] * len(prompts)
        slots = threading.Semaphore(max(1, min(self._parallel, len(prompts))))
        done = threading.Event()
        left = [len(prompts)]
        lock = threading.Lock()

        def one(i: int) -> None:
            with slots:
                outcomes[i] = self._ask_safely(prompts[i], ctx.deadline)
            with lock:
                left[0] -= 1
                if left[0] == 0:
                    done.set()

        for i in range(len(prompts)):
            threading.Thread(target=one, args=(i,), name="fsr-llm-request", daemon=True).start()
        while not done.wait(0.1):
            if ctx.cancel is not None and ctx.cancel.is_set():
                break
        return [o if o is not None else GeneratorError("the search was stopped before the model answered")
                for o in outcomes]

    def _ask_safely(self, prompt: str, deadline: float | None = None) -> str | GeneratorError:
        try:
            return self._ask(prompt, deadline)
        except GeneratorError as e:
            return e

    def _ask(self, prompt: str, deadline: float | None = None) -> str:
        try:
            return self._chat.ask(system_prompt(), prompt, deadline=deadline)
        except ChatError as e:
            raise GeneratorError(str(e)) from None

    def _proposal(self, ctx: RoundContext, prompt: str, answer: str) -> Proposal:
        code = extract_code(answer)
        note = label(ctx, answer, code) if code else "the answer held no CUDA kernel"
        return Proposal(source=code or answer, generator=self.name, note=note, prompt=f"{system_prompt()}\n\n{prompt}",
                        response=answer, round=ctx.round)


def extract_code(answer: str) -> str:
    """The fenced block holding a `__global__` kernel (the longest if several), else ''."""
    blocks = [code for _, code in _FENCE.findall(answer) if "__global__" in code]
    if blocks:
        return max(blocks, key=len).strip() + "\n"
    if "__global__" in answer and "```" not in answer:
        return answer.strip() + "\n"
    return ""


def label(ctx: RoundContext, answer: str, code: str) -> str:
    """The model's own `Change:` line, else what the code shows it changed."""
    return model_label(answer) or code_label(ctx.definition, ctx.spec, ctx.kernel.name, code)
