from fsr_lsp.source import Position, SourceText


def test_positions_count_utf16_code_units():
    src = SourceText("// é🚀\nint x;\n")
    assert src.position(0) == Position(0, 0)
    # "é" is 2 UTF-8 bytes and 1 UTF-16 unit; "🚀" is 4 bytes and 2 units.
    after_rocket = len("// é🚀".encode())
    assert src.position(after_rocket) == Position(0, 6)  # "// " 3 + é 1 + 🚀 2
    assert src.position(after_rocket + 1) == Position(1, 0)


def test_byte_at_inverts_position():
    text = "a🚀b\nxyz\n"
    src = SourceText(text)
    for byte in (0, 1, 5, 6, 7, 9):
        assert src.byte_at(src.position(byte)) == byte


def test_positions_are_clamped():
    src = SourceText("ab\ncd")
    assert src.position(10**6) == Position(1, 2)
    assert src.byte_at(Position(7, 0)) == len(b"ab\n")


def test_every_lsp_position_encoding():
    src = SourceText("a é🚀 b\n")
    byte = len("a é🚀 ".encode())
    assert src.position(byte, "utf-16") == Position(0, 6)  # a, space, é, 🚀 (2 units), space
    assert src.position(byte, "utf-8") == Position(0, byte)
    assert src.position(byte, "utf-32") == Position(0, 5)
    for enc in ("utf-8", "utf-16", "utf-32"):
        assert src.byte_at(src.position(byte, enc), enc) == byte
