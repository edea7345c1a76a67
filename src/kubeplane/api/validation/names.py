"""String-format rules and their exact messages (k8s.io/apimachinery/pkg/util/validation,
pkg/api/validate/content, pkg/api/validation/generic.go).

Each `is_*` function returns the list of problems (empty when valid), like upstream's
`[]string` results; the callers turn each message into one FieldError.
"""
from __future__ import annotations

import functools
import re
from typing import Callable

from .memo import remember_valid, str_key

NameFn = Callable[[str, bool], list[str]]

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1123_LABEL_FMT_WITH_UNDERSCORE = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT_WITH_UNDERSCORE = (DNS1123_LABEL_FMT_WITH_UNDERSCORE + "(\\." +
                                         DNS1123_LABEL_FMT_WITH_UNDERSCORE + ")*")
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT = "(" + LABEL_KEY_FMT + ")?"
CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
PERCENT_FMT = "[0-9]+%"

_DNS1123_LABEL_RE = re.compile("^" + DNS1123_LABEL_FMT + "$")
_DNS1123_SUBDOMAIN_RE = re.compile("^" + DNS1123_SUBDOMAIN_FMT + "$")
_DNS1123_SUBDOMAIN_WITH_UNDERSCORE_RE = re.compile("^" + DNS1123_SUBDOMAIN_FMT_WITH_UNDERSCORE + "$")
_DNS1035_LABEL_RE = re.compile("^" + DNS1035_LABEL_FMT + "$")
_LABEL_KEY_RE = re.compile("^" + LABEL_KEY_FMT + "$")
_LABEL_VALUE_RE = re.compile("^" + LABEL_VALUE_FMT + "$")
_CONFIG_MAP_KEY_RE = re.compile("^" + CONFIG_MAP_KEY_FMT + "$")
_PERCENT_RE = re.compile("^" + PERCENT_FMT + "$")
_PORT_NAME_CHARSET_RE = re.compile("^[-a-z0-9]+$")
_HTTP_HEADER_RE = re.compile("^[-A-Za-z0-9]+$")


@functools.lru_cache(maxsize=8192)
def _full(regex: re.Pattern[str], s: str) -> bool:
    # Cached: the same names, label keys and values repeat on every pod a controller creates.
    # fullmatch, not match: Python's `$` would also accept a trailing newline, Go's does not.
    return regex.fullmatch(s) is not None


# Label keys and values, namespaces and condition types repeat on every write; unique pod and
# event names pass through too, hence the bound.
_remember_valid = remember_valid(key=str_key, max_entries=8192)


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream: RegexError, double space before "or" included.

    Example: regex_error("m", "f", "1%", "93%") -> "m (e.g. '1%',  or '93%', regex used for validation is 'f')".
    """
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    return msg + " (e.g. " + " or ".join(f"'{e}', " for e in examples) + f"regex used for validation is '{fmt}')"


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


@_remember_valid
def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _full(_DNS1123_LABEL_RE, value):
        if _full(_DNS1123_SUBDOMAIN_RE, value):
            errs.append("must not contain dots")   # a valid subdomain, so the dots are the problem
        else:
            errs.append(regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                "and must start and end with an alphanumeric character", DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


@_remember_valid
def is_dns1123_subdomain(value: str) -> list[str]:
    return _subdomain(value, _DNS1123_SUBDOMAIN_RE, "'-' or '.'", DNS1123_SUBDOMAIN_FMT)


def is_dns1123_subdomain_with_underscore(value: str) -> list[str]:
    """Upstream: IsDNS1123SubdomainWithUnderscore"""
    return _subdomain(value, _DNS1123_SUBDOMAIN_WITH_UNDERSCORE_RE, "'_', '-' or '.'",
                      DNS1123_SUBDOMAIN_FMT_WITH_UNDERSCORE)


def _subdomain(value: str, regex: re.Pattern[str], allowed: str, fmt: str) -> list[str]:
    """At most 253 characters matching regex (upstream's two subdomain checks differ only there)."""
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _full(regex, value):
        errs.append(regex_error(
            f"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, {allowed}, "
            "and must start and end with an alphanumeric character", fmt, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _full(_DNS1035_LABEL_RE, value):
        errs.append(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character", DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


_LABEL_KEY_MSG = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"


@_remember_valid
def is_qualified_name(value: str) -> list[str]:
    """Upstream: content.IsLabelKey (a.k.a. IsQualifiedName): optional DNS prefix, '/', name ≤ 63."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += ["prefix part " + m for m in is_dns1123_subdomain(prefix)]
    else:
        return ["a valid label key " + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > 63:
        errs.append("name part " + max_len_error(63))
    if not _full(_LABEL_KEY_RE, name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


@_remember_valid
def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append(max_len_error(63))
    if not _full(_LABEL_VALUE_RE, value):
        errs.append(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character", LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _has_chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_config_map_key(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append(max_len_error(253))
    if not _full(_CONFIG_MAP_KEY_RE, value):
        errs.append(regex_error("a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                                CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _has_chdir_prefix(value)


def is_relaxed_env_var_name(value: str) -> list[str]:
    """Upstream: IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation is GA by 1.34)."""
    if not value:
        return ["environment variable name must be non-empty"]
    if any(ord(ch) > 126 or ord(ch) < 32 or ch == "=" for ch in value):
        return ["a valid environment variable name must consist only of printable ASCII characters other than '='"]
    return []


def is_valid_percent(value: str) -> list[str]:
    if not _full(_PERCENT_RE, value):
        return [regex_error("a valid percent string must be a numeric string followed by an ending '%'",
                            PERCENT_FMT, "1%", "93%")]
    return []


def is_valid_port_num(port: int) -> list[str]:
    return [] if 1 <= port <= 65535 else [inclusive_range_error(1, 65535)]


def is_valid_port_name(port: str) -> list[str]:
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not _full(_PORT_NAME_CHARSET_RE, port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_http_header_name(value: str) -> list[str]:
    if not _full(_HTTP_HEADER_RE, value):
        return [regex_error("a valid HTTP header must consist of alphanumeric characters or '-'",
                            "[-A-Za-z0-9]+", "X-Header-Name")]
    return []


def is_path_segment_name(name: str) -> list[str]:
    """Upstream: path.ValidatePathSegmentName (names that must be safe in a URL path)."""
    if "/" not in name and "%" not in name and name != "." and name != "..":
        return []                       # every Event's name comes here: no list built per check
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


# --- ValidateNameFunc flavours (generic.go): prefix=True allows a trailing '-' (generateName)


def _mask_trailing_dash(name: str) -> str:
    """Upstream: maskTrailingDash, quirk included: "abc-" -> "aba", i.e. the last TWO chars become "a"."""
    return name[:-2] + "a" if name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool) -> list[str]:
    return [m for m in is_path_segment_name(name) if not (prefix and m.startswith("may not be"))]
