"""What the READMEs claim, checked where a program can check it (issue 46 item 5): the commands
and flags they show exist in the parsers; the extension's command titles, activation events and
settings they name are package.json's; what CI installs is what `.ci/run` installs; the .vsix
lands where they say; the license is MIT everywhere. Each fails when a README drifts."""

from __future__ import annotations

import argparse
import json
import re
import shlex
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from fsr_lsp.cli.parsers import build_parser
from fsr_lsp.server.main import parser as server_parser

ROOT = Path(__file__).parent.parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
CLIENT = ROOT / "vscode-client"
CLIENT_README = (CLIENT / "README.md").read_text(encoding="utf-8")
PACKAGE = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
READMES = {"README.md": README, "vscode-client/README.md": CLIENT_README}
# the reference the README links to: kept true by the same checks
DOCS = {f"docs/{name}.md": (ROOT / "docs" / f"{name}.md").read_text(encoding="utf-8")
        for name in ("server", "commands", "spec", "verification", "layout")}
PAGES = {**READMES, **DOCS}
EDITORS = {name: PAGES[name] for name in ("docs/server.md", "vscode-client/README.md")}  # where VS Code is set up
VSIX = "vscode-client/dist/fsr-lsp.vsix"


def options() -> dict[str, set[str]]:
    """Each program's (and each `fsr` command's) option strings: 'fsr eval', 'fsr', 'fsr-lsp'."""
    fsr = build_parser()
    out = {"fsr": set(fsr._option_string_actions), "fsr-lsp": set(server_parser()._option_string_actions)}
    sub = next(a for a in fsr._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        out[f"fsr {name}"] = set(command._option_string_actions)
    return out


def command_lines(text: str) -> list[str]:
    """Every `fsr ...`/`fsr-lsp ...` command the text shows: lines of its sh blocks (after `&&`
    too) and inline code; comments dropped."""
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in line.split("#")[0].split("&&"):
                if re.match(r"\s*fsr(-lsp)? ", part):
                    found.append(part.strip())
    found += re.findall(r"`(fsr(?:-lsp)? [^`]+)`", text)
    return found


def flags_of(line: str) -> tuple[str, list[str]]:
    """('fsr eval', ['--kernel', ...]) for one command line; the program's own arguments after a
    bare `--` are not fsr's."""
    words = shlex.split(line.replace("[", " ").replace("]", " "))
    program = words[0] if words[0] == "fsr-lsp" or words[1].startswith("-") else f"fsr {words[1]}"
    flags = []
    for word in words[1:]:
        if word == "--":
            break
        if re.match(r"--?[A-Za-z]", word):
            flags.append(word.split("=")[0])
    return program, flags


@pytest.mark.parametrize("name", PAGES)
def test_every_command_and_flag_a_readme_shows_exists(name):
    known = options()
    lines = command_lines(PAGES[name])
    assert lines or name != "README.md"
    for line in lines:
        program, flags = flags_of(line)
        assert program in known, f"{name} shows `{line}`: there is no {program}"
        missing = [f for f in flags if f not in known[program]]
        assert not missing, f"{name} shows `{line}`: {program} has no {missing}"


def test_the_flags_each_command_section_names_exist():
    """In a section about `fsr X` commands (its heading names them), every flag in inline code is
    one of theirs; in the server's section, its opening paragraph's flags are fsr-lsp's."""
    known = options()
    sections = [s for text in PAGES.values() for s in re.findall(r"^## (.*?)\n(.*?)(?=^## |\Z)", text, re.M | re.S)]
    assert any("`fsr eval`" in heading for heading, _ in sections)
    for heading, body in sections:
        commands = [f"fsr {c}" for c in re.findall(r"`fsr (\w+)`", heading)]
        if "`fsr-lsp`" in heading:
            commands, body = ["fsr-lsp"], body.strip().split("\n\n")[0]
        if not commands:
            continue
        # a flag is --word or -X; `-use_fast_math` and the like are nvcc's
        flags = set(re.findall(r"`(--[A-Za-z][\w-]*|-[A-Za-z](?![\w-]))", body))
        for flag in flags:
            assert any(flag in known[c] for c in commands), f"{heading!r} names {flag}; none of {commands} has it"


def test_fsr_eval_gpu_is_one_index_in_its_help_and_the_readme():
    eval_parser = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["eval"]
    gpu = eval_parser._option_string_actions["--gpu"]
    assert gpu.metavar == "N" and "index" in gpu.help and "round" not in gpu.help and "several" not in gpu.help
    commands = DOCS["docs/commands.md"]
    section = commands[commands.index("## `fsr eval`"):]
    assert "`--gpu N`" in (section[:section.index("\n## ")] if "\n## " in section else section)


def test_what_the_readme_says_ci_installs_is_what_ci_installs():
    installs = [" ".join(w for w in m.split() if w != "-q") for m in re.findall(r"pip install (.+)", CI)
                if "--upgrade pip" not in m]
    assert installs, "no pip install in .ci/run"
    for args in installs:
        assert f"pip install {args}" in README, f".ci/run installs `{args}`; the README does not say so"
    said = README[README.index("CI (`.ci/run`) installs"):]
    assert all(f"pip install {args}" in said[:600] for args in installs)
    assert "This is what CI installs" not in README


def test_the_extensions_command_titles_are_the_readmes():
    titles = {c["title"] for c in PACKAGE["contributes"]["commands"]}
    for name, text in EDITORS.items():
        text = re.sub(r"\s*\n\s*", " ", text)  # a title may wrap
        bold = set(re.findall(r"\*\*(FSR: [^*]+)\*\*", text))
        named = bold | set(re.findall(r'"(FSR: [^"]+)"', text))
        assert named <= titles, f"{name} names titles the extension does not have: {sorted(named - titles)}"
        assert titles <= bold, f"{name} leaves out commands: {sorted(titles - bold)}"


def test_the_extensions_activation_events_are_the_readmes():
    events = set(PACKAGE["activationEvents"])
    for name, text in EDITORS.items():
        said = set(re.findall(r"`((?:onLanguage|workspaceContains|onCommand|onStartupFinished)[^`]*)`", text))
        assert said == events, f"{name}: {sorted(said)} against package.json's {sorted(events)}"


def _shown(value) -> str:
    return json.dumps(value) if isinstance(value, (bool, list)) or value == "" else str(value)


def test_the_extension_readme_lists_every_setting_with_its_default_and_scope():
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    rows = re.findall(r"^\| `(fsr\.[\w.]+)` \| `([^`]*)` \| (\w*) *\|", CLIENT_README, re.M)
    assert {key for key, _, _ in rows} == set(properties)
    for key, default, scope in rows:
        assert default == _shown(properties[key]["default"]), key
        assert (scope == "machine") == (properties[key].get("scope") == "machine"), key
    commands = {c["command"] for c in PACKAGE["contributes"]["commands"]}
    named = set(re.findall(r"`(fsr\.[\w.]+)`", CLIENT_README))
    assert named <= set(properties) | commands, sorted(named - set(properties) - commands)
    restricted = set(PACKAGE["capabilities"]["untrustedWorkspaces"]["restrictedConfigurations"])
    trust = CLIENT_README[CLIENT_README.index("## Workspace trust"):]
    assert restricted <= set(re.findall(r"`(fsr\.[\w.]+)`", trust)), "the trust section leaves out a restricted setting"


def test_the_vsix_lands_where_the_readmes_say():
    assert "-o dist/fsr-lsp.vsix" in PACKAGE["scripts"]["package"]
    assert "npm run -s package" in CI and f"test -s {VSIX}" in CI
    for name, text in READMES.items():
        assert VSIX in text, name
    assert "vscode-client/README.md" in README


def test_the_license_is_mit_everywhere():
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License") and "fsr-lsp contributors" in license_text
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["license"] == "MIT" and "LICENSE" in pyproject["project"]["license-files"]
    setuptools = next(r for r in pyproject["build-system"]["requires"] if r.startswith("setuptools"))
    assert int(re.fullmatch(r"setuptools>=(\d+).*", setuptools).group(1)) >= 77, "an SPDX license needs setuptools 77"
    assert not any("License ::" in c for c in pyproject["project"].get("classifiers", []))
    assert PACKAGE["license"] == "MIT"
    assert "../LICENSE" in PACKAGE["scripts"]["package"] and "--skip-license" not in PACKAGE["scripts"]["package"]
    assert metadata.metadata("fsr-lsp").get("License-Expression") == "MIT", "reinstall: pip install -e ."


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_a_first_screen_and_every_link_it_gives_lands():
    """At most 250 lines; the reference lives in docs/, and each link (and its #anchor) exists."""
    assert len(README.splitlines()) <= 250
    links = re.findall(r"\]\(((?:docs/|vscode-client/)[^)#]+)(?:#([^)]+))?\)", README)
    assert {target for target, _ in links} >= {f"docs/{n}.md" for n in ("server", "commands", "spec", "verification")}
    for target, anchor in links:
        path = ROOT / target
        assert path.exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.*)$", path.read_text(encoding="utf-8"), re.M)
            assert anchor in {_anchor(h) for h in headings}, f"{target}#{anchor}: no such heading"


def test_the_neovim_set_up_starts_one_server_per_root():
    """`vim.lsp.start_client` from a FileType autocmd started a server for every CUDA buffer."""
    neovim = DOCS["docs/server.md"][DOCS["docs/server.md"].index("### Neovim"):]
    neovim = neovim[:neovim.index("\n### ")]
    code = "\n".join(re.findall(r"```lua\n(.*?)```", neovim, re.S))
    assert "vim.lsp.start(" in code and "vim.lsp.start_client" not in code


# Read from the environment but no setting: fsr's own processes talking to each other
INTERNAL = {"FSR_BUILD_LOG": "fsr to the nvcc wrapper a watched build runs", "FSR_BUILD_PATH": "the same",
            "FSR_PROCESS_TREE": "the mark every process fsr starts carries, for the reaper"}


def test_every_variable_the_package_reads_is_in_the_readmes_table():
    """The package reads no test switch from the environment (tests pass stand-ins to the
    constructors: fsr_lsp/instruments.py); what it does read is a setting the README lists."""
    names = {m for path in (ROOT / "fsr_lsp").rglob("*.py")
             for m in re.findall(r'"(FSR_[A-Z0-9_]+)"', path.read_text(encoding="utf-8"))}
    table = README[README.index("## Environment variables"):]
    table = table[:table.index("\n## ")]
    listed = set(re.findall(r"`(FSR_[A-Z0-9_]+)(?:=[^`]*)?`", table))
    assert names - set(INTERNAL) == listed, (sorted(names - set(INTERNAL) - listed), sorted(listed - names))
    assert not {"FSR_LSP_BENCH", "FSR_LSP_PROVER", "FSR_LSP_PROFILER", "FSR_LSP_TIMER", "FSR_REMOTE_CALLS",
                "FSR_SANITIZE_WITH_TORCH"} & names
