"""Stands in for a user's program run under the capture library (no GPU here): writes what the
library would for `scale<<<cdiv(n, 256), 256>>>(y, x, 2.0f, n)`, then exits with the status
asked for, or hangs. Exits 3 if the run's environment is not what the library needs."""

import json
import os
import struct
import sys
import time

n, status = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0
if not os.environ.get("CUDA_INJECTION64_PATH") or os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1":
    sys.exit(3)
record = {"id": 0, "kernel": "_Z5scalePfPKffi", "name": "scale(float*, float const*, float, int)", "base": "scale",
          "grid": [(n + 255) // 256, 1, 1], "block": [256, 1, 1], "smem": 0,
          "params": [{"offset": 0, "size": 8, "alloc": {"size": 4 * n, "offset": 0, "base": 1 << 20, "via": "cudaMalloc"}},
                     {"offset": 8, "size": 8, "alloc": {"size": 4 * n, "offset": 0, "base": 2 << 20, "via": "cudaMalloc"}},
                     {"offset": 16, "size": 4, "hex": struct.pack("<f", 2.0).hex()},
                     {"offset": 20, "size": 4, "hex": struct.pack("<i", n).hex()}]}
with open(os.path.join(os.environ["FSR_CAPTURE_OUT"], f"launches-{os.getpid()}.jsonl"), "w") as f:
    f.write(json.dumps(record) + "\n")
print(f"ran scale on {n} elements", flush=True)
if status < 0:
    time.sleep(600)
sys.exit(status)
