"""metav1.Time / MicroTime as their UnmarshalJSON (time.Parse with RFC3339 / RFC3339Micro) and
MarshalJSON (UTC, to the second / to the microsecond) read and write them.

Upstream: apimachinery pkg/apis/meta/v1/time.go, micro_time.go (TestTimeMarshalJSON,
TestMicroTimeUnmarshalJSON's values) and Go's time.Parse messages (time/format.go,
format_test.go's parseErrorTests: extra text, out of range, cannot parse ... as ...).
"""
from __future__ import annotations

import pytest

from kubeplane.api.gotime import TimeParseError, canonical

L = '"2006-01-02T15:04:05Z07:00"'
LM = '"2006-01-02T15:04:05.000000Z07:00"'


@pytest.mark.parametrize(("value", "micro", "out"), [
    ("2014-12-16T20:07:34Z", False, "2014-12-16T20:07:34Z"),
    ("1998-05-05T05:05:05.5Z", False, "1998-05-05T05:05:05Z"),              # the fraction is dropped
    ("1998-05-05T07:05:05.123456789+02:00", False, "1998-05-05T05:05:05Z"),   # UTC
    ("1998-05-05T05:05:05,5Z", False, "1998-05-05T05:05:05Z"),              # a comma, as Go 1.17+
    ("2000-01-01T00:30:00+01:00", False, "1999-12-31T23:30:00Z"),          # across a year
    ("2014-12-16T20:07:34.000000Z", True, "2014-12-16T20:07:34.000000Z"),
    ("2014-12-16T22:07:34.123456+02:00", True, "2014-12-16T20:07:34.123456Z"),
    ("2024-02-29T00:00:00Z", False, "2024-02-29T00:00:00Z"),
])
def test_canonical(value: str, micro: bool, out: str) -> None:
    assert canonical(value, micro) == out


@pytest.mark.parametrize(("value", "micro", "message"), [
    ("yesterday", False, f'parsing time "yesterday" as {L}: cannot parse "yesterday" as "2006"'),
    # digits of another script are no digits to Go; quote() writes a non-ASCII or control
    # character's bytes as \xhh
    ("\u0662014-12-16T20:07:34Z", False, f'parsing time "\\xd9\\xa2014-12-16T20:07:34Z" as {L}: '
                                           'cannot parse "\\xd9\\xa2014-12-16T20:07:34Z" as "2006"'),
    ("2014-12-16T20:07:34.\u0665Z", False, f'parsing time "2014-12-16T20:07:34.\\xd9\\xa5Z" as {L}: '
                                            'cannot parse ".\\xd9\\xa5Z" as "Z07:00"'),
    ("2014-12-16T20:07:34Z\n", False, 'parsing time "2014-12-16T20:07:34Z\\x0a": extra text: "\\x0a"'),
    ('"', False, f'parsing time "\\"" as {L}: cannot parse "\\"" as "2006"'),
    ("2006-01-02T15:04:05Z_abc", False, 'parsing time "2006-01-02T15:04:05Z_abc": extra text: "_abc"'),
    ("2010-02-04T21:00:67.012345678-08:00", False,
     'parsing time "2010-02-04T21:00:67.012345678-08:00": second out of range'),
    ("2006-13-02T15:04:05Z", False, 'parsing time "2006-13-02T15:04:05Z": month out of range'),
    ("2023-02-29T15:04:05Z", False, 'parsing time "2023-02-29T15:04:05Z": day out of range'),
    ("2006-01-02T24:04:05Z", False, 'parsing time "2006-01-02T24:04:05Z": hour out of range'),
    ("2006-01-02 15:04:05Z", False, f'parsing time "2006-01-02 15:04:05Z" as {L}: cannot parse " 15:04:05Z" as "T"'),
    ("2006-01-02T15:04:05", False, f'parsing time "2006-01-02T15:04:05" as {L}: cannot parse "" as "Z07:00"'),
    # MicroTime wants exactly six digits of fraction: the Python client's isoformat() of a whole
    # second (no fraction) is refused by a real API server too
    ("2006-01-02T15:04:05Z", True, f'parsing time "2006-01-02T15:04:05Z" as {LM}: cannot parse "Z" as ".000000"'),
    ("2006-01-02T15:04:05.1Z", True, f'parsing time "2006-01-02T15:04:05.1Z" as {LM}: cannot parse ".1Z" as ".000000"'),
    ("2006-01-02T15:04:05.123456789Z", True,
     f'parsing time "2006-01-02T15:04:05.123456789Z" as {LM}: cannot parse "789Z" as "Z07:00"'),
])
def test_parse_errors(value: str, micro: bool, message: str) -> None:
    with pytest.raises(TimeParseError) as e:
        canonical(value, micro)
    assert str(e.value) == message
