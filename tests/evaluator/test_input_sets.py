"""The sets that probe a float input's range (evaluator/gpu/input_sets.py): what each holds,
which inputs they reshape, their order, and a declared contract kept."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fsr_lsp.evaluator.gpu.input_sets import OFFSET, input_sets, perturbed, probed, reshape  # noqa: E402
from fsr_lsp.evaluator.records import ArgPlan, LaunchPlan, SizePlan  # noqa: E402
from fsr_lsp.specs import Init  # noqa: E402


def arg(name="x", dtype="float32", init=Init("normal"), direction="in", n=4096):
    return ArgPlan(name, "buffer", dtype, length=n, direction=direction, init=init)


def plan(*args):
    return SizePlan("n=4096", "test", {"n": 4096}, list(args), LaunchPlan((1, 1, 1), (1, 1, 1)), LaunchPlan((1, 1, 1), (1, 1, 1)))


def shaped(key, a=None, seed=1):
    a = a or arg()
    gen = torch.Generator()
    gen.manual_seed(seed)
    base = torch.randn(a.numel, generator=gen).to({"float32": torch.float32, "float16": torch.float16,
                                                   "bfloat16": torch.bfloat16, "float64": torch.float64}[a.dtype])
    which = next(s for s in input_sets(plan(a)) if s.key == key)
    return base, reshape(torch, a, base, which, gen)


def test_only_random_float_inputs_are_probed():
    args = [arg("x"), arg("y", direction="out"), arg("i", dtype="int32", init=Init("randint", 0, 9)),
            arg("acc", direction="inout", init=Init("fill", 0, 0)), arg("c", init=Init("captured")),
            arg("w", direction="inout", init=Init("uniform", 0.5, 2.0))]
    assert [a.name for a in probed(plan(*args))] == ["x", "w"]
    assert input_sets(plan(arg("i", dtype="int32", init=Init("randint", 0, 9)))) == []


def test_the_sets_cheapest_first_and_the_far_rungs_last():
    keys = [s.key for s in input_sets(plan(arg()))]
    assert keys == ["x10", "x100", "offset", "negative", "positive", "constant", "outliers", "zeros", "x10^4", "x10^8"]
    assert [s.key for s in input_sets(plan(arg(dtype="float16")))][-1] == "x1000"  # half stops before overflow
    assert "positive" not in [s.key for s in input_sets(plan(arg(init=Init("uniform", 0.5, 2.0))))]  # already so
    assert [s.key for s in input_sets(plan(arg()), skip=("x100", "zeros"))].count("x100") == 0


def test_what_each_set_holds():
    base, x = shaped("x100")
    assert torch.equal(x, base * 100)
    _, x = shaped("offset")
    assert abs(float(x.mean()) - OFFSET) < 0.2 and 0.8 < float(x.std()) < 1.2  # mean far above the spread
    _, x = shaped("negative")
    assert bool((x <= 0).all()) and float(x.min()) < -2
    _, x = shaped("positive")
    assert bool((x >= 0).all()) and float(x.max()) > 2
    _, x = shaped("constant")
    assert x.unique().numel() == 1
    _, x = shaped("outliers")
    big = x.abs() > 50
    assert 1 <= int(big.sum()) <= 64 and float(x[~big].abs().max()) < 0.01
    _, x = shaped("zeros")
    tiny = torch.finfo(torch.float32).tiny
    assert int((x == 0).sum()) > 700 and int(((x != 0) & (x.abs() < tiny)).sum()) > 700  # subnormals
    assert int((x.abs() > 0.1).sum()) > 1500  # and ordinary values beside them


def test_a_declared_uniform_or_a_domain_is_never_passed():
    for init in (Init("uniform", -1.0, 1.0, declared=True), Init("normal", 0.0, 1.0, domain=(-3.0, 2.0))):
        a = arg(init=init)
        lo, hi = init.bounds
        for s in input_sets(plan(a)):
            _, x = shaped(s.key, a)
            assert lo <= float(x.min()) and float(x.max()) <= hi, (init, s.key)
        keys = [s.key for s in input_sets(plan(a))]
        assert "x10^4" not in keys  # clamped, every far rung is the edges x100 already is
    _, x = shaped("x100", arg(init=Init("uniform", -1.0, 1.0, declared=True)))
    assert float((x.abs() == 1).float().mean()) > 0.9  # the edges, stressed


def test_values_stay_finite_in_their_type():
    for dtype in ("float16", "bfloat16", "float32"):
        a = arg(dtype=dtype)
        for s in input_sets(plan(a)):
            _, x = shaped(s.key, a)
            assert bool(x.isfinite().all()), (dtype, s.key)


def test_a_perturbation_is_a_few_units_in_the_last_place():
    a = arg()
    x = torch.randn(4096)
    gen = torch.Generator()
    gen.manual_seed(0)
    y = perturbed(torch, a, x, gen)
    rel = ((y.double() - x.double()).abs() / x.double().abs()).max()
    assert 0 < float(rel) <= 9 * torch.finfo(torch.float32).eps  # 8 units, and the rounding back to float
