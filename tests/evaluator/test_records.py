import json

from fsr_lsp.evaluator.records import (ArgPlan, Check, CompileResult, EvalJob, EvalResult, GpuInfo, KernelBinary,
                                       LaunchPlan, Mismatch, Resources, SizePlan, TimingStats)
from fsr_lsp.evaluator.worker.serde import from_json, to_json
from fsr_lsp.specs import Init


def job():
    launch = LaunchPlan((4, 1, 1), (256, 1, 1), 0)
    return EvalJob(
        kernel="k",
        original=KernelBinary(b"\x7fELF\x00\xff", "_Z1kPf", "nvcc", "sm_90a", ("-O3",)),
        candidate=None,
        sizes=[SizePlan("n=1000", "test", {"n": 1000},
                        [ArgPlan("n", "scalar", "int32", value=1000),
                         ArgPlan("x", "buffer", "float32", length=1000, direction="inout", init=Init("uniform", -1, 1),
                                 rtol=1e-5, atol=1e-6)], launch, launch)],
        base_seed=42, ref={"x": "x * 2"})


def test_jobs_round_trip_through_json_with_bytes():
    j = job()
    text = to_json(j)
    json.loads(text)
    again = from_json(EvalJob, text)
    assert again == j
    assert again.original.cubin == b"\x7fELF\x00\xff"
    assert isinstance(again.sizes[0].args[1].init, Init)
    assert again.sizes[0].original.grid == (4, 1, 1)


def test_results_round_trip_and_ignore_unknown_keys():
    r = EvalResult(kernel="k", status="wrong", message="m", checks=[Check("matches original", "fail", "d")],
                   mismatch=Mismatch("matches original", "n=1000", 7, "y", 3, 1000, 0.5, 17, "nan", "1.5", unwritten=3),
                   original_time=TimingStats(1.0, 0.9, 1.2, 0.95, 1.05, 100),
                   compile={"original": CompileResult(True, None, "", 0.1, resources=Resources(registers=32))},
                   gpu=GpuInfo(0, "NVIDIA H200", "9.0", 132, 62914560, 150 * 2**30))
    data = json.loads(to_json(r))
    data["a_future_field"] = 1
    again = from_json(EvalResult, json.dumps(data))
    assert again == r
    assert again.compile["original"].resources.registers == 32


def test_derived_values():
    t = TimingStats(median_ms=2.0, min_ms=1.0, max_ms=3.0, p25_ms=1.9, p75_ms=2.1, reps=50)
    assert abs(t.spread_pct - 10.0) < 1e-9
    r = EvalResult(kernel="k", status="verified", message="", original_time=t,
                   candidate_time=TimingStats(1.0, 1.0, 1.0, 0.99, 1.02, 50))
    assert abs(r.noise_pct - 10.0) < 1e-9 and r.verified
    assert GpuInfo(0, "H100", "9.0", 132, 1, 1).arch == "sm_90a"
    assert GpuInfo(0, "A100", "8.0", 108, 1, 1).arch == "sm_80"
    m = Mismatch("matches original", "n=1000", 7, "y", 3, 1000, 0.5, 17, "nan", "1.5", unwritten=3)
    assert m.describe() == ("y: 3 of 1000 elements wrong (3 never written) at n=1000 (seed 7), largest error 0.5; "
                            "first at [17]: got nan, expected 1.5")
