"""The writable global variables a compiled module holds: every `__device__`/`__managed__`
variable its translation unit defines, the file's own and those of the headers it includes.
fsr compares the file's own variables that a kernel writes (kernels/device_variables.py reads
them from the source); the module's symbol table names every other one, so that the evaluator
can tell when the original changes a variable fsr does not compare (a header's counter, a write
the source reading did not see) instead of verifying rewrites that skip it."""

from __future__ import annotations

import io

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

# nvcc puts a module's writable variables in `.nv.global` (no initial value) and
# `.nv.global.init` (with one); `__constant__` data, shared memory and code live elsewhere.
_WRITABLE = (".nv.global",)
_NOT_DATA = ("STT_SECTION", "STT_FUNC", "STT_FILE", "STT_NOTYPE")


def module_variables(cubin: bytes) -> tuple[str, ...]:
    """The symbols of the cubin's writable global variables, in symbol-table order; () for
    anything that is no ELF (a test double's binary)."""
    try:
        elf = ELFFile(io.BytesIO(cubin))
        names = []
        for table in elf.iter_sections():
            if not isinstance(table, SymbolTableSection):
                continue
            for symbol in table.iter_symbols():
                # an object; in a relocatable (`-rdc`) cubin nvcc types them processor-specific instead
                if symbol["st_info"]["type"] in _NOT_DATA or not isinstance(symbol["st_shndx"], int):
                    continue
                section = elf.get_section(symbol["st_shndx"]).name
                if section.startswith(_WRITABLE) and symbol.name and symbol["st_size"] > 0:
                    names.append(symbol.name)
        return tuple(dict.fromkeys(names))
    except (ELFError, ValueError, KeyError, IndexError):
        return ()
