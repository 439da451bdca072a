"""Nsight Compute on one kernel at the bench size (the profile stage, run on request).

`profile.py`: throughput, occupancy and stall reasons for a model's next prompt;
`profile_lines.py`: one run with source correlation, where in its source the kernel loses time;
`ncu_source.py`: ncu's source and details pages read back. Each runs the job in the sanitizer's
child process (`..sanitize.sanitize_main`) under ncu. What a profile means for the kernel's
author is worked out above the evaluator (`fsr_lsp.profiling`).
"""
