"""Benchmarks run on a release build (``make bench``); they are not part of ``make test``."""
