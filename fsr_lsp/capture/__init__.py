"""Launches captured from a run of the user's own program: the CUPTI injection library (its C++
source, built once per toolkit and cached), running a command under it, and the records it
writes (grid, block, shared memory, scalar values, and the allocation each pointer points
into). Knows nothing of specs: `drafting.captured` turns records into specs."""

from .launches import Allocation, Capture, CapturedLaunch, CapturedParam, captures, latest_capture, read_capture
from .runner import CaptureError, CaptureOptions, prune, run_capture

__all__ = ["Allocation", "Capture", "CapturedLaunch", "CapturedParam", "CaptureError", "CaptureOptions", "captures",
           "latest_capture", "prune", "read_capture", "run_capture"]
