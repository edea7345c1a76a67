"""Errors that end a command with one line on stderr and exit status 1, never a traceback."""
from __future__ import annotations


class Fatal(Exception):
    """The command cannot go on; str(self) is the whole story for the user."""


def describe(err: OSError, op: str = "") -> str:
    """An OSError as Go prints one: "open /x/up.lock: permission denied" (without an op:
    "/x/up.lock: permission denied")."""
    reason = (err.strerror or str(err)).lower()
    if not err.filename:
        return reason
    return f"{op} {err.filename}: {reason}" if op else f"{err.filename}: {reason}"
