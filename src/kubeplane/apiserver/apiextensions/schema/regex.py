"""`pattern` in RE2 (google-re2), as Go's regexp: linear time whatever the pattern, and the
same syntax (no backreferences or lookaround). Compile errors are rendered as Go's
regexp/syntax prints them ("error parsing regexp: missing argument to repetition operator: `+`").
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any



@functools.cache
def _re2() -> tuple[Any, Any]:
    """The RE2 module and its options, imported on the first pattern: not at every start-up
    (the CRD registry imports this package; `kubeplane up` must not load RE2 for nothing)."""
    import re2  # type: ignore[import-untyped]
    options = re2.Options()
    options.log_errors = False
    return re2, options

# RE2's message prefix -> Go's regexp/syntax ErrorCode text.
_GO_CODES = (
    ("no argument for repetition operator", "missing argument to repetition operator"),
    ("missing )", "missing closing )"),
    ("unexpected )", "unexpected )"),
    ("missing ]", "missing closing ]"),
    ("invalid repetition size", "invalid repeat count"),
    ("invalid escape sequence", "invalid escape sequence"),
    ("bad repetition operator", "invalid nested repetition operator"),
    ("invalid character class range", "invalid character class range"),
    ("invalid character class", "invalid character class"),
    ("invalid named capture group", "invalid named capture"),
    ("invalid perl operator", "invalid or unsupported Perl syntax"),
    ("trailing \\", "trailing backslash at end of expression"),
    ("invalid UTF-8", "invalid UTF-8"),
    ("pattern too large", "expression too large"),
)


@functools.lru_cache(maxsize=1024)
def compile_go_regexp(pattern: str) -> tuple[Any, str | None]:
    """(compiled, None), or (None, Go's error text)."""
    re2, options = _re2()
    try:
        return re2.compile(pattern, options), None
    except re2.error as e:
        detail = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else str(e)
        msg, _, arg = detail.partition(": ")
        for re2_msg, go_msg in _GO_CODES:
            if msg.startswith(re2_msg):
                if re2_msg in ("missing )", "missing ]", "unexpected )"):
                    arg = pattern if re2_msg != "missing ]" else arg
                return None, f"error parsing regexp: {go_msg}: `{arg}`"
        return None, f"error parsing regexp: {detail}"


def go_matcher(pattern: str) -> Callable[[str], bool] | None:
    """regexp.MatchString as a function of the text (None when the pattern does not compile).

    It calls RE2's Match on the UTF-8 bytes directly: the wrapper's search() also maps every
    span back to character offsets, which costs more than the match itself on short strings.
    """
    compiled = compile_go_regexp(pattern)[0]
    if compiled is None:
        return None
    re2 = _re2()[0]
    match = getattr(getattr(compiled, "_regexp", None), "Match", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    null = getattr(re2, "_NULL_SPAN", None)
    if match is None or anchor is None or null is None:       # another google-re2 layout
        return lambda s: compiled.search(s) is not None

    def matches(s: str) -> bool:
        b = s.encode("utf-8", "surrogatepass")
        return bool(match(anchor, b, 0, len(b))[0] != null)
    return matches
