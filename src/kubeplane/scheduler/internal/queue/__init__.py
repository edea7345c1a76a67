"""The scheduling queue."""
