"""The server's features, one module each, each registering its own handlers: start-up and
settings (lifecycle), documents and their diagnostics, hover, code actions, workspace commands,
spec drafts (drafts), searches, captures of a run's launches (capture), profiles (profiling) and
performance on save (perf_on_save). `server/main.py` registers them, in that order."""
