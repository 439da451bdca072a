from fsr_lsp.evaluator.job.plan import build_plans, edge_size
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText
from fsr_lsp.specs import parse_spec

KERNEL = "__global__ void mm(int M, int N, int K, float alpha, const float* A, const float* B, float* C) {}\n"
SPEC = """/* @fsr
bench = { M = 1024, N = 1024, K = 512 }
tests = [ { M = 64, N = 32, K = 32 } ]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
block = [16, 16]
smem = "2 * 16 * 16 * 4"
[args]
M = "M"
N = "N"
K = "K"
alpha = "1.0 / K"
A = "in[M * K]"
B = "in[K * N] uniform(-1, 1)"
C = "out[M * N]"
*/
"""


def spec_and_kernel(text):
    src = SourceText(text)
    k = find_kernel(src, "mm")
    return k, parse_spec(src, k).spec


def test_sizes_are_ordered_and_an_edge_size_is_added_for_block_multiples():
    k, spec = spec_and_kernel(SPEC + KERNEL)
    plans = build_plans(k, spec)
    assert [p.role for p in plans] == ["test", "edge", "bench"]
    assert plans[1].sizes == {"M": 65, "N": 33, "K": 33}
    bench = plans[-1]
    assert bench.original.grid == (64, 64, 1) and bench.original.block == (16, 16, 1) and bench.original.smem == 2048
    args = {a.name: a for a in bench.args}
    assert args["A"].length == 1024 * 512 and args["C"].direction == "out"
    assert args["alpha"].value == 1.0 / 512 and args["M"].value == 1024
    assert args["C"].rtol == 1.3e-6 and args["C"].tolerance == "default"  # torch.testing's float default
    assert args["A"].kind == "buffer" and args["K"].kind == "scalar"


def test_no_edge_size_when_a_size_is_already_odd():
    k, spec = spec_and_kernel(SPEC.replace("N = 32, K = 32", "N = 33, K = 32") + KERNEL)
    assert edge_size(spec) is None
    assert [p.role for p in build_plans(k, spec)] == ["test", "bench"]


def test_candidate_launch_is_planned_separately():
    import dataclasses

    k, spec = spec_and_kernel(SPEC + KERNEL)
    cand = dataclasses.replace(spec, grid=("cdiv(N, 32)", "cdiv(M, 32)"), block=(32, 8))
    bench = build_plans(k, spec, cand)[-1]
    assert bench.candidate.grid == (32, 32, 1) and bench.candidate.block == (32, 8, 1)
    assert bench.original.grid == (64, 64, 1)


def test_edge_false_keeps_the_sizes_the_spec_lists_and_anything_else_is_a_problem():
    from fsr_lsp.evaluator.job.plan import build_plans
    from fsr_lsp.kernels import find_kernel
    from fsr_lsp.source import SourceText
    from fsr_lsp.specs import parse_spec

    text = ('/* @fsr\nbench = {{ n = 4096 }}\ntests = [ {{ n = 256 }} ]\ngrid = "cdiv(n, 256)"\nblock = 256\n{edge}'
            '[args]\nx = "inout[n]"\nn = "n"\n*/\n__global__ void k(float* x, int n) {{ x[threadIdx.x] += 1; }}\n')

    def labels(edge: str):
        src = SourceText(text.format(edge=edge))
        kernel = find_kernel(src, "k")
        parsed = parse_spec(src, kernel)
        sizes = [p.label for p in build_plans(kernel, parsed.spec)] if parsed.spec else None
        return sizes, [p.message for p in parsed.problems]

    assert labels("") == (["n=256", "n=257", "n=4096"], [])
    assert labels("edge = false\n") == (["n=256", "n=4096"], [])
    _, problems = labels('edge = "no"\n')
    assert any("edge must be true or false" in p for p in problems)
