import pytest

from fsr_lsp.settings import Settings, load_settings


def test_nested_dotted_and_wrapped_forms():
    nested = load_settings({"search": {"rounds": 2, "targetSpeedup": 1.5}, "llm": {"baseUrl": "http://x/v1"}})
    dotted = load_settings({"search.rounds": 2, "search.targetSpeedup": 1.5, "llm.baseUrl": "http://x/v1"})
    wrapped = load_settings({"fsr": {"search": {"rounds": 2, "targetSpeedup": 1.5}, "llm": {"baseUrl": "http://x/v1"}}})
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

    ts = (Path(__file__).parent.parent / "vscode-client" / "src" / "settings.ts").read_text()
    block = ts[ts.index("export const SERVER_KEYS"):]
    block = block[:block.index("];")]
    assert set(re.findall(r'"([\w.]+)"', block)) == set(KEYS)


def test_the_extensions_package_json_contributes_each_setting_with_the_tables_type_and_default():
    import json
    from dataclasses import fields
    from pathlib import Path

    from fsr_lsp.settings import CLIENT_SIDE

    package = json.loads((Path(__file__).parent.parent / "vscode-client" / "package.json").read_text())
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
           "--max-per-kernel"}
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

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    section = readme[readme.index("### Settings"):]
    section = section[:section.index("\n\n", section.index("| key |"))]
    rows = dict(re.findall(r"^\| `([\w.]+)` \| `([^`]*)` \|", section, re.M))
    table = {f.metadata["key"]: getattr(Settings(), f.name) for f in fields(Settings)}
    assert set(rows) == set(table)
    for key, default in table.items():
        shown = "[]" if default == () else '""' if default == "" else str(default).lower() if isinstance(default, bool) \
            else f"{default:g}" if isinstance(default, float) else str(default)
        assert rows[key] == shown, key
