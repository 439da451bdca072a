"""Messages a user reads name what went wrong, never an exception's class."""

from fsr_lsp.failures import said


def test_an_exception_is_said_by_its_message_or_in_plain_words():
    assert said(ValueError("the spec has no bench size\nmore detail")) == "the spec has no bench size"
    assert said(MemoryError()) == "out of memory"
    assert said(FileNotFoundError()) == "a file was not found"
    assert said(RuntimeError()) == "an internal error (the log has its details)"
    assert "Error" not in said(KeyError())
