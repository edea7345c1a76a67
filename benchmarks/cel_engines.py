"""Compare the CEL engines on PyPI: correctness on cel-spec's conformance cases and speed on
typical admission expressions (BENCHMARKS.md, "CEL engine").

Run:  .venv/bin/pip install cel-python common-expression-language   # the two not chosen
      .venv/bin/python benchmarks/cel_engines.py --spec DIR [--engine cpp|rust|py ...]

DIR holds cel-spec's tests/simple/testdata/*.textproto (github.com/google/cel-spec). Only the
cases an engine can take without protobuf messages are run: an expression with no bindings, no
type environment and no container, expecting a scalar value or an error; each engine gets the
strings/optional/bindings/math extensions it has. A case passes when the result (or the fact
of an error) is the expected one. An engine that is not installed is skipped.
"""
from __future__ import annotations

import argparse
import math
import pathlib
import re
import statistics
import time
from typing import Any, Callable

# --- a textproto reader for cel-spec's SimpleTestFile ----------------------------------------

_TOKEN = re.compile(r'\s*(?:#[^\n]*\n\s*)*("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[{}:\[\],<>]|[^\s{}:\[\],<>]+)')


def _unescape(s: str) -> Any:
    body = s[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode()
            i += 1
            continue
        n = body[i + 1]
        if n in "01234567":
            j = i + 1
            while j < min(i + 4, len(body)) and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8))
            i = j
        elif n == "x":
            j = i + 2
            while j < min(i + 4, len(body)) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16))
            i = j
        elif n in "uU":
            width = 4 if n == "u" else 8
            out += chr(int(body[i + 2:i + 2 + width], 16)).encode()
            i += 2 + width
        else:
            out += {"n": b"\n", "t": b"\t", "r": b"\r", "a": b"\a", "b": b"\b", "f": b"\f", "v": b"\v"}.get(
                n, n.encode())
            i += 2
    return bytes(out)


def parse_textproto(text: str) -> dict[str, list[Any]]:
    tokens = [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]
    pos = 0

    def message(end: str | None) -> dict[str, list[Any]]:
        nonlocal pos
        out: dict[str, list[Any]] = {}
        while pos < len(tokens) and tokens[pos] != end:
            if tokens[pos] in (",", ";"):            # optional separators between fields
                pos += 1
                continue
            name = tokens[pos]
            pos += 1
            if tokens[pos] == ":":
                pos += 1
            if tokens[pos] in ("{", "<"):
                close = "}" if tokens[pos] == "{" else ">"
                pos += 1
                value: Any = message(close)
                pos += 1
            elif tokens[pos] == "[":
                pos += 1
                value = []
                while tokens[pos] != "]":
                    if tokens[pos] == ",":
                        pos += 1
                        continue
                    value.append(tokens[pos])
                    pos += 1
                pos += 1
            else:
                value = tokens[pos]
                pos += 1
                while pos < len(tokens) and tokens[pos][0] in "\"'" and value[0] in "\"'":   # "a" "b"
                    value = value[:-1] + tokens[pos][1:]
                    pos += 1
            out.setdefault(name, []).append(value)
        return out

    return message(None)


_NO = object()


def expected_value(v: dict[str, list[Any]]) -> Any:
    """The Python value of a cel.expr.Value with a scalar, else _NO."""
    if "bool_value" in v:
        return v["bool_value"][0] == "true"
    for k in ("int64_value", "uint64_value"):
        if k in v:
            return int(v[k][0])
    if "double_value" in v:
        s = v["double_value"][0]
        return {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}.get(s.lower(), None) if s.lower() in (
            "inf", "-inf", "nan") else float(s)
    if "string_value" in v:
        return _unescape(v["string_value"][0]).decode("utf-8", "surrogateescape")
    if "bytes_value" in v:
        return _unescape(v["bytes_value"][0])
    if "null_value" in v:
        return None
    return _NO


def cases(spec_dir: pathlib.Path) -> list[tuple[str, str, Any]]:
    """(file/section/test, expression, expected value or Exception)."""
    out = []
    for path in sorted(spec_dir.glob("*.textproto")):
        f = parse_textproto(path.read_text())
        for section in f.get("section", []):
            for t in section.get("test", []):
                if set(t) & {"bindings", "type_env", "container", "disable_check", "check_only",
                             "disable_macros", "typed_result", "any_eval_errors", "unknown", "any_unknowns"}:
                    continue
                name = f"{path.stem}/{section['name'][0][1:-1]}/{t['name'][0][1:-1]}"
                expr = _unescape(t["expr"][0]).decode()
                if "eval_error" in t:
                    out.append((name, expr, Exception))
                    continue
                value = expected_value(t["value"][0]) if "value" in t else True
                if value is not _NO:
                    out.append((name, expr, value))
    return out


# --- the engines -----------------------------------------------------------------------------

def engine_cpp() -> Callable[[str], Any]:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings
    env = cel.NewEnv(extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_bindings.ExtBindings(),
                                 ext_math.ExtMath(), ext_encoders.ExtEncoders()])

    def run(expr: str) -> Any:
        v = env.compile(expr).eval()
        if v.type() == cel.Type.ERROR:
            raise RuntimeError(v.value())
        return v.plain_value()
    return run


def engine_rust() -> Callable[[str], Any]:
    import cel  # common-expression-language
    return lambda expr: cel.evaluate(expr)


def engine_py() -> Callable[[str], Any]:
    import celpy
    from celpy import celtypes
    env = celpy.Environment()

    def run(expr: str) -> Any:
        v = env.program(env.compile(expr)).evaluate({})
        if isinstance(v, Exception):
            raise v
        return bool(v) if isinstance(v, celtypes.BoolType) else v     # BoolType subclasses int
    return run


ENGINES = {"cpp": ("cel-expr-python", engine_cpp), "rust": ("common-expression-language", engine_rust),
           "py": ("cel-python (celpy)", engine_py)}


def same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    if isinstance(want, bool) or isinstance(got, bool):
        return type(got) is bool and got == want
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return float(got) == float(want)
    if isinstance(want, bytes):
        return bytes(got) == want if isinstance(got, (bytes, bytearray)) else False
    if isinstance(want, str):
        return isinstance(got, str) and str(got) == want
    return got == want


def conformance(run: Callable[[str], Any], all_cases: list[tuple[str, str, Any]]) -> tuple[int, dict[str, int]]:
    passed = 0
    failed_by_file: dict[str, int] = {}
    for name, expr, want in all_cases:
        try:
            got = run(expr)
            ok = want is not Exception and same(got, want)
        except Exception:              # noqa: BLE001 (a compile or runtime error of the engine)
            ok = want is Exception
        except BaseException:          # a Rust panic surfaces as BaseException
            ok = False
        if ok:
            passed += 1
        else:
            f = name.split("/", 1)[0]
            failed_by_file[f] = failed_by_file.get(f, 0) + 1
    return passed, failed_by_file


# --- speed: typical admission expressions over a Deployment ----------------------------------

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "metadata": {"name": "d", "namespace": "default", "labels": {"app": "x", "tier": "web"}},
              "spec": {"replicas": 3, "template": {"spec": {"containers": [
                  {"name": f"c{i}", "image": f"nginx:{i}"} for i in range(5)]}}}}
EXPRESSIONS = ["object.spec.replicas <= 5",
               "has(object.metadata.labels) && 'app' in object.metadata.labels",
               "object.spec.template.spec.containers.all(c, c.image.startsWith('nginx'))",
               "object.spec.template.spec.containers.map(c, c.name).exists(n, n == 'c3')"]


def _per_call(f: Callable[[], Any], n: int) -> float:
    samples = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            f()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def _speed_one(engine: str, e: str) -> tuple[float, float]:
    """(compile µs, evaluate µs incl. handing the object over) for one expression."""
    if engine == "cpp":
        from cel_expr_python import cel
        env = cel.NewEnv(variables={"object": cel.Type.DYN})
        p = env.compile(e)
        return (_per_call(lambda: env.compile(e), 200),
                _per_call(lambda: p.eval(data={"object": DEPLOYMENT}), 2000))
    if engine == "rust":
        import cel as rcel
        rp = rcel.compile(e)
        ctx = {"object": DEPLOYMENT}
        return _per_call(lambda: rcel.compile(e), 200), _per_call(lambda: rp.execute(ctx), 2000)
    import celpy
    penv = celpy.Environment()
    pp = penv.program(penv.compile(e))
    return (_per_call(lambda: penv.program(penv.compile(e)), 50),
            _per_call(lambda: pp.evaluate({"object": celpy.json_to_cel(DEPLOYMENT)}), 300))


def speed(engine: str) -> list[tuple[str, float, float]]:
    return [(e, *_speed_one(engine, e)) for e in EXPRESSIONS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", type=pathlib.Path, required=True, help="cel-spec tests/simple/testdata")
    ap.add_argument("--engine", action="append", choices=list(ENGINES), help="default: every installed one")
    args = ap.parse_args()
    all_cases = cases(args.spec)
    print(f"{len(all_cases)} conformance cases from {args.spec}")
    for key in args.engine or list(ENGINES):
        label, make = ENGINES[key]
        try:
            run = make()
        except ImportError:
            print(f"\n{label}: not installed")
            continue
        passed, failed = conformance(run, all_cases)
        print(f"\n{label}: {passed}/{len(all_cases)} conformance cases pass "
              f"({100 * passed / len(all_cases):.1f} %); failures by file: "
              + ", ".join(f"{f} {n}" for f, n in sorted(failed.items(), key=lambda x: -x[1])))
        for e, c, ev in speed(key):
            print(f"  compile {c:7.1f} µs   evaluate {ev:7.1f} µs   {e}")


if __name__ == "__main__":
    main()
