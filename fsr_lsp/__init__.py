"""fsr-lsp: find, verify and time faster CUDA kernels from the editor."""

import logging

__version__ = "0.1.0"

# A library's loggers stay silent until the program configures logging (the server's log, the CLI's
# FSR_LOG_FILE): without this, Python's last-resort handler prints every warning a second time
# beside the line fsr itself says on stderr.
logging.getLogger(__name__).addHandler(logging.NullHandler())
