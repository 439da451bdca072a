"""A new version of a text is reparsed around its one edit (kernels/text_edits.py and
treesitter.parse): the same tree as a whole parse, for a fraction of its time."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fsr_lsp.kernels import treesitter
from fsr_lsp.kernels.text_edits import one_edit, point_at

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.cu"))


def test_one_edit_finds_the_changed_bytes_and_their_points():
    old = b"int a;\nint b;\nint c;\n" * 10
    new = old.replace(b"int b;", b"int bb;", 1)
    edit = one_edit(old, new)
    assert edit is not None and (edit.start, edit.old_end, edit.new_end) == (12, 12, 13)
    assert edit.start_point == (1, 5) and edit.new_end_point == (1, 6)
    assert one_edit(old, old + b"// appended\n").start == len(old)
    assert one_edit(old, b"something else entirely") is None  # too little in common to pay
    assert point_at(b"ab\ncd", 4) == (1, 1)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_edited_text_gets_the_tree_a_whole_parse_gives(path: Path):
    rng = random.Random(path.name)
    text = path.read_bytes()
    treesitter.parse(text)
    reparsed = 0
    for k in range(12):
        lines = text.split(b"\n")
        at = rng.randrange(len(lines))
        lines.insert(at, b"// an edit %d" % k) if k % 3 else lines.insert(at, b"")
        text = b"\n".join(lines)
        reparsed += treesitter._edited(text) is not None
        assert str(treesitter.parse(text).root_node) == str(treesitter._parser().parse(text).root_node)
    assert reparsed >= 6  # most versions were reparsed around their edit, not whole


def test_a_text_with_a_syntax_error_is_parsed_whole():
    text = b"__global__ void k(float* x) { x[0] = 1.0f; }\n" * 20
    treesitter.parse(text)
    broken = text.replace(b"x[0] = 1.0f;", b"x[0] = (1.0f;", 1)
    assert treesitter._edited(broken) is None
    assert str(treesitter.parse(broken).root_node) == str(treesitter._parser().parse(broken).root_node)


def test_each_of_fifty_open_documents_is_reparsed_around_its_edit(monkeypatch):
    """An editor holds tens of documents open and edits them in turn: each one's next version
    finds its last tree among the recent ones (with eight kept, most were parsed whole)."""
    monkeypatch.setattr(treesitter, "_recent", [])
    documents = [b"__global__ void k%d(float* x, int n) { if (n) x[0] = %d.0f; }\n" % (i, i) * 40 for i in range(50)]
    for text in documents:
        treesitter.parse(text)
    for i, text in enumerate(documents):
        edited = text + b"// edit %d\n" % i
        assert treesitter._edited(edited) is not None, i


def test_the_recent_texts_stay_within_their_budget_and_the_newest_is_kept(monkeypatch):
    monkeypatch.setattr(treesitter, "_recent", [])
    monkeypatch.setattr(treesitter, "RECENT_BYTES", 3000)
    texts = [b"int a%d;\n" % i * (100 + i) for i in range(8)]  # about a kilobyte each
    for text in texts:
        treesitter.parse(text)
    held = [text for text, _ in treesitter._recent]
    assert held[-1] == texts[-1] and sum(map(len, held)) <= 3000 and len(held) >= 2
    huge = b"int b;\n" * 1000  # over the budget alone: kept, as the newest
    treesitter.parse(huge)
    assert [text for text, _ in treesitter._recent] == [huge]
