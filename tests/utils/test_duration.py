"""Tables from upstream's duration_test.go (k8s.io/apimachinery/pkg/util/duration)."""
from __future__ import annotations

import pytest

from kubeplane.utils.duration import human_duration, short_human_duration

S = 1.0
MS = 1e-3
NS = 1e-9
M = 60 * S
H = 60 * M
D = 24 * H
Y = 365 * D


@pytest.mark.parametrize(("d", "want"), [
    (S, "1s"),
    (70 * S, "70s"),
    (190 * S, "3m10s"),
    (70 * M, "70m"),
    (47 * H, "47h"),
    (49 * H, "2d1h"),
    ((8 * 24 + 2) * H, "8d"),
    (367 * 24 * H, "367d"),
    ((365 * 2 * 24 + 25) * H, "2y1d"),
    ((365 * 8 * 24 + 2) * H, "8y"),
])
def test_human_duration(d: float, want: str) -> None:
    assert human_duration(d) == want


@pytest.mark.parametrize(("d", "want"), [
    (-2 * S, "<invalid>"),
    (-2 * S + NS, "0s"),
    (0, "0s"),
    (S - MS, "0s"),
    (2 * M - MS, "119s"),
    (2 * M, "2m"),
    (2 * M + S, "2m1s"),
    (10 * M - MS, "9m59s"),
    (10 * M, "10m"),
    (10 * M + S, "10m"),
    (3 * H - MS, "179m"),
    (3 * H, "3h"),
    (3 * H + M, "3h1m"),
    (8 * H - MS, "7h59m"),
    (8 * H, "8h"),
    (8 * H + 59 * M, "8h"),
    (2 * D - MS, "47h"),
    (2 * D, "2d"),
    (2 * D + H, "2d1h"),
    (8 * D - MS, "7d23h"),
    (8 * D, "8d"),
    (8 * D + 23 * H, "8d"),
    (2 * Y - MS, "729d"),
    (2 * Y, "2y"),
    (2 * Y + 23 * H, "2y"),
    (2 * Y + 23 * H + 59 * M, "2y"),
    (2 * Y + 24 * H - MS, "2y"),
    (2 * Y + 24 * H, "2y1d"),
    (3 * Y, "3y"),
    (4 * Y, "4y"),
    (5 * Y, "5y"),
    (6 * Y, "6y"),
    (7 * Y, "7y"),
    (8 * Y - MS, "7y364d"),
    (8 * Y, "8y"),
    (8 * Y + 364 * D, "8y"),
    (9 * Y, "9y"),
])
def test_human_duration_boundaries(d: float, want: str) -> None:
    assert human_duration(d) == want


@pytest.mark.parametrize(("d", "want"), [
    (-2 * S, "<invalid>"),
    (-2 * S + NS, "0s"),
    (0, "0s"),
    (S - MS, "0s"),
    (S, "1s"),
    (2 * S - MS, "1s"),
    (M - MS, "59s"),
    (M, "1m"),
    (2 * M - MS, "1m"),
    (H - MS, "59m"),
    (H, "1h"),
    (2 * H - MS, "1h"),
    (D - MS, "23h"),
    (D, "1d"),
    (2 * D - MS, "1d"),
    (Y - MS, "364d"),
    (Y, "1y"),
    (2 * Y - MS, "1y"),
    (2 * Y, "2y"),
])
def test_short_human_duration_boundaries(d: float, want: str) -> None:
    assert short_human_duration(d) == want
