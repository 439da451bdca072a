"""The one table of settings (section `fsr`): what each key is called in an editor, its type,
default and meaning, and the `fsr` flag that sets it.

The editor (initializationOptions, workspace/configuration), the CLI (its flags are made from
this table) and the VS Code extension's `package.json` (checked against it by a test) read
the same fields. Keys may come nested (`{"search": {"rounds": 4}}`, as VS Code sends them) or
dotted (`{"search.rounds": 4}`); unknown keys, wrong types and anything that looks like a
secret are reported, never fatal.
"""

from __future__ import annotations

import argparse
import re
import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where they are made: `fsr --help` and the server's start need none of them
    from .evaluator.backends import BackendChoice
    from .evaluator.job.prepare import EvalOptions
    from .search.config import LLMConfig, SearchConfig


WEEK = 7 * 24 * 3600.0  # the longest wait a setting may ask for: beyond it a thread's wait overflows


def setting(default: Any, key: str, help: str, cli: str | None = None, choices: tuple[str, ...] = (),
            minimum: float | None = None, env: str | None = None, maximum: float | None = None) -> Any:
    """A field of `Settings`: its client key, help text, and `fsr` flag (None: the editor only),
    whose default an environment variable `env` may give on the command line."""
    return field(default=default, metadata={"key": key, "help": help, "cli": cli, "choices": choices,
                                            "minimum": minimum, "maximum": maximum, "env": env})


@dataclass(frozen=True)
class Settings:
    llm_base_url: str = setting("", "llm.baseUrl", "OpenAI-compatible endpoint; empty: the built-in generator",
                                "--llm-base-url", env="FSR_LLM_BASE_URL")
    llm_model: str = setting("", "llm.model", "model name", "--llm-model", env="FSR_LLM_MODEL")
    llm_api_key_env: str = setting("OPENAI_API_KEY", "llm.apiKeyEnv",
                                   "name of the environment variable holding the key (never the key itself)",
                                   "--llm-key-env", env="FSR_LLM_KEY_ENV")
    llm_temperature: float = setting(0.7, "llm.temperature", "sampling temperature", "--llm-temperature", minimum=0)
    llm_timeout: float = setting(120.0, "llm.timeout", "seconds per request", "--llm-timeout", minimum=1,
                                  maximum=WEEK)
    llm_max_answer_bytes: int = setting(256 * 1024, "llm.maxAnswerBytes",
                                        "a model's answer larger than this is refused unread",
                                        "--llm-max-answer-bytes", minimum=1024)
    search_rounds: int = setting(4, "search.rounds", "search depth: rounds of candidates", "--rounds", minimum=1)
    search_candidates: int = setting(8, "search.candidates", "candidates per round; 1: staged refinement",
                                     "--candidates", minimum=1)
    search_time_budget: float = setting(300.0, "search.timeBudget", "seconds of wall clock per search",
                                        "--time-budget", minimum=1, maximum=WEEK)
    search_target_speedup: float = setting(0.0, "search.targetSpeedup",
                                           "stop early at this verified speedup (0: never)", "--target-speedup",
                                           minimum=0)
    search_fix_attempts: int = setting(1, "search.fixAttempts", "times a failed candidate is sent back to be fixed",
                                       "--fix-attempts", minimum=0)
    search_sanitize: bool = setting(True, "search.sanitize",
                                    "compute-sanitizer on each round's leaders and the winner before they count",
                                    "--no-sanitize")
    search_min_gain: float = setting(0.02, "search.minGain", "a win's whole speedup interval must lie above 1 + this",
                                     "--min-gain", minimum=0)
    compiler_nvcc: str = setting("", "compiler.nvcc", "nvcc path (default: PATH, CUDA_HOME)", "--nvcc")
    compiler_arch: str = setting("sm_90a", "compiler.arch", "-arch for on-save checks (searches use the GPU's own)")
    compiler_flags: tuple[str, ...] = setting((), "compiler.flags", "extra nvcc flags", "--flag")
    include_paths: tuple[str, ...] = setting((), "includePaths", "extra include directories", "-I")
    gpu: int = setting(0, "gpu", "GPU index for searches", minimum=0)
    gpus: str = setting("", "gpus", 'several local GPUs ("0,1" or "all"): a round fans out over them', "--gpu")
    evaluator_backend: str = setting("local", "evaluator.backend",
                                     "local: this machine's GPU; service: the same through one warm service shared "
                                     "by the editor and every fsr command (no CUDA start, the original's runs kept "
                                     "between commands); ray: the GPUs of a Ray cluster",
                                     "--backend", choices=("local", "service", "ray"))
    evaluator_service_idle: float = setting(600.0, "evaluator.serviceIdle",
                                            "with evaluator.backend service: seconds without a request before the "
                                            "service exits", "--service-idle", minimum=5)
    evaluator_address: str = setting("auto", "evaluator.address", "with ray: auto, ray://host:10001, or local",
                                     "--ray", env="FSR_RAY_ADDRESS")
    capture_command: str = setting("", "capture.command",
                                   "the program run by \"FSR: Capture launches from a run\" (e.g. ./build/app 4096), "
                                   "in the workspace folder")
    capture_snapshot_bytes: int = setting(0, "capture.snapshotBytes",
                                          "with a capture: save each kernel's inputs at its first launch, the "
                                          "smallest first, up to this many bytes in all (0: never)", "--snapshot-bytes", minimum=0)
    auto_apply: bool = setting(False, "autoApply", "offer a win through workspace/applyEdit as soon as it is found")
    diagnostics_on_open: bool = setting(True, "diagnostics.onOpen", "compile on open as well as on save")
    perf_on_save: bool = setting(False, "perfOnSave", "re-time a kernel with a stored timing when a save changes it; "
                                 "warn when it got slower beyond the timing noise")
    log_level: str = setting("", "logLevel", "the log's level (empty: as started); debug adds JSON-RPC payloads")

    def llm_config(self) -> LLMConfig:
        from .search.config import LLMConfig

        return LLMConfig(base_url=self.llm_base_url, model=self.llm_model, api_key_env=self.llm_api_key_env,
                         temperature=self.llm_temperature, timeout=self.llm_timeout,
                         max_answer_bytes=self.llm_max_answer_bytes)

    def search_config(self) -> SearchConfig:
        from .search.config import SearchConfig

        return SearchConfig(rounds=self.search_rounds, candidates=self.search_candidates,
                            time_budget=self.search_time_budget, target_speedup=self.search_target_speedup or None,
                            fix_attempts=self.search_fix_attempts, sanitize_winner=self.search_sanitize,
                            min_gain=self.search_min_gain, llm=self.llm_config())

    def eval_options(self, file: Path) -> EvalOptions:
        """Compile options for a kernel of `file` (its folder is an include path)."""
        from .evaluator.job.prepare import EvalOptions

        paths = tuple(str(Path(p).resolve()) for p in self.include_paths)  # the compiler runs in a scratch folder
        return EvalOptions(flags=self.compiler_flags, include_dirs=(str(file.parent.resolve()), *paths),
                           nvcc=self.compiler_nvcc or None)

    def backend_choice(self, timeout: float = 120.0) -> BackendChoice:
        from .evaluator.backends import BackendChoice

        return BackendChoice(kind=self.evaluator_backend, gpus=self.gpus or str(self.gpu),  # type: ignore[arg-type]
                             address=self.evaluator_address, timeout=timeout, idle=self.evaluator_service_idle)


# setting key (as the client spells it) -> field name
KEYS: dict[str, str] = {f.metadata["key"]: f.name for f in fields(Settings)}
# Read by the editor extension itself (how to start the server), not by the server.
CLIENT_SIDE = {"server.command", "server.python"}
# Settings that name a program, an address or an environment variable: what runs, and where the
# code and a key go. Only the user's own settings choose them, never a repository's
# (.vscode/settings.json, .dir-locals.el, .neoconf.json): the VS Code extension scopes them
# "machine", and the server refuses them from settings a client marks as the workspace's.
MACHINE = ("server.command", "server.python", "compiler.nvcc", "llm.baseUrl", "llm.apiKeyEnv",
           "evaluator.address", "capture.command")
# A repository's settings may set these once the user trusts the workspace, not before: nvcc's
# flags can name a program (-ccbin) or hand the host compiler one to load.
TRUSTED_ONLY = ("compiler.flags",)
USER, WORKSPACE = "user", "workspace"  # where a settings object comes from
SOURCE_KEY = "source"  # the marker a client may put in a settings object: "user" or "workspace"
_DEFAULTS = Settings()


@dataclass
class Loaded:
    settings: Settings
    problems: list[str] = field(default_factory=list)


def load_settings(options: Any, base: Settings | None = None, *, source: str = USER, trusted: bool = True,
                  kept: Settings | None = None) -> Loaded:
    """Settings from a client's `fsr` section (None or {} keeps the defaults).

    `source`: where the section comes from, "user" (the user's own configuration) or "workspace"
    (a repository's); a `"source": "workspace"` marker in the section makes it the workspace's
    (a marker can only restrict: "user" in a workspace's section changes nothing). From a
    workspace, the MACHINE settings are refused, and the TRUSTED_ONLY ones while the workspace is
    untrusted: a refused setting keeps its value in `kept` (the settings in force), with a problem
    naming it."""
    flat = _flatten(options or {})
    if "fsr" in {k.split(".")[0] for k in flat} and not any(k in KEYS for k in flat):
        marker = flat.get(SOURCE_KEY)
        flat = {k[4:]: v for k, v in flat.items() if k.startswith("fsr.")}  # the whole options object was sent
        if marker is not None:
            flat.setdefault(SOURCE_KEY, marker)
    values = {f.name: getattr(base or _DEFAULTS, f.name) for f in fields(Settings)}
    problems = []
    marker = flat.pop(SOURCE_KEY, None)
    if marker is not None and marker not in (USER, WORKSPACE):
        problems.append(f"fsr.{SOURCE_KEY}: expected \"{USER}\" or \"{WORKSPACE}\", got {marker!r}; "
                        "read as the workspace's")
    from_workspace = source == WORKSPACE or (marker is not None and marker != USER)
    if from_workspace:
        for key in refused_keys(trusted):
            if key in KEYS:  # not CLIENT_SIDE: the server never reads those
                values[KEYS[key]] = getattr(kept or _DEFAULTS, KEYS[key])
    for key, value in flat.items():
        if key in CLIENT_SIDE:
            continue
        if from_workspace and key in refused_keys(trusted):
            problems.append(refusal(key, trusted))
            continue
        name = KEYS.get(key)
        if name is None:
            if _SECRET.search(key):
                problems.append(f"fsr.{key}: secrets are never read from settings; name an environment variable in "
                                "fsr.llm.apiKeyEnv instead")
            else:
                problems.append(f"fsr.{key}: unknown setting")
            continue
        problem, converted = check_value(name, value)
        if problem:
            problems.append(f"fsr.{key}: {problem}")
            continue
        values[name] = converted
    loaded = Settings(**values)
    return Loaded(loaded, problems + [f"fsr.{p}" for p in pair_problems(loaded)])


def refused_keys(trusted: bool) -> tuple[str, ...]:
    """The settings a workspace's own settings may not set (`trusted`: the user trusts it)."""
    return MACHINE if trusted else MACHINE + TRUSTED_ONLY


def refusal(key: str, trusted: bool = True) -> str:
    """The one line that says a workspace's value of `key` was not taken, and why."""
    if key in TRUSTED_ONLY and key not in MACHINE:
        return (f"fsr.{key}: not taken from the workspace's settings while the workspace is not trusted "
                "(its flags can name a program to run); trust the workspace, or set it in your own settings")
    return (f"fsr.{key}: not taken from the workspace's settings (it names a program, an address or an "
            "environment variable); set it in your own (user) settings")


def check_value(name: str, value: Any) -> tuple[str, Any]:
    """('', the value as the field's type), or (what is wrong, None)."""
    meta = _META[name]
    kind = type(getattr(_DEFAULTS, name))
    converted = _convert(value, kind)
    if converted is None:
        return f"expected {kind.__name__}, got {value!r}", None
    if meta["choices"] and converted not in meta["choices"]:
        return f"expected one of {', '.join(meta['choices'])}, got {value!r}", None
    if isinstance(converted, float) and not math.isfinite(converted):
        return f"expected a finite number, got {value!r}", None
    if meta["minimum"] is not None and converted < meta["minimum"]:
        return f"expected at least {meta['minimum']:g}, got {value!r}", None
    if meta.get("maximum") is not None and converted > meta["maximum"]:
        return f"expected at most {meta['maximum']:g}, got {value!r}", None
    if name == "gpus" and converted and not _GPUS.fullmatch(converted.strip()):
        return f'expected GPU indices ("0,1") or "all", got {value!r}', None
    problem = _VALUE_CHECKS[name](converted) if name in _VALUE_CHECKS and converted else ""
    return (problem, None) if problem else ("", converted)


def _url_problem(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is no number
    except ValueError as e:
        return f"not a URL ({e}): give the endpoint as http(s)://host[:port]/v1"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"expected an http(s) URL such as https://api.example.com/v1, got {url!r}"
    return ""


ARCHES = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121)


def _arch_problem(arch: str) -> str:
    m = re.fullmatch(r"(?:sm|compute)_(\d+)[af]?", arch)
    if m is None or int(m.group(1)) not in ARCHES:
        return (f"{arch!r} is no architecture nvcc knows: sm_XY with XY one of "
                f"{', '.join(map(str, ARCHES))} (an 'a' or 'f' suffix allowed), e.g. sm_90a")
    return ""


def _nvcc_problem(path: str) -> str:
    found = Path(path).expanduser()
    if not found.is_file() or not os.access(found, os.X_OK):
        return f"{path!r} is not an executable file (no nvcc there); give the path to nvcc, or leave it empty for PATH"
    return ""


def _address_problem(address: str) -> str:
    if address in ("auto", "local"):
        return ""
    m = re.fullmatch(r"(?:ray://)?([\w.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})", address)
    if m is None or not 0 < int(m.group(2)) < 65536:
        return f"expected auto, local, or a Ray address ray://host:10001 (or host:6379), got {address!r}"
    return ""


_VALUE_CHECKS = {"llm_base_url": _url_problem, "compiler_arch": _arch_problem, "compiler_nvcc": _nvcc_problem,
                 "evaluator_address": _address_problem}


def pair_problems(settings: Settings) -> list[str]:
    """Settings that mean something only together, given one without the other."""
    if settings.llm_base_url and not settings.llm_model:
        return ["llm.baseUrl is set but llm.model is not: name the model the endpoint serves (--llm-model), or no "
                "model is asked"]
    if settings.llm_model and not settings.llm_base_url:
        return ["llm.model is set but llm.baseUrl is not: give the endpoint (--llm-base-url), or the built-in "
                "generator searches alone"]
    return []


_META = {f.name: f.metadata for f in fields(Settings)}
_SECRET = re.compile(r"secret|api[-_]?key|token|password|credential", re.I)  # not every name ending in "Key"
_GPUS = re.compile(r"all|\d+(\s*,\s*\d+)*")


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


# ------------------------------------------------------------ the CLI's flags, from the same table

def add_setting_flags(parser: argparse.ArgumentParser, *keys: str, helps: dict[str, str] | None = None) -> None:
    """The `fsr` flags of these settings, with the table's defaults and help; `helps` says what a
    setting means for this command where the table's words are about another (a search's rounds
    for a command that has none)."""
    for key in keys:
        f = _FIELDS[key]
        meta = {**f.metadata, "help": (helps or {}).get(key, f.metadata["help"])}
        flag, default = meta["cli"], getattr(_DEFAULTS, f.name)
        assert flag, f"{key} has no CLI flag"
        dest = f"setting_{f.name}"
        metavar = flag.lstrip("-").upper().replace("-", "_")
        if isinstance(default, bool):
            parser.add_argument(flag, dest=dest, action="store_false" if default else "store_true",
                                default=default, help=("off: " if default else "") + meta["help"])
        elif isinstance(default, tuple):
            parser.add_argument(flag, dest=dest, action="append", default=[], metavar="DIR" if flag == "-I" else metavar,
                                help=f"{meta['help']} (repeatable)")
        elif key == "evaluator.address":  # --ray ADDRESS chooses the Ray backend; none: this machine's GPUs
            parser.add_argument(flag, dest=dest, default=os.environ.get(meta["env"], ""), metavar="ADDRESS",
                                help="evaluate on the GPUs of a Ray cluster: auto, ray://host:10001, or local "
                                     f"(default: ${meta['env']}; none: this machine's GPU)")
        else:
            env_default = os.environ.get(meta["env"]) if meta["env"] else None
            shown = f"${meta['env']}, else {default!r}" if meta["env"] else repr(default)
            said = "" if "(default" in meta["help"] else f" (default {shown})"  # a help that says it already
            parser.add_argument(flag, dest=dest, type=type(default), default=env_default or default, metavar=metavar,
                                help=f"{meta['help']}{said}".replace("%", "%%"))


def settings_from_args(args: argparse.Namespace, base: Settings | None = None) -> Settings:
    """Settings with what the flags of `add_setting_flags` say; the rest from `base`. Raises
    ValueError naming the flag of a value the table refuses."""
    values = {f.name: getattr(base or _DEFAULTS, f.name) for f in fields(Settings)}
    for f in fields(Settings):
        dest = f"setting_{f.name}"
        if not hasattr(args, dest):
            continue
        value = getattr(args, dest)
        if f.name == "evaluator_address":
            if value:
                problem = _address_problem(value)
                if problem:
                    raise ValueError(f"{f.metadata['cli']}: {problem}")
                values["evaluator_backend"], values["evaluator_address"] = "ray", value
            continue
        problem, converted = check_value(f.name, list(value) if isinstance(values[f.name], tuple) else value)
        if problem:
            raise ValueError(f"{f.metadata['cli']}: {problem}")
        values[f.name] = converted
    settings = Settings(**values)
    given = {f.name for f in fields(Settings) if hasattr(args, f"setting_{f.name}")}
    if {"llm_base_url", "llm_model"} <= given:  # a command that takes the endpoint: the pair is checked
        for problem in pair_problems(settings):
            raise ValueError(problem.replace("llm.baseUrl", "--llm-base-url").replace("llm.model", "--llm-model"))
    return settings


def cli_flags() -> dict[str, str]:
    """Setting key -> its `fsr` flag, for the settings that have one."""
    return {key: f.metadata["cli"] for key, f in _FIELDS.items() if f.metadata["cli"]}


_FIELDS = {f.metadata["key"]: f for f in fields(Settings)}
