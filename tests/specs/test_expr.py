import pytest

from fsr_lsp.specs.expr import ExprError, evaluate, evaluate_int, names_in


@pytest.mark.parametrize("text, env, value", [
    ("cdiv(n, 256)", {"n": 1000}, 4),
    ("cdiv(n, 256)", {"n": 1024}, 4),
    ("n / 4", {"n": 10}, 2),  # C division
    ("-7 / 2", {}, -3),  # truncates toward zero, like C
    ("-7 // 2", {}, -4),  # floor division, like Python
    ("-7 % 3", {}, -1),  # C remainder
    ("1 << 24", {}, 16777216),
    ("(M * K) >> 1", {"M": 8, "K": 4}, 16),
    ("max(1, n - 10)", {"n": 3}, 1),
    ("min(a, b, 7)", {"a": 9, "b": 8}, 7),
    ("1.0 / n", {"n": 4}, 0.25),
])
def test_values(text, env, value):
    assert evaluate(text, env) == value


@pytest.mark.parametrize("text", [
    "__import__('os').system('true')", "n.real", "lambda: 1", "n ** 2", "[n]", "'x'", "open('f')",
    "max(n, key=1)", "True", "n if n else 1", "f(n)",
])
def test_everything_else_is_refused(text):
    with pytest.raises(ExprError):
        evaluate(text, {"n": 3})


def test_errors_name_the_problem():
    with pytest.raises(ExprError, match="unknown size name 'm'"):
        evaluate("m * 2", {"n": 1})
    with pytest.raises(ExprError, match="division by zero"):
        evaluate("n / 0", {"n": 1})
    with pytest.raises(ExprError, match="too large"):
        evaluate("n << 63", {"n": 3})
    with pytest.raises(ExprError, match="not an integer"):
        evaluate_int("n * 0.5", {"n": 3}, "grid")
    with pytest.raises(ExprError, match="invalid expression"):
        evaluate("cdiv(n,", {"n": 1})


def test_names():
    assert names_in("cdiv(M * N, 256) + K") == {"M", "N", "K"}
