"""Static bearer tokens: --token-auth-file, upstream's CSV.

    token,user,uid,"group1,group2"

At least three columns (token, user name, user uid; the uid may be empty), an optional fourth
of comma-separated groups; further columns are ignored. A record with an empty token is skipped
and a duplicate token replaces the earlier one (upstream logs a warning for both). Fields follow
Go's encoding/csv (a quoted field may hold commas, doubled quotes and newlines; a quote inside
an unquoted field is an error), so a file upstream refuses is refused here, with its message.

A token is looked up in a dict, as upstream's map: the hash of an attacker's token reveals
nothing usable about the stored ones. The file is read once, at start (upstream reads it once
too).

Upstream: k8s.io/apiserver pkg/authentication/token/tokenfile/tokenfile.go (NewCSV,
AuthenticateToken); Go's encoding/csv Reader (LazyQuotes false, FieldsPerRecord -1).
"""
from __future__ import annotations

import logging
import pathlib
from collections.abc import Iterator, Mapping

from .user import UserInfo, authenticated

log = logging.getLogger(__name__)


class TokenFileError(ValueError):
    pass


class TokenFile:
    """Tokens -> users. Upstream: TokenAuthenticator"""

    def __init__(self, tokens: Mapping[str, UserInfo]) -> None:
        self.tokens = dict(tokens)

    @classmethod
    def from_names(cls, names: Mapping[str, str]) -> TokenFile:
        """token -> user name (in-process test servers): each an authenticated user without groups."""
        return cls({t: authenticated(n) for t, n in names.items()})

    @classmethod
    def load(cls, path: pathlib.Path) -> TokenFile:
        """Read --token-auth-file; TokenFileError with upstream's message for a malformed one."""
        return cls.parse(path.read_text(), str(path))

    @classmethod
    def parse(cls, text: str, path: str = "") -> TokenFile:
        tokens: dict[str, UserInfo] = {}
        number = 0
        for record in read_csv(text):
            if len(record) < 3:
                raise TokenFileError(f"token file '{path}' must have at least 3 columns (token, user name, "
                                     f"user uid), found {len(record)}")
            number += 1
            token, name, uid = record[0], record[1], record[2]
            if not token:
                log.warning("empty token has been found in token file '%s', record number '%d'", path, number)
                continue
            if token in tokens:
                log.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
            groups = record[3].split(",") if len(record) >= 4 else []
            tokens[token] = authenticated(name, *groups, uid=uid)
        return cls(tokens)

    def authenticate_token(self, token: str) -> UserInfo | None:
        return self.tokens.get(token)


def read_csv(text: str) -> Iterator[list[str]]:
    """Records as Go's csv.Reader reads them (LazyQuotes false, no comments, no field count):
    blank lines skipped, \\r\\n read as \\n; TokenFileError for a bare or extraneous quote."""
    text = text.replace("\r\n", "\n")
    i, n, line = 0, len(text), 1
    while i < n:
        if text[i] == "\n":               # an empty line
            i += 1
            line += 1
            continue
        record: list[str] = []
        start_line = line
        while True:
            if i < n and text[i] == '"':  # a quoted field
                i += 1
                chars: list[str] = []
                while True:
                    j = text.find('"', i)
                    if j < 0:             # Go: a quoted field open at EOF ends there, no error
                        j = n
                        text += '"'
                    chars.append(text[i:j])
                    line += text.count("\n", i, j)
                    i = j + 1
                    if i < n and text[i] == '"':
                        chars.append('"')
                        i += 1
                        continue
                    break
                record.append("".join(chars))
                if i < n and text[i] not in ",\n":
                    raise _parse_error(start_line, line, 'extraneous or missing " in quoted-field')
            else:
                j = i
                while j < n and text[j] not in ",\n":
                    j += 1
                field = text[i:j]
                if '"' in field:
                    raise _parse_error(start_line, line, 'bare " in non-quoted-field')
                record.append(field)
                i = j
            if i < n and text[i] == ",":
                i += 1
                continue
            i += 1                       # the newline (or past the end)
            line += 1
            break
        yield record


def _parse_error(start: int, line: int, reason: str) -> TokenFileError:
    """Go's csv.ParseError text (without the column, which Go counts in bytes of the line)."""
    prefix = f"record on line {start}; " if start != line else ""
    return TokenFileError(f"{prefix}parse error on line {line}: {reason}")
