from fsr_lsp.evaluator.compile.entries import instantiation_entry, match_entry
from fsr_lsp.evaluator.compile.ptxas import entry_functions, parse_resources

LOG = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5saxpyifPKfPf' for 'sm_90a'
ptxas info    : Function properties for _Z5saxpyifPKfPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compiling entry function '_ZN2ns6reduceEPKfPfi' for 'sm_90a'
ptxas info    : Function properties for _ZN2ns6reduceEPKfPfi
    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]
"""


def test_resources_per_entry():
    res = parse_resources(LOG)
    assert res["_Z5saxpyifPKfPf"].registers == 10 and res["_Z5saxpyifPKfPf"].shared_bytes == 0
    r = res["_ZN2ns6reduceEPKfPfi"]
    assert (r.registers, r.shared_bytes, r.stack_bytes, r.spill_stores, r.spill_loads) == (255, 8192, 24, 8, 12)


def test_entries_are_matched_by_name_through_mangling():
    entries = entry_functions(LOG)
    assert entries == ["_Z5saxpyifPKfPf", "_ZN2ns6reduceEPKfPfi"]
    assert match_entry(entries, "saxpy") == "_Z5saxpyifPKfPf"
    assert match_entry(entries, "reduce") == "_ZN2ns6reduceEPKfPfi"
    assert match_entry(entries, "sax") is None
    assert match_entry(["k", "_Z1kPf"], "k") == "k"  # extern "C" wins
    assert match_entry(["_Z1kPf", "_Z1kPd"], "k") is None  # overloads: ambiguous
    assert match_entry(["_Z2k1IfLi256EEviPKT_PS0_"], "k1") == "_Z2k1IfLi256EEviPKT_PS0_"


def test_of_several_instantiations_the_one_whose_arguments_were_asked_for():
    entries = ["_Z1kILj1024EEvPiS0_j", "_Z1kILj128EEvPiS0_j", "_Z1kIfLi32EEvPf", "_Z5otherILj128EEvv"]
    demangled = {"_Z1kILj1024EEvPiS0_j": "void k<1024u>(int*, int*, unsigned int)",
                 "_Z1kILj128EEvPiS0_j": "void k<128u>(int*, int*, unsigned int)",
                 "_Z1kIfLi32EEvPf": "void k<float, 32>(float*)",
                 "_Z5otherILj128EEvv": "void other<128u>()"}
    assert match_entry(entries, "k") is None  # three entries are named k
    assert instantiation_entry(entries, "k", "128", demangled) == "_Z1kILj128EEvPiS0_j"
    assert instantiation_entry(entries, "k", "float,32", demangled) == "_Z1kIfLi32EEvPf"
    assert instantiation_entry(entries, "k", "256", demangled) is None
    assert instantiation_entry(entries, "k", "128", {}) is None  # no demangler: no guess


def test_nested_template_arguments_match_however_the_demangler_spaces_them():
    """The driver's demangler writes `F<G<h> >`, cu++filt beside a newer nvcc `F<G<h>>`: one
    instantiation (a variadic elementwise template launched with pack sizes 8 and 1 here)."""
    entries = ["_Z5applyILi8E1FI1GI6__halfEES2_JS2_EEvT0_", "_Z5applyILi1E1FI1GI6__halfEES2_JS2_EEvT0_"]
    demangled = {entries[0]: "void apply<8, F<G<__half>>, __half, __half>(F<G<__half>>)",
                 entries[1]: "void apply<1, F<G<__half>>, __half, __half>(F<G<__half>>)"}
    assert instantiation_entry(entries, "apply", "8, F<G<__half> >, __half, __half", demangled) == entries[0]
    assert instantiation_entry(entries, "apply", "1, F<G<__half> >, __half, __half", demangled) == entries[1]
    assert instantiation_entry(entries, "apply", "8, F<G<float> >, __half, __half", demangled) is None


def test_bool_and_int_arguments_match_as_cu_filt_and_the_driver_write_them():
    """OneFlow's softmax as the driver names it (`2, false, (Algorithm)0`) and as cu++filt does
    (`(int)2, (bool)0, (Algorithm)0`): one instantiation."""
    entries = ["_Z15SoftmaxWarpImplI10DirectLoadIffEfLi2ELb0EL9Algorithm0EEvT_ll",
               "_Z15SoftmaxWarpImplI10DirectLoadIffEfLi2ELb1EL9Algorithm0EEvT_ll"]
    demangled = {entries[0]: "void SoftmaxWarpImpl<DirectLoad<float, float>, float, (int)2, (bool)0, (Algorithm)0>(T1, long, long)",
                 entries[1]: "void SoftmaxWarpImpl<DirectLoad<float, float>, float, (int)2, (bool)1, (Algorithm)0>(T1, long, long)"}
    wanted = "DirectLoad<float, float>, float, 2, false, (Algorithm)0"
    assert instantiation_entry(entries, "SoftmaxWarpImpl", wanted, demangled) == entries[0]
    assert instantiation_entry(entries, "SoftmaxWarpImpl", wanted.replace("false", "true"), demangled) == entries[1]
