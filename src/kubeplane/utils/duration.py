"""Human-readable durations, as `kubectl get` prints ages ("5m", "3h12m", "2d1h"), and Go's
time.Duration.String() (go_duration: "1m20s", "250ms") where upstream prints one.

Mirrors k8s.io/apimachinery/pkg/util/duration. Durations are float seconds (STYLE: all
durations are float seconds); they are turned into whole nanoseconds first so the integer
truncation matches Go's `time.Duration` arithmetic exactly.
"""
from __future__ import annotations

_NS = 1_000_000_000
_MINUTE = 60 * _NS
_HOUR = 60 * _MINUTE


def _nanoseconds(seconds: float) -> int:
    return round(seconds * _NS)


def _trunc_seconds(ns: int) -> int:
    """int(d.Seconds()) in Go: truncation toward zero (-1.5 s -> -1, not -2)."""
    return ns // _NS if ns >= 0 else -((-ns) // _NS)


def short_human_duration(seconds: float) -> str:
    """A succinct duration with one unit ("59s", "1m", "23h", "364d", "2y").

    Upstream: ShortHumanDuration (duration.go)
    """
    ns = _nanoseconds(seconds)
    secs = _trunc_seconds(ns)
    # Up to 2 s in the future (excluded) is clock skew between machines: call it "now".
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60:
        return f"{secs}s"
    if (minutes := ns // _MINUTE) < 60:
        return f"{minutes}m"
    if (hours := ns // _HOUR) < 24:
        return f"{hours}h"
    if hours < 24 * 365:
        return f"{hours // 24}d"
    return f"{hours // 24 // 365}y"


def human_duration(seconds: float) -> str:
    """A duration with ~2-3 significant figures ("119s", "3m10s", "70m", "3h1m", "2d1h", "2y1d").

    Upstream: HumanDuration (duration.go)

    Precision falls as the duration grows: seconds are shown below 10 minutes, minutes below
    8 hours, hours below 8 days, days below 8 years. Example: 190 s -> "3m10s", but
    10 min 1 s -> "10m"; 49 h -> "2d1h", but 8 d 2 h -> "8d".
    """
    ns = _nanoseconds(seconds)
    secs = _trunc_seconds(ns)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60 * 2:
        return f"{secs}s"
    minutes = ns // _MINUTE
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = ns // _HOUR
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def go_duration(ns: int) -> str:
    """Format nanoseconds like Go's time.Duration.String: 0s, 1.5s, 2m0s, 1h0m0s, 250ms, 1.5µs."""
    if ns == 0:
        return "0s"
    sign, u = ("-" if ns < 0 else ""), abs(ns)
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_decimal(u, 1_000)}µs"
    if u < 1_000_000_000:
        return f"{sign}{_decimal(u, 1_000_000)}ms"
    hours, rest = divmod(u, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    text = f"{_decimal(rest, 10**9)}s"
    if hours:
        text = f"{hours}h{minutes}m{text}"
    elif minutes:
        text = f"{minutes}m{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    whole, frac = divmod(value, unit)
    if not frac:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{str(frac).rjust(digits, '0').rstrip('0')}"
