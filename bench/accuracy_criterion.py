"""The accuracy criterion on rewrites of float reductions (issue 35 item 1): each candidate of
tests/gpu/kernels/accuracy/ evaluated as `fsr eval` does, under the criterion (against the
original in double precision) and under the old float default (rtol 1e-5, atol 1e-6 against
the original's own rounding). Good rewrites must pass the first; wrong ones must fail both.

    cd bench && python3 accuracy_criterion.py
"""

from __future__ import annotations

import re

from _common import ROOT, save, table

from fsr_lsp.evaluator import EvalOptions, Evaluator, TimingConfig, evaluate

CASES = ROOT / "tests" / "gpu" / "kernels" / "accuracy"
OPTIONS = EvalOptions(timing=TimingConfig(warmup=3, min_reps=20, max_reps=100, target_seconds=0.1))
OLD_DEFAULT = "rtol = 1e-5\natol = 1e-6\n"


def with_old_default(source: str) -> str:
    """The original's spec with the float tolerance fsr used before the criterion."""
    return re.sub(r"(\[args\])", OLD_DEFAULT + r"\1", source, count=1)


def main() -> None:
    rows, data = [], []
    with Evaluator(timeout=120.0) as evaluator:
        for path in sorted(CASES.glob("*/*.cu")):
            kernel, candidate = path.parent.name, path.read_text()
            source = (CASES / f"{kernel}.cu").read_text()
            now = evaluate(evaluator, source, kernel, candidate, OPTIONS)
            before = evaluate(evaluator, with_old_default(source), kernel, candidate, OPTIONS)
            detail = next((c.detail for c in now.checks if c.name == "accuracy"), "")
            worst = re.search(r"worst error ([\d.e+-]+) of its scale, the original's ([\d.e+-]+)", detail)
            margin = re.search(r"margin ([\d.e+-]+)x", detail)
            expected = "verified" if path.name.startswith("good_") else "wrong"
            rows.append([f"{kernel}/{path.stem}", expected, now.status, before.status,
                         f"{now.speedup:.2f}x" if now.speedup else "-",
                         worst.group(1) if worst else "-", worst.group(2) if worst else "-",
                         f"{margin.group(1)}x" if margin else "-"])
            data.append({"case": f"{kernel}/{path.name}", "expected": expected, "status": now.status,
                         "old_default": before.status, "speedup": now.speedup, "accuracy": detail,
                         "message": now.message, "old_message": before.message})
    table("accuracy criterion: rewrites of float reductions",
          ["case", "should be", "criterion", "old default", "speedup", "worst error", "original's", "margin"], rows)
    right = sum(1 for r in data if r["status"] == r["expected"])
    print(f"{right} of {len(data)} judged as they should be; the old default verified "
          f"{sum(1 for r in data if r['old_default'] == 'verified' and r['expected'] == 'verified')} of "
          f"{sum(1 for r in data if r['expected'] == 'verified')} good rewrites")
    save("accuracy_criterion", data)


if __name__ == "__main__":
    main()
