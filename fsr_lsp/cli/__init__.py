"""The `fsr` command line."""
