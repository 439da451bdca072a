"""One configuration of the tiled product as plain CUDA a reader can follow.

A block computes a BM x BN tile of the output with BM/TM x BN/TN threads, each a TM x TN tile
of sums in registers. The k dimension is walked BK at a time: the block's threads load a BM x BK
slice of A and a BK x BN slice of B into shared memory (A stored transposed, [k][row], so a
thread reads its rows of one k as one 128-bit load), meet at a barrier, and each thread
multiplies its rows by its columns for each of the BK values of k. With two buffers the next
slice is loaded into registers while this one is multiplied, and stored to the other buffer
after: one barrier a slice.

Every element is loaded through the kernel's own index expression, with the original's guard
on its row (or column) and `k < K`; out of range it is zero, which adds nothing. Four elements
(two doubles) become one 128-bit load only where their four addresses are adjacent and aligned,
checked at run time, so a layout the generator guessed wrong is slower, never wrong. Each
thread's sums run over k in the original's order, from the original's start value, and each
output is then finished by the original's own statements under its own guard.
"""

from __future__ import annotations

import textwrap

from ..syntax import add_launch_bounds
from .layout import adjacent
from .product import Product
from .tile_space import TileConfig

_VECTOR = {"float": ("float4", ("x", "y", "z", "w")), "double": ("double2", ("x", "y"))}


def lanes(acc_type: str) -> int:
    """Elements of the accumulator's type in 16 bytes."""
    return len(_VECTOR[acc_type][1])


def render(product: Product, c: TileConfig) -> str:
    """The definition of the tiled kernel."""
    return _Writer(product, c).text()


def launch(product: Product, c: TileConfig) -> str:
    """The candidate's @fsr block: a 1-D block, a grid of tiles over what the original covered."""
    p_extent, q_extent = product.extent
    grid = [f"cdiv({q_extent}, {c.bn})", f"cdiv({p_extent}, {c.bm})"] + ([product.batch] if product.batch else [])
    quoted = ", ".join(f'"{g}"' for g in grid)
    block = f"[{c.threads}, 1, 1]" if product.batch else str(c.threads)
    return f"/* @fsr\ngrid = [{quoted}]\nblock = {block}\n*/\n"


def describe(c: TileConfig) -> str:
    parts = [f"{c.bm}x{c.bn} outputs a block, {c.tm}x{c.tn} a thread ({c.threads} threads), {c.bk} of k a slice"]
    parts.append("double-buffered" if c.buffers == 2 else "single-buffered")
    if c.vector:
        parts.append("128-bit loads")
    if c.pad:
        parts.append(f"rows padded by {c.pad}")
    if c.min_blocks:
        parts.append(f"registers capped for {c.min_blocks} blocks an SM")
    return "tiled matrix product: " + ", ".join(parts)


class _Writer:
    def __init__(self, product: Product, c: TileConfig) -> None:
        self.m, self.c = product, c
        self.t = product.acc_type
        self.v = lanes(self.t)
        self.vector_type, self.fields = _VECTOR[self.t]
        # which index of each operand neighbouring threads load (the adjacent one where known)
        self.a_fast = adjacent(product.a, product.p.name, product.k) or "k"
        self.b_fast = adjacent(product.b, product.q.name, product.k) or "index"

    # ---------------------------------------------------------------- the whole

    def text(self) -> str:
        m, c, t = self.m, self.c, self.t
        kept = "".join(f"    {st}\n" for st in m.before)
        buffers = "[2]" if c.buffers == 2 else ""
        return (
            f"{self._signature()}{{\n"
            f"    // fsr: a {c.bm}x{c.bn} tile of the output a block, {c.tm}x{c.tn} outputs a thread in registers;\n"
            f"    // A and B staged in shared memory {c.bk} values of `{m.k}` at a time (A as [{m.k}][row]),\n"
            f"    // {'the next slice loaded while this one is multiplied; ' if c.buffers == 2 else ''}"
            f"every sum runs over `{m.k}` in the original's order.\n"
            f"{kept}"
            f"    __shared__ __align__(16) {t} fsr_a{buffers}[{c.bk}][{c.bm + c.pad}];\n"
            f"    __shared__ __align__(16) {t} fsr_b{buffers}[{c.bk}][{c.bn + c.pad}];\n"
            f"    const int fsr_t = threadIdx.x;\n"
            f"    const int fsr_tx = fsr_t % {c.bn // c.tn}, fsr_ty = fsr_t / {c.bn // c.tn};\n"
            f"    const int fsr_p0 = blockIdx.y * {c.bm}, fsr_q0 = blockIdx.x * {c.bn};\n"
            f"    {t} fsr_sum[{c.tm}][{c.tn}];\n"
            f"    #pragma unroll\n"
            f"    for (int fsr_i = 0; fsr_i < {c.tm}; ++fsr_i) {{\n"
            f"        #pragma unroll\n"
            f"        for (int fsr_j = 0; fsr_j < {c.tn}; ++fsr_j) fsr_sum[fsr_i][fsr_j] = {m.init};\n"
            f"    }}\n"
            f"    {t} fsr_la[{self._loads('a')}][{self.v}], fsr_lb[{self._loads('b')}][{self.v}];\n"
            + self._fetch() + self._stash() + self._multiply() + self._loop() + self._finish() +
            "}\n")

    def _signature(self) -> str:
        """The original's, bounded for this block (a bound the original had was for its own)."""
        return add_launch_bounds(self.m.signature, self.m.name, self.c.threads, self.c.min_blocks)

    def _loop(self) -> str:
        c, m = self.c, self.m
        if c.buffers == 2:
            return (f"    fsr_fetch(0);\n"
                    f"    fsr_stash(0);\n"
                    f"    __syncthreads();\n"
                    f"    int fsr_buf = 0;\n"
                    f"    for (int fsr_k0 = 0; fsr_k0 < ({m.bound}); fsr_k0 += {c.bk}) {{\n"
                    f"        const bool fsr_more = fsr_k0 + {c.bk} < ({m.bound});\n"
                    f"        if (fsr_more) fsr_fetch(fsr_k0 + {c.bk});  // the next slice, into registers\n"
                    f"        fsr_multiply(fsr_buf);\n"
                    f"        if (fsr_more) fsr_stash(fsr_buf ^ 1);  // the buffer the last slice was read from\n"
                    f"        __syncthreads();\n"
                    f"        fsr_buf ^= 1;\n"
                    f"    }}\n")
        return (f"    for (int fsr_k0 = 0; fsr_k0 < ({m.bound}); fsr_k0 += {c.bk}) {{\n"
                f"        fsr_fetch(fsr_k0);\n"
                f"        fsr_stash(0);\n"
                f"        __syncthreads();\n"
                f"        fsr_multiply(0);\n"
                f"        __syncthreads();\n"
                f"    }}\n")

    # ---------------------------------------------------------------- loading a slice

    def _groups(self, side: str) -> int:
        c = self.c
        return (c.bm if side == "a" else c.bn) * c.bk // self.v

    def _loads(self, side: str) -> int:
        return -(-self._groups(side) // self.c.threads)

    def _place(self, side: str) -> tuple[str, str, bool]:
        """(the group's index in the tile, its k in the slice, whether its lanes walk k) for group `fsr_g`."""
        c, v = self.c, self.v
        width = c.bm if side == "a" else c.bn
        if (self.a_fast if side == "a" else self.b_fast) == "k":
            return f"fsr_g / {c.bk // v}", f"fsr_g % {c.bk // v} * {v}", True
        return f"fsr_g % {width // v} * {v}", f"fsr_g / {width // v}", False

    def _fetch(self) -> str:
        return ("    auto fsr_fetch = [&](int fsr_k0) {  // a slice of A and of B into registers\n"
                + _indented(self._fetch_side("a") + self._fetch_side("b")) + "    };\n")

    def _fetch_side(self, side: str) -> str:
        m, c, t, v = self.m, self.c, self.t, self.v
        index = m.p if side == "a" else m.q
        base, guard, factor = ("fsr_p0", m.p_guard, m.a) if side == "a" else ("fsr_q0", m.q_guard, m.b)
        regs = f"fsr_l{side}"
        at, kk, along_k = self._place(side)
        groups, loads = self._groups(side), self._loads(side)
        check = f"        if (fsr_g < {groups}) {{\n" if loads * c.threads > groups else "        {\n"
        i_off, k_off = ("", " + fsr_e") if along_k else (" + fsr_e", "")
        lines = (f"    #pragma unroll\n"
                 f"    for (int fsr_l = 0; fsr_l < {loads}; ++fsr_l) {{\n"
                 f"        const int fsr_g = fsr_t + fsr_l * {c.threads};\n"
                 f"{check}"
                 f"            const {t}* fsr_at[{v}];\n"
                 f"            bool fsr_in[{v}];\n"
                 f"            #pragma unroll\n"
                 f"            for (int fsr_e = 0; fsr_e < {v}; ++fsr_e) {{\n"
                 f"                const {index.type} {index.name} = {base} + ({at}){i_off};\n"
                 f"                const {m.k_type} {m.k} = fsr_k0 + ({kk}){k_off};\n"
                 f"                fsr_in[fsr_e] = ({guard}) && {m.k} < ({m.bound});\n"
                 f"                fsr_at[fsr_e] = &{factor};\n"
                 f"            }}\n")
        if c.vector:
            adjacent = " && ".join([f"fsr_in[{e}]" for e in range(v)] + [f"fsr_at[{e}] == fsr_at[0] + {e}"
                                                                           for e in range(1, v)])
            unpack = " ".join(f"{regs}[fsr_l][{e}] = fsr_w.{f};" for e, f in enumerate(self.fields))
            lines += (f"            if ({adjacent} && (reinterpret_cast<unsigned long long>(fsr_at[0]) & 15ull) == 0) {{\n"
                      f"                const {self.vector_type} fsr_w = *reinterpret_cast<const {self.vector_type}*>(fsr_at[0]);\n"
                      f"                {unpack}\n"
                      f"            }} else {{\n"
                      f"                #pragma unroll\n"
                      f"                for (int fsr_e = 0; fsr_e < {v}; ++fsr_e) {regs}[fsr_l][fsr_e] = fsr_in[fsr_e] ? *fsr_at[fsr_e] : ({t})0;\n"
                      f"            }}\n")
        else:
            lines += (f"            #pragma unroll\n"
                      f"            for (int fsr_e = 0; fsr_e < {v}; ++fsr_e) {regs}[fsr_l][fsr_e] = fsr_in[fsr_e] ? *fsr_at[fsr_e] : ({t})0;\n")
        return lines + "        }\n    }\n"

    def _stash(self) -> str:
        return ("    auto fsr_stash = [&](int fsr_buf) {  // the registers into a shared buffer\n"
                + _indented(self._stash_side("a") + self._stash_side("b")) + "    };\n")

    def _stash_side(self, side: str) -> str:
        c, v = self.c, self.v
        at, kk, along_k = self._place(side)
        groups, loads = self._groups(side), self._loads(side)
        shared = f"fsr_{side}" + ("[fsr_buf]" if c.buffers == 2 else "")
        regs = f"fsr_l{side}"
        check = f"        if (fsr_g < {groups}) {{\n" if loads * c.threads > groups else "        {\n"
        if along_k:  # the lanes go down a column of the transposed tile
            store = (f"            #pragma unroll\n"
                     f"            for (int fsr_e = 0; fsr_e < {v}; ++fsr_e) {shared}[{kk} + fsr_e][{at}] = {regs}[fsr_l][fsr_e];\n")
        else:  # along a row: one 128-bit store (rows are padded by whole vectors)
            values = ", ".join(f"{regs}[fsr_l][{e}]" for e in range(v))
            store = (f"            *reinterpret_cast<{self.vector_type}*>(&{shared}[{kk}][{at}]) = "
                     f"make_{self.vector_type}({values});\n")
        return (f"    #pragma unroll\n"
                f"    for (int fsr_l = 0; fsr_l < {loads}; ++fsr_l) {{\n"
                f"        const int fsr_g = fsr_t + fsr_l * {c.threads};\n"
                f"{check}{store}"
                f"        }}\n"
                f"    }}\n")

    # ---------------------------------------------------------------- multiplying a slice

    def _groups_of(self, per: int) -> int:
        """Adjacent outputs a thread takes at a time along one side (a 128-bit read of shared memory)."""
        return self.v if per % self.v == 0 else 1

    def _offset(self, per: int, threads_along: int, thread: str, i: str) -> str:
        """Where a thread's `i`-th row (or column) lies in the tile: groups of adjacent ones, the
        block's threads side by side within each group's span."""
        g = self._groups_of(per)
        if g == 1:
            return f"{thread} + {threads_along} * {i}"
        return f"({i}) / {g} * {threads_along * g} + {thread} * {g} + ({i}) % {g}"

    def _multiply(self) -> str:
        c, t = self.c, self.t
        shared_a = "fsr_a" + ("[fsr_buf]" if c.buffers == 2 else "")
        shared_b = "fsr_b" + ("[fsr_buf]" if c.buffers == 2 else "")
        return ("    auto fsr_multiply = [&](int fsr_buf) {  // this slice into every sum of the thread\n"
                f"        #pragma unroll\n"
                f"        for (int fsr_kk = 0; fsr_kk < {c.bk}; ++fsr_kk) {{\n"
                f"            {t} fsr_ra[{c.tm}], fsr_rb[{c.tn}];\n"
                + self._read("fsr_ra", shared_a, c.tm, c.bm // c.tm, "fsr_ty")
                + self._read("fsr_rb", shared_b, c.tn, c.bn // c.tn, "fsr_tx") +
                f"            #pragma unroll\n"
                f"            for (int fsr_i = 0; fsr_i < {c.tm}; ++fsr_i) {{\n"
                f"                #pragma unroll\n"
                f"                for (int fsr_j = 0; fsr_j < {c.tn}; ++fsr_j) fsr_sum[fsr_i][fsr_j] += fsr_ra[fsr_i] * fsr_rb[fsr_j];\n"
                f"            }}\n"
                f"        }}\n"
                f"    }};\n")

    def _read(self, regs: str, shared: str, per: int, along: int, thread: str) -> str:
        g = self._groups_of(per)
        if g == 1:
            return (f"            #pragma unroll\n"
                    f"            for (int fsr_i = 0; fsr_i < {per}; ++fsr_i) {regs}[fsr_i] = {shared}[fsr_kk][{thread} + {along} * fsr_i];\n")
        unpack = " ".join(f"{regs}[fsr_i * {g} + {e}] = fsr_w.{f};" for e, f in enumerate(self.fields))
        return (f"            #pragma unroll\n"
                f"            for (int fsr_i = 0; fsr_i < {per // g}; ++fsr_i) {{\n"
                f"                const {self.vector_type} fsr_w = *reinterpret_cast<const {self.vector_type}*>("
                f"&{shared}[fsr_kk][fsr_i * {along * g} + {thread} * {g}]);\n"
                f"                {unpack}\n"
                f"            }}\n")

    # ---------------------------------------------------------------- the outputs

    def _finish(self) -> str:
        m, c, t = self.m, self.c, self.t
        after = "".join(f"                {st}\n" for st in m.epilogue)
        return (f"    // each output as the original finishes it, under the original's guard\n"
                f"    #pragma unroll\n"
                f"    for (int fsr_i = 0; fsr_i < {c.tm}; ++fsr_i) {{\n"
                f"        #pragma unroll\n"
                f"        for (int fsr_j = 0; fsr_j < {c.tn}; ++fsr_j) {{\n"
                f"            const {m.p.type} {m.p.name} = fsr_p0 + {self._offset(c.tm, c.bm // c.tm, 'fsr_ty', 'fsr_i')};\n"
                f"            const {m.q.type} {m.q.name} = fsr_q0 + {self._offset(c.tn, c.bn // c.tn, 'fsr_tx', 'fsr_j')};\n"
                f"            if ({m.guard}) {{\n"
                f"                {t} {m.acc} = fsr_sum[fsr_i][fsr_j];\n"
                f"{after}"
                f"            }}\n"
                f"        }}\n"
                f"    }}\n")


def _indented(lines: str) -> str:
    return textwrap.indent(lines, "    ")
