"""From source text, spec and candidate to a job the GPU can run (the first stage, on the CPU).

`prepare.py` runs the stage: it finds the kernel, reads its spec, vets the candidate
(`candidate.py`; what it may ask of the preprocessor, `preprocessing.py`), has both kernels
compiled (`..compile`), and builds the job: the sizes and buffers of every run (`plan.py`), the
bytes of `captured()` buffers (`captured_buffers.py`), the launch each kernel needs
(`launch_kind.py`) and the original promoted to double precision for the accuracy criterion
(`widening.py`). Plain data out (`..records.EvalJob`); nothing here needs a GPU.
"""
