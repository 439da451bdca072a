"""The process boundary between a caller and the GPU.

`worker.py` is the worker process that owns the CUDA context and runs one job at a time (the
`..gpu` stage inside it); `worker_client.py` is its parent side, which starts it, hands it jobs
and survives whatever it does; `serde.py` turns jobs and results into plain JSON data to cross
processes and machines; `gpu_gate.py` says who may use a GPU at the same moment in this process
(a timed run alone; sanitizers and profilers together).
"""
