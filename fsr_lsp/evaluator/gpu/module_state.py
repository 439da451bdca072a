"""A module's writable global variables as it was loaded, and what a run of the original left
in them. A variable fsr does not compare (a header's `__device__` counter, a write fsr's
reading of the source missed) that the original changes is a result fsr would not check: the
original cannot serve as the oracle then. Each run of the original starts from the variables as
loaded, as the program's first launch would."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...kernels.device_variables import PREFIX


def uncompared(symbols: tuple[str, ...]) -> tuple[str, ...]:
    """All but the pointers fsr made of the file's compared variables (the evaluator sets those;
    a relocatable build names a `static` one `__nv_static_..._` + its name)."""
    return tuple(s for s in symbols if PREFIX not in s)


class _DeviceBytes:
    """A device address range as `__cuda_array_interface__`, for torch to view without a copy."""

    def __init__(self, address: int, size: int) -> None:
        self.__cuda_array_interface__ = {"shape": (size,), "typestr": "|u1", "data": (address, False), "version": 3}


@dataclass
class ModuleState:
    views: dict[str, Any]  # symbol -> a uint8 tensor over the variable's bytes on the device
    initial: dict[str, Any]  # symbol -> a copy of those bytes as the module was loaded

    @classmethod
    def of(cls, torch: Any, device: Any, symbols: tuple[str, ...],
           address: Callable[[str], tuple[int, int]]) -> "ModuleState":
        """The symbols' bytes viewed on `device`; one the driver does not give an address for, or
        torch cannot view, goes unchecked (the reading of the source still covers the file's own)."""
        views = {}
        for name in symbols:
            try:
                ptr, size = address(name)
                if size:
                    views[name] = torch.as_tensor(_DeviceBytes(int(ptr), int(size)), device=device)
            except Exception:  # noqa: BLE001 - pycuda's LogicError, a driver error, torch's refusal
                continue
        return cls(views, {name: v.clone() for name, v in views.items()})

    def __len__(self) -> int:
        """How many variables the module has (a module with none has nothing to keep apart)."""
        return len(self.views)

    def restore(self) -> None:
        for name, view in self.views.items():
            view.copy_(self.initial[name])

    def changed(self) -> list[str]:
        """The variables whose bytes differ from the module's as loaded."""
        return [name for name, view in self.views.items() if not bool((view == self.initial[name]).all().item())]
