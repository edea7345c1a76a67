"""Whether a toleration tolerates a taint: shared by the scheduler and the node lifecycle controller.

Upstream: Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go).
"""
from __future__ import annotations

from .types.core_v1 import Taint, Toleration


def tolerates_taint(t: Toleration, taint: Taint) -> bool:
    """An empty effect matches every effect; an empty key with Exists matches every taint;
    Equal (or empty) compares values; Gt/Lt compare integer values (validation admits only
    Equal and Exists today)."""
    if t.effect and t.effect != taint.effect:
        return False
    if t.key and t.key != taint.key:
        return False
    op = t.operator or "Equal"
    if op == "Equal":
        return (t.value or "") == (taint.value or "")
    if op == "Exists":
        return True
    if op in ("Gt", "Lt"):
        try:
            tv, xv = int(t.value or ""), int(taint.value or "")
        except ValueError:
            return False
        return xv > tv if op == "Gt" else xv < tv
    return False
