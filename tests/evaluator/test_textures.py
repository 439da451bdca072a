"""Texture-object arguments without a GPU: the spec's forms and their errors, the plans the
evaluator gets, what a capture records of a texture turned into a spec, and the messages for
a kernel that takes one and has no spec."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsr_lsp.capture import latest_capture
from fsr_lsp.drafting.captured_textures import NotATexture, texture_value
from fsr_lsp.drafting.resolver import kernel_specs
from fsr_lsp.evaluator.job.plan import build_plans
from fsr_lsp.evaluator.records import TexturePlan
from fsr_lsp.kernels import find_kernel
from fsr_lsp.kernels.c_types import element_type
from fsr_lsp.source import SourceText
from fsr_lsp.specs import Init, parse_spec, render_spec, spec_template
from fsr_lsp.specs.infer import infer_from_signature
from fsr_lsp.specs.model import TextureArg

from ..support.captures import i32, ptr, write_capture

KERNEL = "__global__ void halve(unsigned char* out, cudaTextureObject_t image, int w, int h) { }\n"


def spec_text(image: str) -> str:
    return (f'/* @fsr\nbench = {{ w = 64, h = 32 }}\ntests = [ {{ w = 5, h = 3 }} ]\ngrid = ["cdiv(w, 16)", "cdiv(h, 16)"]\n'
            f'block = [16, 16]\n[args]\nout = "out[w * h]"\nimage = "{image}"\nw = "w"\nh = "h"\n*/\n' + KERNEL)


def parsed(image: str):
    src = SourceText(spec_text(image))
    return parse_spec(src, find_kernel(src, "halve"))


@pytest.mark.parametrize("text, expected", [
    ("texture[w, h] unsigned char", TextureArg("image", ("w", "h"), "unsigned char", Init("randint", 0, 256))),
    ("texture[w, h, 4] float4 address=wrap filter=linear coords=normalized uniform(0, 1)",
     TextureArg("image", ("w", "h", "4"), "float4", Init("uniform", 0, 1, declared=True), False, "wrap", "linear", True)),
    ("linear[w * h] ushort2 read=normalized",
     TextureArg("image", ("w * h",), "ushort2", Init("randint", 0, 200), True, read="normalized")),
])
def test_texture_forms_parse_and_render_back(text, expected):
    result = parsed(text)
    assert result.spec is not None, result.problems
    assert result.spec.arg("image") == expected
    again = SourceText(render_spec(result.spec) + KERNEL)
    assert parse_spec(again, find_kernel(again, "halve")).spec == result.spec


@pytest.mark.parametrize("text, words", [
    ("in[w * h]", "a texture object is given as texture[W, H] TYPE"),
    ("texture[w, h] double", "texel type 'double'"),
    ("texture[w, h] float3", "texel type 'float3'"),
    ("texture[w, h, 2, 2] float", "1 to 3 sizes"),
    ("texture[w, h] float address=repeat", "unknown texture setting address=repeat"),
    ("linear[w] float filter=linear", "tex1Dfetch"),
    ("texture[w - 5, h] float", "size 'w - 5' gives 0 at w=5, h=3"),
    ("texture[w, h] float randint(3, 3)", "holds no value"),
    ("texture[w, h] float captured()", "captured() is for buffers"),
    ("texture[w, h] uchar filter=linear", "integer texels need read=normalized"),
    ("texture[w, h] float address=wrap", "needs coords=normalized"),
])
def test_texture_mistakes_are_said_on_the_argument(text, words):
    result = parsed(text)
    assert result.spec is None
    assert any(words in p.message and p.message.startswith("image") for p in result.problems), result.problems


def test_the_plans_hold_each_sizes_texture_and_pass_its_handle_as_64_bits():
    src = SourceText(spec_text("texture[w, h] uchar4 filter=linear read=normalized"))
    k = find_kernel(src, "halve")
    plans = build_plans(k, parse_spec(src, k).spec)
    image = [next(a for a in p.args if a.name == "image") for p in plans]
    assert [a.texture.dims for a in image] == [(5, 3), (64, 32)]
    assert element_type("uchar") == ("uint8", 1) and element_type("uint") == ("uint32", 1)
    assert image[0].kind == "texture" and image[0].dtype == "uint64" and image[0].value is None
    assert image[0].texture == TexturePlan((5, 3), "uint8", 4, False, "clamp", "linear", False, "normalized")
    assert image[0].texture.texels == 15


def test_a_kernel_taking_a_texture_with_no_spec_is_told_where_one_comes_from():
    kernel = find_kernel(SourceText(KERNEL), "halve")
    assert "image is a texture object" in infer_from_signature(kernel)[1]
    template = spec_template(kernel)
    assert 'image = "texture[w, h] float"' in template and "capture a run" in template


ARRAY = {"kind": "array", "format": 1, "channels": 1, "dims": [640, 480, 0], "address": [1, 1, 1], "filter": 0,
         "flags": 1}


def test_captured_textures_become_spec_values():
    assert texture_value(ARRAY, {}) == ("texture[640, 480] unsigned char", ["640", "480"])
    assert texture_value(ARRAY, {640: "w", 480: "h"})[0] == "texture[w, h] unsigned char"
    sampler = {**ARRAY, "format": 0x20, "channels": 4, "address": [0, 0, 0], "filter": 1, "flags": 2}
    assert texture_value(sampler, {})[0] == "texture[640, 480] float4 address=wrap filter=linear coords=normalized"
    assert texture_value({**ARRAY, "flags": 0}, {})[0].endswith("read=normalized")  # bytes read as [0, 1] floats
    linear = {"kind": "linear", "format": 0x20, "channels": 2, "dims": [8000, 0, 0]}
    assert texture_value(linear, {1000: "n"})[0] == "linear[n] float2"  # 8000 bytes of float2
    bytes_as_floats = {"kind": "linear", "format": 0x01, "channels": 1, "dims": [64, 0, 0], "flags": 0}
    assert texture_value(bytes_as_floats, {})[0] == "linear[64] unsigned char read=normalized"
    assert "address" not in texture_value({**ARRAY, "address": [0, 0, 0]}, {})[0]  # wrap needs normalized coordinates
    with pytest.raises(NotATexture):
        texture_value({**ARRAY, "format": 0x30}, {})
    with pytest.raises(NotATexture, match="layered"):
        texture_value({**ARRAY, "flags3d": 1}, {})


def test_a_texture_the_gpu_cannot_make_is_the_specs_failure_not_a_crash():
    from fsr_lsp.evaluator.gpu.common import Failure, make_inputs
    from fsr_lsp.evaluator.gpu.textures import TextureError

    torch = pytest.importorskip("torch")

    class Refusing:
        def filled(self, name, plan, values):
            raise TextureError("cuArray3DCreate: CUDA_ERROR_INVALID_VALUE")

    class Session:
        def __init__(self):
            self.torch, self.device, self.textures = torch, "cpu", Refusing()

    src = SourceText(spec_text("texture[w, h] float"))
    k = find_kernel(src, "halve")
    plan = build_plans(k, parse_spec(src, k).spec)[0]
    with pytest.raises(Failure) as caught:
        make_inputs(Session(), plan, 1)
    assert caught.value.status == "spec_error" and caught.value.argument == "image"
    assert "the texture `image` at w=5, h=3 cannot be made: cuArray3DCreate" in caught.value.message


def test_a_captured_launch_with_a_texture_object_gives_a_spec(tmp_path: Path):
    (tmp_path / "k.cu").write_text(KERNEL)
    launch = {"id": 0, "kernel": "_Z5halvePhyii", "name": "halve(unsigned char*, unsigned long long, int, int)",
              "base": "halve", "grid": [40, 30, 1], "block": [16, 16, 1], "smem": 0,
              "params": [ptr(320 * 240), {"offset": 8, "size": 8, "hex": "0100000000000000", "texture": ARRAY},
                         {"offset": 16, "size": 4, "hex": i32(640)}, {"offset": 20, "size": 4, "hex": i32(480)}]}
    write_capture(tmp_path, [launch])
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin == "captured", spec.problems
    assert 'image = "texture[w, h] unsigned char"' in spec.spec
    assert spec.provenance["image"].startswith("the texture object the run passed")
    gone = {**launch, "params": [launch["params"][0], {"offset": 8, "size": 8, "hex": "0100000000000000"},
                                 *launch["params"][2:]]}
    write_capture(tmp_path, [gone], name="20260101-000001")
    (spec,) = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert spec.origin != "captured" and any("no texture object the driver knows" in p for p in spec.problems)


def test_a_layered_texture_in_one_kernel_leaves_the_files_other_kernels_their_specs(tmp_path: Path):
    """One kernel fsr cannot take from the capture is a line with its reason; the listing goes on."""
    (tmp_path / "k.cu").write_text(KERNEL + KERNEL.replace("halve", "halve2"))
    layered = {**ARRAY, "flags3d": 1}
    launch = {"id": 0, "kernel": "_Z5halvePhyii", "name": "halve(unsigned char*, unsigned long long, int, int)",
              "base": "halve", "grid": [40, 30, 1], "block": [16, 16, 1], "smem": 0,
              "params": [ptr(320 * 240), {"offset": 8, "size": 8, "hex": "0100000000000000", "texture": layered},
                         {"offset": 16, "size": 4, "hex": i32(640)}, {"offset": 20, "size": 4, "hex": i32(480)}]}
    other = {**launch, "id": 1, "kernel": "_Z6halve2Phyii", "base": "halve2",
             "name": "halve2(unsigned char*, unsigned long long, int, int)",
             "params": [launch["params"][0], {**launch["params"][1], "texture": ARRAY}, *launch["params"][2:]]}
    write_capture(tmp_path, [launch, other])
    first, second = kernel_specs([tmp_path / "k.cu"], capture=latest_capture(tmp_path))
    assert first.origin != "captured" and any("layered" in p for p in first.problems)
    assert second.origin == "captured", second.problems


def test_an_unexpected_error_on_one_kernel_is_its_line_not_the_end_of_the_listing(tmp_path: Path, monkeypatch):
    from fsr_lsp.drafting import stages

    (tmp_path / "k.cu").write_text(KERNEL + KERNEL.replace("halve", "halve2"))
    real = stages.draft_spec

    def broken(src, kernel, *args, **kwargs):
        if kernel.name == "halve":
            raise KeyError("surprise")
        return real(src, kernel, *args, **kwargs)

    monkeypatch.setattr(stages, "draft_spec", broken)
    first, second = kernel_specs([tmp_path / "k.cu"])
    assert first.origin == "none" and "could not work out a spec" in first.problems[0] and "surprise" in first.problems[0]
    assert second.kernel == "halve2"
