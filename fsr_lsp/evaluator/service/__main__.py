"""`python -m fsr_lsp.evaluator.service --socket PATH --gpus G --timeout S --idle S`: the service,
as the client starts it."""

from __future__ import annotations

import sys

from .warm_service import main

if __name__ == "__main__":
    sys.exit(main())
