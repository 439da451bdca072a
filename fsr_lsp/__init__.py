"""fsr-lsp: find, verify and time faster CUDA kernels from the editor."""

__version__ = "0.1.0"
