"""Scheduler state: the cache (snapshot owner) and the scheduling queue."""
