"""The language server: its state and start-up (server.py, main.py), its features (features/),
and what they share: the on-save nvcc check (check.py, nvcc_output.py), diagnostics and edits
in LSP terms (diagnostics.py, edits.py), the editor's searches (searches.py), the log (logs.py)
and the workspace watcher (watch.py)."""
