"""The server's settings (section `fsr`), from initializationOptions or workspace/configuration.

Keys may come nested (`{"search": {"rounds": 4}}`, as VS Code sends them) or dotted
(`{"search.rounds": 4}`). Unknown keys and wrong types are reported, never fatal.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..search.config import LLMConfig, SearchConfig


@dataclass(frozen=True)
class Settings:
    llm_base_url: str = ""
    llm_model: str = ""
    llm_api_key_env: str = "OPENAI_API_KEY"
    llm_temperature: float = 0.7
    llm_timeout: float = 120.0
    llm_max_answer_bytes: int = 256 * 1024  # a larger answer is refused unread
    search_rounds: int = 4
    search_candidates: int = 8
    search_time_budget: float = 300.0
    search_target_speedup: float = 0.0  # 0: none
    search_fix_attempts: int = 1
    search_sanitize: bool = True
    search_min_gain: float = 0.02  # a win's whole speedup interval lies above 1 + this
    compiler_nvcc: str = ""  # empty: nvcc on PATH or in CUDA_HOME
    compiler_arch: str = "sm_90a"  # for on-save checks; searches use the GPU's own
    compiler_flags: tuple[str, ...] = ()
    include_paths: tuple[str, ...] = ()
    gpu: int = 0
    gpus: str = ""  # several local GPUs for searches ("0,1" or "all"); empty: just `gpu`
    evaluator_backend: str = "local"  # "local": this machine's GPU; "ray": the GPUs of a Ray cluster
    evaluator_address: str = "auto"  # for "ray": auto, ray://host:10001, or local (a Ray started here)
    auto_apply: bool = False  # offer the win through workspace/applyEdit as soon as it is found
    diagnostics_on_open: bool = True
    log_level: str = ""  # empty: as the server was started (--log-level); "debug" logs JSON-RPC payloads

    def search_config(self) -> SearchConfig:
        llm = LLMConfig(base_url=self.llm_base_url, model=self.llm_model, api_key_env=self.llm_api_key_env,
                        temperature=self.llm_temperature, timeout=self.llm_timeout,
                        max_answer_bytes=self.llm_max_answer_bytes)
        return SearchConfig(rounds=self.search_rounds, candidates=self.search_candidates,
                            time_budget=self.search_time_budget, target_speedup=self.search_target_speedup or None,
                            fix_attempts=self.search_fix_attempts, sanitize_winner=self.search_sanitize,
                            min_gain=self.search_min_gain, llm=llm)


# setting key (as the client spells it) -> field name
KEYS: dict[str, str] = {
    "llm.baseUrl": "llm_base_url", "llm.model": "llm_model", "llm.apiKeyEnv": "llm_api_key_env",
    "llm.temperature": "llm_temperature", "llm.timeout": "llm_timeout", "llm.maxAnswerBytes": "llm_max_answer_bytes",
    "search.rounds": "search_rounds", "search.candidates": "search_candidates",
    "search.timeBudget": "search_time_budget", "search.targetSpeedup": "search_target_speedup",
    "search.fixAttempts": "search_fix_attempts", "search.sanitize": "search_sanitize",
    "search.minGain": "search_min_gain",
    "compiler.nvcc": "compiler_nvcc", "compiler.arch": "compiler_arch", "compiler.flags": "compiler_flags",
    "includePaths": "include_paths", "gpu": "gpu", "gpus": "gpus", "autoApply": "auto_apply",
    "evaluator.backend": "evaluator_backend", "evaluator.address": "evaluator_address",
    "diagnostics.onOpen": "diagnostics_on_open", "logLevel": "log_level",
}


CHOICES: dict[str, tuple[str, ...]] = {"evaluator_backend": ("local", "ray")}

# Read by the editor extension itself (how to start the server), not by the server.
CLIENT_SIDE = {"server.command", "server.python"}


@dataclass
class Loaded:
    settings: Settings
    problems: list[str] = field(default_factory=list)


def load_settings(options: Any, base: Settings | None = None) -> Loaded:
    """Settings from a client's `fsr` section (None or {} keeps the defaults)."""
    flat = _flatten(options or {})
    if "fsr" in {k.split(".")[0] for k in flat} and not any(k in KEYS for k in flat):
        flat = {k[4:]: v for k, v in flat.items() if k.startswith("fsr.")}  # the whole options object was sent
    values = {f.name: getattr(base or Settings(), f.name) for f in fields(Settings)}
    types = {f.name: type(getattr(Settings(), f.name)) for f in fields(Settings)}
    problems = []
    for key, value in flat.items():
        if key in CLIENT_SIDE:
            continue
        name = KEYS.get(key)
        if name is None:
            if "secret" in key.lower() or key.lower().endswith("key"):
                problems.append(f"fsr.{key}: secrets are never read from settings; name an environment variable in "
                                "fsr.llm.apiKeyEnv instead")
            else:
                problems.append(f"fsr.{key}: unknown setting")
            continue
        converted = _convert(value, types[name])
        if converted is None:
            problems.append(f"fsr.{key}: expected {types[name].__name__}, got {value!r}")
            continue
        if name in CHOICES and converted not in CHOICES[name]:
            problems.append(f"fsr.{key}: expected one of {', '.join(CHOICES[name])}, got {value!r}")
            continue
        values[name] = converted
    return Loaded(Settings(**values), problems)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and key not in KEYS:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _convert(value: Any, kind: type) -> Any:
    if kind is bool:
        return value if isinstance(value, bool) else None
    if kind is int:
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if kind is float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if kind is str:
        return value if isinstance(value, str) else None
    if kind is tuple:
        if isinstance(value, str):
            return tuple(value.split())
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            return tuple(value)
        return None
    return None
