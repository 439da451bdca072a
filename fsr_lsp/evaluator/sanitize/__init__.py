"""compute-sanitizer on a promoted candidate or on the original (a stage after verification).

`sanitizer.py` runs each tool in a child process beside the others, never beside a timed run,
and reads its reports back against the buffers; `sanitizer_plan.py` chooses the sizes each tool
can afford; `sanitize_main.py` is the child itself (`python -m
fsr_lsp.evaluator.sanitize.sanitize_main`), which the profiler runs under ncu as well;
`plain_runs.py` is how that child runs a job with pycuda and numpy alone, without torch's slow
start under the tool.
"""
