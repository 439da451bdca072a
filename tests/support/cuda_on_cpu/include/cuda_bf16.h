// Empty: tests/cuda_on_cpu/shim.h defines what this header would (the CPU test double).
#pragma once
