"""Per-plugin proof: upstream's test tables ported case by case, and differential tests
of the Rust kernels against a plain-Python reference (``reference.py``)."""
