"""Use cases that the editor and the CLI share, written once: Optimize (optimize.py)."""
