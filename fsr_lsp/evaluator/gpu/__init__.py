"""The GPU half of the evaluator: run, check and time a job. It runs in the worker process
(`..worker`), which holds the CUDA context so that a candidate that corrupts it takes down only
that process, and in the sanitizer's child; torch and pycuda are loaded there alone.

`run.py` runs the stage. The context and loaded kernels: `session.py` (torch and pycuda),
`driver_api.py`, `cooperative.py`, `textures.py`, the module's variables `module_state.py`. Checking: `verify.py` against the original as
the oracle (`oracle.py`), with `buffers.py`, `accuracy.py` (the criterion), `ref.py` (a spec's
torch reference), and the defences `guards.py`, `shared.py`, `unmapped.py`. Timing:
`timing.py`, its runs' own check `timed_runs.py`. What verification and timing share: `common.py`."""
