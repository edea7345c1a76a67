"""Differential check of the cron port (api/validation/cron.py) against robfig/cron v3 itself:
random specs and times through both, parse errors and next activations compared.

    # robfig/cron v3.0.1 in /tmp/robfig/cron, a Go toolchain, and its oracle built once:
    #   cd /tmp/cronoracle && TZ=UTC GOFLAGS=-mod=mod GOPROXY=off go build -o oracle .
    #   (main.go: read "<unix>\\t<spec>" lines, print ParseStandard(spec).Next(time.Unix(unix,0).UTC()).Unix()
    #    or "ERR <error>"; go.mod replaces github.com/robfig/cron/v3 with /tmp/robfig/cron)
    PYTHONPATH=src python benchmarks/cron_differential.py --oracle /tmp/cronoracle/oracle [--n 20000] [--seed 1]

Prints the number of cases, how many agree, and the first disagreements. Times are drawn from
1970-2040, half of them within a day of a DST transition of the spec's zone.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import subprocess
import zoneinfo

from kubeplane.api.validation.cron import CronError, parse_standard

ZONES = ["America/New_York", "Europe/London", "America/Sao_Paulo", "Australia/Lord_Howe", "Asia/Kathmandu",
         "Pacific/Chatham", "America/St_Johns", "Africa/Casablanca", "Europe/Moscow", "Pacific/Apia", "UTC"]
NAMES = {3: ["jan", "FEB", "Mar", "apr", "dec"], 4: ["sun", "MON", "Tue", "sat", "fri"]}
BOUNDS = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)]


def atom(i: int, rng: random.Random) -> str:
    lo, hi = BOUNDS[i]
    r = rng.random()
    if r < 0.15:
        return rng.choice(["*", "?"])
    if r < 0.25:
        return f"*/{rng.randint(1 if rng.random() < 0.95 else 0, hi + 2)}"
    if r < 0.35 and i in NAMES:
        return rng.choice(NAMES[i])
    a = rng.randint(lo - 1 if rng.random() < 0.02 else lo, hi + (1 if rng.random() < 0.02 else 0))
    if r < 0.6:
        return str(a)
    b = rng.randint(min(max(a, lo), hi), hi) if rng.random() < 0.95 else rng.randint(lo, hi)
    s = f"{a}-{b}"
    if rng.random() < 0.4:
        s += f"/{rng.randint(1 if rng.random() < 0.95 else 0, 7)}"
    if rng.random() < 0.01:
        s = rng.choice(["*-5", f"{a}/{b}/2", f"{a}-{b}-1", "", "x", "+3", "-1"])
    return s


def spec(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.08:
        return rng.choice(["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly",
                           f"@every {rng.randint(1, 5000)}s", f"@every {rng.randint(1, 90)}m30s", "@every 1x",
                           "@every 1", "@fortnightly", "@every -2h"])
    fields = [",".join(atom(i, rng) for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 3)))
              for i in range(5)]
    s = " ".join(fields)
    if rng.random() < 0.5:
        s = f"{rng.choice(['TZ', 'CRON_TZ'])}={rng.choice(ZONES)} {s}"
    return s


def when(s: str, rng: random.Random) -> int:
    t = rng.randint(0, 2_208_988_800)                    # 1970 .. 2040
    zone = s.split(" ")[0].split("=")[1] if s.startswith(("TZ=", "CRON_TZ=")) else "UTC"
    if rng.random() < 0.5 and zone != "UTC":
        tz = zoneinfo.ZoneInfo(zone)
        base = dt.datetime(rng.randint(1990, 2035), rng.choice([3, 4, 9, 10, 11]), rng.randint(1, 28), tzinfo=tz)
        t = int(base.timestamp()) + rng.randint(-86400, 86400)
    return t


def ours(s: str, t: int) -> str:
    try:
        return str(parse_standard(s).next(t))
    except CronError as e:
        return f"ERR {e}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--oracle", required=True)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    cases = []
    for _ in range(args.n):
        s = spec(rng)
        cases.append((when(s, rng), s))
    stdin = "".join(f"{t}\t{s}\n" for t, s in cases)
    out = subprocess.run([args.oracle], input=stdin, capture_output=True, text=True, check=True,
                         env={**os.environ, "TZ": "UTC"}).stdout.splitlines()
    wrong = [(t, s, want, got) for (t, s), want in zip(cases, out) if (got := ours(s, t)) != want]
    errors = sum(w.startswith("ERR") for w in out)
    print(f"{len(cases)} cases ({errors} parse errors): {len(cases) - len(wrong)} agree with robfig")
    for t, s, want, got in wrong[:20]:
        print(f"  {s!r} from {t}: robfig {want}, port {got}")


if __name__ == "__main__":
    main()
