"""What a waiting sanitizer child and its parent say to each other, through files of the child's
folder (sanitize_main.py, children.py), and the line the child's run prints its steps' seconds on."""

# In the order they appear: the child has loaded; the parent asks for the CUDA context (holding a
# share of the GPU); the child has made it (the file holds why not, where it could not); the job
# is written (job.json), then GO.
LOADED, CONTEXT_ASKED, CONTEXT_MADE, GO = "loaded", "context", "context-made", "go"
PHASES_MARK = "fsr sanitize phases:"  # a plain run's steps' seconds, for the parent's debug log
