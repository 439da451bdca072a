from fsr_lsp.server.settings import Settings, load_settings


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

    from fsr_lsp.server.settings import KEYS

    ts = (Path(__file__).parent.parent / "vscode-client" / "src" / "settings.ts").read_text()
    block = ts[ts.index("export const SERVER_KEYS"):]
    block = block[:block.index("];")]
    assert set(re.findall(r'"([\w.]+)"', block)) == set(KEYS)
