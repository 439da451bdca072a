"""What a kernel's profile means for its author: ncu's per-line counters and rules turned into
findings on the kernel's own lines, with their numbers and estimated gains, and a summary."""
