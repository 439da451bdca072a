"""Device code to cubin, on untrusted text (the compile stage; no GPU).

`compiler.py` compiles with NVRTC, nvcc as the authority, and caches cubins (`cubin_cache.py`); every compile runs
under limits (`limits.py`; NVRTC in child processes, `sandbox.py`). What a build says is read
here too: which symbol is the kernel (`entries.py`), what each entry uses (`ptxas.py`), which writable
variables the module holds (`module_variables.py`), whether
it needs the device runtime linked (`relocatable.py`), the compiler's messages cut to what a
candidate may be shown (`compiler_output.py`), and, when a file's host side cannot be compiled
on this machine, its device side alone (`device_unit.py`).
"""
