"""The GPU half of the evaluator. Imported only inside the worker process: it holds the
CUDA context, and a candidate that corrupts it takes down only that process."""
