"""The configurations of a tiled product a hand-tuner would try, the rules that make one valid,
and the order to try them in before anything is measured.

The order is a rough model of the GPU, not a measurement: a tile that reuses each loaded
element more (larger BM, BN) and each shared-memory read more (larger TM, TN) does less work a
multiply, but a product with few tiles leaves SMs idle, and a tile too large for the registers
and shared memory of an SM runs fewer blocks at once. The search measures the first few and
refines around the fastest; the model only decides what is measured first.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

SHARED_LIMIT = 48 << 10  # static shared memory a block may have
REGISTERS_PER_SM = 65536
MAX_REGISTERS = 255


@dataclass(frozen=True, order=True)
class TileConfig:
    bm: int  # outputs a block along p (the rows of A)
    bn: int  # along q (the columns of B)
    bk: int  # k a slice
    tm: int  # outputs a thread along p
    tn: int  # along q
    buffers: int = 2  # 2: the next slice loaded into registers while this one is multiplied
    vector: bool = True  # 128-bit global loads where four elements are adjacent and aligned
    pad: int = 4  # elements of padding after each shared row (0, or a whole vector)
    min_blocks: int = 0  # __launch_bounds__' blocks an SM should hold (registers capped to fit them); 0: none

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)

    def shared_bytes(self, element: int) -> int:
        return self.buffers * self.bk * (self.bm + self.bn + 2 * self.pad) * element

    def registers(self, element: int) -> int:
        """A rough count a thread: its sums, one k's operands, the staged slice, the addresses."""
        words, lanes = element // 4, 16 // element
        staged = sum(-(-side * self.bk // (lanes * self.threads)) * lanes for side in (self.bm, self.bn))
        return (self.tm * self.tn + self.tm + self.tn + staged) * words + 40

    def neighbours(self) -> list["TileConfig"]:
        """One knob a step: each tile size halved or doubled, buffering, vectors, padding."""
        out = []
        for field in ("bm", "bn", "bk", "tm", "tn"):
            value = getattr(self, field)
            out += [replace(self, **{field: value // 2}), replace(self, **{field: value * 2})]
        out.append(replace(self, buffers=3 - self.buffers))
        out.append(replace(self, vector=not self.vector))
        out.append(replace(self, pad=0 if self.pad else 4))
        out.append(replace(self, min_blocks=0 if self.min_blocks else 2))
        return out


def valid(c: TileConfig, element: int = 4, max_threads: int = 1024) -> bool:
    """What the renderer can write and the GPU can run: whole vectors along every side, every
    thread some outputs, a block the GPU takes, shared memory and registers within limits."""
    lanes = 16 // element
    if min(c.bm, c.bn, c.bk, c.tm, c.tn) < 1 or c.bm % c.tm or c.bn % c.tn:
        return False
    if c.bk % lanes or c.bm % lanes or c.bn % lanes or c.pad % lanes or c.buffers not in (1, 2):
        return False
    if not 32 <= c.threads <= max_threads or c.threads % 32 or c.min_blocks not in (0, 2) or \
            c.min_blocks * c.threads > 2048:
        return False
    if c.tm * c.tn > 64 or (c.tm > 1 and c.tm % lanes and c.tm != 2) or (c.tn > 1 and c.tn % lanes and c.tn != 2):
        return False
    return c.shared_bytes(element) <= SHARED_LIMIT and c.registers(element) <= MAX_REGISTERS


def configurations(element: int = 4) -> list[TileConfig]:
    """Every valid configuration of the usual sizes."""
    sizes, depths, per = (16, 32, 64, 128, 256), (4, 8, 16, 32), (1, 2, 4, 8, 16)
    out = []
    for bm, bn, bk, tm, tn, buffers, pad, least in itertools.product(sizes, sizes, depths, per, per, (2, 1), (4, 0),
                                                                     (0, 2)):
        c = TileConfig(bm, bn, bk, tm, tn, buffers, True, pad if element == 4 else pad // 2, least)
        if valid(c, element):
            out.append(c)
    return out


def prior(c: TileConfig, p: int, q: int, batch: int, sms: int, element: int = 4) -> float:
    """A guess at the time (arbitrary units) of configuration `c` on a p x q (x batch) output,
    lower first: the work of each multiply-add (its shared and global loads, amortised by the
    tile sizes), stretched by the waves of blocks an SM holds and by idle SMs in the last wave."""
    threads = c.threads
    registers = c.registers(element)
    if c.min_blocks and registers > REGISTERS_PER_SM // (c.min_blocks * threads):
        return math.inf  # capped below what it needs: it spills (seen: a double 8x8 tile 9x slower)
    per_sm = min(2048 // threads, 32, REGISTERS_PER_SM // (threads * max(registers, 32)),
                 (228 << 10) // max(c.shared_bytes(element), 1))
    if per_sm < 1:
        return math.inf
    tiles = math.ceil(p / c.bm) * math.ceil(q / c.bn) * max(batch, 1)
    waves = tiles / (sms * per_sm)
    fill = waves / math.ceil(waves) if waves > 0 else 0.0
    # issued instructions a multiply-add: shared reads (vectors count once), global loads
    lanes = 16 // element
    shared = (1 / c.tn) / (lanes if c.tm % lanes == 0 else 1) + (1 / c.tm) / (lanes if c.tn % lanes == 0 else 1)
    global_ = (1 / c.bn + 1 / c.bm) * 8
    latency = 1.0 if c.buffers == 2 else 1.25  # a slice loaded while the last is multiplied
    occupancy = min(1.0, per_sm * threads / 512)  # too few warps to hide latency
    slices = 1 / c.bk  # a barrier, the loop and the loads' addresses each slice (measured: BK 4 is 12% slower than 8)
    work = (1 + shared + global_ + slices) * latency / occupancy
    padded = (math.ceil(p / c.bm) * c.bm * math.ceil(q / c.bn) * c.bn) / max(p * q, 1)  # work on the ragged edge
    return work * padded / max(fill, 1e-3) * max(1.0, 1.0 / max(waves, 1e-3)) ** 0.5


def ranked(p: int, q: int, batch: int, sms: int, element: int = 4) -> list[TileConfig]:
    """Every valid configuration, likeliest fastest first (none the model expects to spill)."""
    scored = [(prior(c, p, q, batch, sms, element), c) for c in configurations(element)]
    return [c for score, c in sorted(scored) if score < math.inf]


def first_guesses(p: int, q: int, batch: int, sms: int, element: int = 4, n: int = 4) -> list[TileConfig]:
    """The `n` likeliest, each a different tile shape (depth, padding and register caps are refinements)."""
    out: list[TileConfig] = []
    for c in ranked(p, q, batch, sms, element):
        if all((c.bm, c.bn, c.tm, c.tn) != (o.bm, o.bn, o.tm, o.tn) for o in out):
            out.append(c)
        if len(out) == n:
            break
    return out
