"""Memory holding pointers rebuilt at this run's addresses, and put back for comparing
(job/linked_memory.py says where the links come from).

`relocate` writes, before a launch, each link's target address at its place: the kernel then
follows the run's structure (a list's `next`, a struct's `char* name`) into this run's buffers.
`canonical`, after the launch, puts back the saved word where a link still points where it was
put, and writes one that now points elsewhere into these buffers as (which buffer, which byte):
two runs at different addresses then hold the same bytes when they did the same thing, and a
kernel that moves a pointer differs where it moved it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..job.captured_buffers import read_saved
from ..job.linked_memory import link_writes
from ..records import ArgPlan

TAG = 1 << 62  # a canonical pointer into this run's buffers: TAG | buffer << 40 | byte


def relocate(torch: Any, args: list[ArgPlan], tensors: dict[str, Any], addresses: dict[str, int]) -> None:
    """Each link's target address written at its place in `tensors` (in place); `addresses`: where
    the kernel gets each buffer (its tensor's, or where unmapped.py placed it)."""
    for a in args:
        if not a.links or a.kind != "buffer":  # a captured value's pointers go into its bytes (launch_args)
            continue
        mine = addresses[a.name]
        writes = [(at - mine, value) for at, value in link_writes([a], addresses)]
        _write_words(torch, tensors[a.name], [p for p, _ in writes], [v for _, v in writes])


def canonical(torch: Any, args: list[ArgPlan], tensors: dict[str, Any], addresses: dict[str, int]) -> None:
    """Pointers in `tensors` (this run's buffers or copies of them; `addresses`: where the buffers
    were) made comparable: each link's word put back as saved where it still points where
    `relocate` put it, and every other word of memory that holds pointers (`ArgPlan.pointers`:
    a kernel may write new ones, a table of `void*` it fills) that points into these buffers
    written as its buffer and byte."""
    if not any(a.links or a.pointers for a in args):
        return
    names = sorted((n for n in addresses if n in tensors), key=lambda n: addresses[n])
    device = next(iter(tensors.values())).device
    starts = torch.tensor([addresses[n] for n in names], dtype=torch.int64, device=device)
    ends = starts + torch.tensor([tensors[n].numel() * tensors[n].element_size() for n in names], dtype=torch.int64,
                                 device=device)
    by_name = sorted(names)  # a pointer's tag names its buffer alike wherever the buffers lie
    number = torch.tensor([by_name.index(n) for n in names], dtype=torch.int64, device=device)

    def tagged(words: Any) -> Any:
        which = (torch.searchsorted(starts, words, right=True) - 1).clamp(min=0)
        inside = (words >= starts[which]) & (words < ends[which])
        return torch.where(inside, TAG | (number[which] << 40) | (words - starts[which]), words)

    for a in args:
        if a.name not in tensors or a.kind != "buffer" or not (a.links or a.pointers):
            continue
        t = tensors[a.name]
        positions = [at for at, _, _ in a.links]
        linked = _read_words(torch, t, positions) if positions else None  # before any word is rewritten
        raw = t.reshape(-1).view(torch.uint8)
        if a.pointers and raw.numel() % 8 == 0 and t.data_ptr() % 8 == 0:
            words = raw.view(torch.int64)
            words.copy_(tagged(words))
        if linked is not None:
            placed = torch.tensor([addresses[n] + o if n in addresses else 0 for _, n, o in a.links],
                                  dtype=torch.int64, device=device)
            saved = torch.tensor(_saved_words(a.source, tuple(positions)), dtype=torch.int64, device=device)
            _write_words(torch, t, positions, torch.where(linked == placed, saved, tagged(linked)))


@lru_cache(maxsize=64)
def _saved_words(source: str, positions: tuple[int, ...]) -> list[int]:
    """The words a captured buffer's saved bytes hold at `positions` (its own bytes, from its start)."""
    offset, _, path = source.partition(":")
    data = read_saved(f"{offset}:{path}", (max(positions) + 8) if positions else 0)
    return [int.from_bytes(data[p:p + 8], "little", signed=True) for p in positions]


def _byte_index(torch: Any, positions: list[int], device: Any) -> Any:
    return (torch.tensor(positions, dtype=torch.int64, device=device)[:, None]
            + torch.arange(8, dtype=torch.int64, device=device)).reshape(-1)


def _read_words(torch: Any, tensor: Any, positions: list[int]) -> Any:
    raw = tensor.reshape(-1).view(torch.uint8)
    return raw[_byte_index(torch, positions, tensor.device)].reshape(-1, 8).contiguous().view(torch.int64).reshape(-1)


def _write_words(torch: Any, tensor: Any, positions: list[int], values: Any) -> None:
    if not positions:
        return
    raw = tensor.reshape(-1).view(torch.uint8)
    if not torch.is_tensor(values):
        values = torch.tensor([v if v < 1 << 63 else v - (1 << 64) for v in values], dtype=torch.int64)
    raw[_byte_index(torch, positions, tensor.device)] = values.to(tensor.device).contiguous().view(torch.uint8)
