"""Scheduler internals: the scheduling queue and the scheduler cache."""
