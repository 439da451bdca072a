import pytest

from fsr_lsp.settings import Settings, load_settings


def test_nested_dotted_and_wrapped_forms():
    nested = load_settings({"search": {"rounds": 2, "targetSpeedup": 1.5}, "llm": {"baseUrl": "http://x/v1", "model": "m"}})
    dotted = load_settings({"search.rounds": 2, "search.targetSpeedup": 1.5, "llm.baseUrl": "http://x/v1",
                            "llm.model": "m"})
    wrapped = load_settings({"fsr": {"search": {"rounds": 2, "targetSpeedup": 1.5},
                                     "llm": {"baseUrl": "http://x/v1", "model": "m"}}})
    for loaded in (nested, dotted, wrapped):
        assert loaded.problems == []
        assert loaded.settings.search_rounds == 2 and loaded.settings.llm_base_url == "http://x/v1"
    config = nested.settings.search_config()
    assert config.rounds == 2 and config.target_speedup == 1.5 and config.llm.base_url == "http://x/v1"


def test_wrong_types_unknown_keys_and_secrets_are_reported_not_used():
    loaded = load_settings({"search": {"rounds": "many"}, "compiler": {"flags": ["-O3", "-lineinfo"]},
                            "llm": {"apiKey": "sk-123"}, "colour": "blue"})
    s = loaded.settings
    assert s.search_rounds == Settings().search_rounds and s.compiler_flags == ("-O3", "-lineinfo")
    text = " | ".join(loaded.problems)
    assert "fsr.search.rounds: expected int" in text and "fsr.colour: unknown setting" in text
    assert "secrets are never read from settings" in text and "sk-123" not in text


def test_the_vscode_extension_forwards_every_server_setting():
    import re
    from pathlib import Path

    from fsr_lsp.settings import KEYS

    ts = (Path(__file__).parent.parent.parent / "vscode-client" / "src" / "settings.ts").read_text()
    block = ts[ts.index("export const SERVER_KEYS"):]
    block = block[:block.index("];")]
    assert set(re.findall(r'"([\w.]+)"', block)) == set(KEYS)


def test_the_extensions_package_json_contributes_each_setting_with_the_tables_type_and_default():
    import json
    from dataclasses import fields
    from pathlib import Path

    from fsr_lsp.settings import CLIENT_SIDE

    package = json.loads((Path(__file__).parent.parent.parent / "vscode-client" / "package.json").read_text())
    props = package["contributes"]["configuration"]["properties"]
    json_types = {bool: "boolean", int: "integer", float: "number", str: "string", tuple: "array"}
    table = {f.metadata["key"]: f for f in fields(Settings)}
    assert {k.removeprefix("fsr.") for k in props} == set(table) | CLIENT_SIDE
    for key, f in table.items():
        prop, default = props[f"fsr.{key}"], getattr(Settings(), f.name)
        assert prop["type"] == json_types[type(default)], key
        assert prop["default"] == (list(default) if isinstance(default, tuple) else default), key
        if f.metadata["choices"]:
            assert prop["enum"] == list(f.metadata["choices"]), key


def test_every_cli_flag_of_a_setting_comes_from_the_table():
    """`fsr`'s flags are made from the table: the same name, default and meaning everywhere."""
    import argparse

    from fsr_lsp.cli.main import build_parser
    from fsr_lsp.settings import cli_flags, settings_from_args

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    flags = set(cli_flags().values())
    own = {"-h", "--help", "--kernel", "-k", "--candidate", "-c", "--json", "--timeout", "--seeds", "--seed", "--reps",
           "--compiler", "--apply", "--report", "--workspace", "--check", "--source", "--capture", "--no-capture",
           "--max-per-kernel", "--build", "--no-build"}
    for name, command in sub.choices.items():
        for action in command._actions:
            for option in action.option_strings:
                assert option in own or (option in flags and action.dest.startswith("setting_")), (name, option)
    args = sub.choices["optimize"].parse_args(["k.cu", "-k", "k", "--rounds", "2", "--no-sanitize", "--gpu", "0,1",
                                              "-I", "inc", "--flag=-use_fast_math"])
    s = settings_from_args(args)
    assert (s.search_rounds, s.search_sanitize, s.gpus, s.include_paths, s.compiler_flags) == \
        (2, False, "0,1", ("inc",), ("-use_fast_math",))
    assert s.search_config().rounds == 2 and s.backend_choice().gpus == "0,1"
    bad = sub.choices["optimize"].parse_args(["k.cu", "-k", "k", "--rounds", "0"])
    with pytest.raises(ValueError, match="--rounds: expected at least 1"):
        settings_from_args(bad)


def test_the_readmes_settings_table_lists_every_setting_with_its_default():
    import re
    from dataclasses import fields
    from pathlib import Path

    readme = (Path(__file__).parent.parent.parent / "docs" / "server.md").read_text()
    section = readme[readme.index("### Settings"):]
    section = section[:section.index("\n\n", section.index("| key |"))]
    rows = dict(re.findall(r"^\| `([\w.]+)` \| `([^`]*)` \|", section, re.M))
    table = {f.metadata["key"]: getattr(Settings(), f.name) for f in fields(Settings)}
    assert set(rows) == set(table)
    for key, default in table.items():
        shown = "[]" if default == () else '""' if default == "" else str(default).lower() if isinstance(default, bool) \
            else f"{default:g}" if isinstance(default, float) else str(default)
        assert rows[key] == shown, key


def test_a_workspace_source_may_not_set_what_names_a_program_an_address_or_an_environment_variable():
    from fsr_lsp.settings import MACHINE, TRUSTED_ONLY

    mine = Settings(llm_base_url="http://mine/v1", llm_api_key_env="MY_KEY", compiler_nvcc="/opt/cuda/bin/nvcc",
                    capture_command="./build/app", compiler_flags=("-lineinfo",))
    project = {"llm": {"baseUrl": "http://attacker/v1", "apiKeyEnv": "AWS_SECRET_ACCESS_KEY", "model": "m"},
               "compiler": {"nvcc": "/bin/sh", "flags": ["-ccbin=./evil"]}, "evaluator": {"address": "ray://attacker:1"},
               "capture": {"command": "./evil"}, "search": {"rounds": 2}, "server": {"command": ["./evil"]}}
    for loaded in (load_settings(project, source="workspace", kept=mine),
                   load_settings({**project, "source": "workspace"}, kept=mine),  # the marker in the section
                   load_settings({"fsr": project, "source": "workspace"}, kept=mine),  # beside a wrapped section
                   load_settings({**project, "source": "user"}, source="workspace", kept=mine)):  # only restricts
        s = loaded.settings
        assert (s.llm_base_url, s.llm_api_key_env, s.compiler_nvcc, s.capture_command, s.evaluator_address) == \
            ("http://mine/v1", "MY_KEY", "/opt/cuda/bin/nvcc", "./build/app", "auto")
        assert (s.llm_model, s.search_rounds, s.compiler_flags) == ("m", 2, ("-ccbin=./evil",))  # trusted: its flags
        refused = sorted(p.split(":")[0] for p in loaded.problems)
        assert refused == sorted(f"fsr.{k}" for k in MACHINE if k not in ("server.command", "server.python"))
        assert all("set it in your own (user) settings" in p and "\n" not in p for p in loaded.problems)
    # A section the workspace does not mention keeps the user's values too.
    assert load_settings({"search": {"rounds": 3}}, source="workspace", kept=mine).settings.llm_base_url == "http://mine/v1"
    # Untrusted: the flags as well.
    untrusted = load_settings(project, source="workspace", trusted=False, kept=mine)
    assert untrusted.settings.compiler_flags == ("-lineinfo",) and TRUSTED_ONLY == ("compiler.flags",)
    assert any(p.startswith("fsr.compiler.flags: not taken") and "not trusted" in p for p in untrusted.problems)
    # The user's own settings set all of them, as before; an unknown marker reads as the workspace's.
    assert load_settings(project).settings.compiler_nvcc == "/bin/sh"
    odd = load_settings({**project, "source": "repo"}, kept=mine)
    assert odd.settings.compiler_nvcc == "/opt/cuda/bin/nvcc" and any("fsr.source: expected" in p for p in odd.problems)


def test_the_extension_scopes_exactly_those_settings_machine_and_declares_restricted_mode():
    import json
    import re
    from pathlib import Path

    from fsr_lsp.settings import MACHINE, TRUSTED_ONLY

    client = Path(__file__).parent.parent.parent / "vscode-client"
    package = json.loads((client / "package.json").read_text())
    props = package["contributes"]["configuration"]["properties"]
    assert {k.removeprefix("fsr.") for k, p in props.items() if p.get("scope") == "machine"} == set(MACHINE)
    trust = package["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited" and trust["description"]
    assert set(trust["restrictedConfigurations"]) == {f"fsr.{k}" for k in MACHINE + TRUSTED_ONLY}
    ts = (client / "src" / "settings.ts").read_text()
    for name, keys in (("MACHINE_KEYS", MACHINE), ("TRUSTED_KEYS", TRUSTED_ONLY)):
        block = ts[ts.index(f"export const {name}"):]
        assert set(re.findall(r'"([\w.]+)"', block[:block.index("];")])) == set(keys), name


def test_waits_from_the_editor_are_capped_at_a_week():
    """A thread's wait overflows far beyond a week: an editor's setting is refused there, as the
    command's flag is."""
    from fsr_lsp.settings import check_value

    for name in ("search_time_budget", "llm_timeout"):
        why, value = check_value(name, 1e12)
        assert value is None and "expected at most 604800" in why, (name, why)
        assert check_value(name, 3600) == ("", 3600.0)


@pytest.mark.parametrize("options, said", [
    ({"compiler": {"arch": "sm_999"}}, "fsr.compiler.arch: 'sm_999' is no architecture nvcc knows"),
    ({"compiler": {"nvcc": "/nonexistent/nvcc"}}, "fsr.compiler.nvcc: '/nonexistent/nvcc' is not an executable file"),
    ({"llm": {"baseUrl": "notaurl", "model": "m"}}, "fsr.llm.baseUrl: expected an http(s) URL"),
    ({"llm": {"baseUrl": "http://h:99999/v1", "model": "m"}}, "fsr.llm.baseUrl: not a URL"),
    ({"llm": {"model": "m"}}, "fsr.llm.model is set but llm.baseUrl is not"),
    ({"llm": {"baseUrl": "http://h/v1"}}, "fsr.llm.baseUrl is set but llm.model is not"),
    ({"evaluator": {"address": "ray://"}}, "fsr.evaluator.address: expected auto, local, or a Ray address"),
    ({"search": {"sortKey": 1}}, "fsr.search.sortKey: unknown setting"),
])
def test_settings_are_checked_like_arguments(options, said):
    """A mistyped setting is one line naming it, the default kept; nothing silently replaced."""
    loaded = load_settings(options)
    assert any(p.startswith(said) for p in loaded.problems), loaded.problems
    assert loaded.settings.compiler_arch == Settings().compiler_arch or "arch" not in str(options)
    assert loaded.settings.compiler_nvcc == ""


def test_good_values_pass():
    loaded = load_settings({"compiler": {"arch": "sm_90a", "nvcc": ""}, "evaluator": {"address": "ray://head:10001"},
                            "llm": {"baseUrl": "https://api.example.com/v1", "model": "m"}})
    assert loaded.problems == []
