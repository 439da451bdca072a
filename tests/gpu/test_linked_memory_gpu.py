"""Memory holding pointers on a GPU, through the commands: a program whose list nodes are
allocations of their own (cudaMallocManaged each) and whose struct holds a `char* name` is run
under `fsr capture --snapshot-bytes`; `fsr spec --check` proves each kernel on the run's bytes
rebuilt at the evaluator's addresses (memcheck and initcheck clean, through both runners), and
`fsr eval` verifies a correct rewrite and calls a wrong one wrong: a walk that skips the head, a
write to the wrong byte of the memory a pointer reaches, a print of the wrong node."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..drafting.test_linked_memory import SOURCE, TOUCH_SWAPPED, TOUCH_WRONG_BYTE, WALK_SKIPS_THE_HEAD, WALK_UNROLLED
from ..support.doubles import fsr
from ..support.programs import built, captured_and_proven, evaluated

pytestmark = pytest.mark.gpu

PRINT = """
__global__ void print_element(Node* list, int ele)
{
    Node* e = list;
    for (int i = 0; i < ele; i++) e = e->next;
    printf("key = %d\\n", e->key);
}
"""

PRINT_NEXT = PRINT.replace("i < ele;", "i <= ele;")

HOST = """
int main()
{
    Node* head;
    cudaMallocManaged(&head, sizeof(Node));
    Node* n = head;
    for (int i = 0; i < 5; ++i) { n->key = 10 + i; cudaMallocManaged(&n->next, sizeof(Node)); n = n->next; }
    n->key = 99; n->next = nullptr;
    int* out;
    cudaMalloc(&out, sizeof(int));
    walk<<<1, 1>>>(head, 4, out);
    print_element<<<1, 1>>>(head, 3);
    Elem* e;
    cudaMallocManaged(&e, sizeof(Elem));
    cudaMallocManaged(&e->name, 6);
    strcpy(e->name, "hello");
    e->value = 10;
    touch<<<1, 1>>>(e);
    cudaDeviceSynchronize();
    printf("%s %d\\n", e->name, e->value);
    return 0;
}
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory, evaluator) -> Path:  # the evaluator fixture skips without a GPU
    out = tmp_path_factory.mktemp("linked")
    (out / ".git").mkdir()
    built(out, "lists", "#include <cstdio>\n#include <cstring>\n" + SOURCE + PRINT + HOST)
    r = fsr("capture", "--snapshot-bytes", "1000000", "--", "./lists", cwd=out)
    assert r.returncode == 0 and "touch" in r.stdout, r.stdout + r.stderr
    return out


@pytest.mark.parametrize("kernel, good, bad, where", [
    ("walk", WALK_UNROLLED, WALK_SKIPS_THE_HEAD, "out"),
    ("touch", TOUCH_SWAPPED, TOUCH_WRONG_BYTE, "e->1"),
    ("print_element", PRINT.replace("e = e->next;", "{ e = e->next; }"), PRINT_NEXT, "print"),
])
def test_memory_holding_pointers_is_proven_and_judged(folder: Path, kernel: str, good: str, bad: str, where: str):
    r = fsr("spec", "lists.cu", "--kernel", kernel, "--json", "--check", cwd=folder)
    print(r.stdout[-3000:], r.stderr[-1500:])
    assert r.returncode == 0, r.stdout + r.stderr
    (data,) = json.loads(r.stdout)
    assert data["origin"] == "captured" and data["proof"]["status"] == "proven", data
    assert "bytes] captured()" in data["spec"] and "memcheck and initcheck clean" in data["proof"]["message"]
    right = evaluated(folder, "lists.cu", kernel, good)
    assert right.returncode == 0 and "verified" in right.stdout
    wrong = evaluated(folder, "lists.cu", kernel, bad)
    assert wrong.returncode == 1 and where in wrong.stdout


NESTED_HOST = """
int main()
{
    Pair p;
    p.in.n = p.out.n = 1000;
    p.scale = 2.5f;
    cudaMalloc(&p.in.data, 1000 * sizeof(float));
    cudaMalloc(&p.out.data, 1000 * sizeof(float));
    float host[1000];
    for (int i = 0; i < 1000; ++i) host[i] = 0.25f * i - 3.0f;
    cudaMemcpy(p.in.data, host, sizeof host, cudaMemcpyHostToDevice);
    scale_pair<<<4, 256>>>(p);
    cudaDeviceSynchronize();
    return 0;
}
"""


def test_a_value_fsr_cannot_read_is_passed_as_the_run_passed_it(tmp_path: Path, evaluator):
    """A struct of structs holding pointers, by value: the capture saves its bytes and follows its
    pointers; the spec `p = "captured()"` is proven, packed as a struct of the run's bytes with this
    run's addresses written in, and the memory its pointers reach is compared."""
    from ..drafting.test_linked_memory import NESTED, NESTED_OUT_OF_PLACE, NESTED_REORDERED

    (tmp_path / ".git").mkdir()
    built(tmp_path, "pair", NESTED + NESTED_HOST)
    data = captured_and_proven(tmp_path, "pair", "scale_pair", "--snapshot-bytes", "1000000")
    assert 'p = "captured()"' in data["spec"], data
    right = evaluated(tmp_path, "pair.cu", "scale_pair", NESTED_REORDERED)
    assert right.returncode == 0 and "verified" in right.stdout
    wrong = evaluated(tmp_path, "pair.cu", "scale_pair", NESTED_OUT_OF_PLACE)
    assert wrong.returncode == 1 and "p->" in wrong.stdout
