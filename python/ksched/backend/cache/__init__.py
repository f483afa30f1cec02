"""The scheduler cache: nodes and scheduled pods, kept in the Rust snapshot."""

from ksched.backend.cache.cache import Cache

__all__ = ["Cache"]
