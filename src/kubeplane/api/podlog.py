"""The options of a pods/log request, shared by the API server that parses and validates them
(apiserver/handlers/podlog.py) and the kubelet that serves them (kubelet/server.py)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LogOptions:
    """Upstream: PodLogOptions (core/v1)."""

    container: str
    follow: bool = False
    previous: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    timestamps: bool = False
    since_seconds: int | None = None
