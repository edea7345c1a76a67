"""/openapi/v2: what the first request pays (build, protobuf, gzip) and what later ones cost.

Run:  .venv/bin/python benchmarks/openapi_v2_bench.py [--runs 5]

Each run is a fresh interpreter (the document is cached per process): it times importing the
module, building the JSON document with its ETag, the gzip copy, the protobuf form and its gzip
copy, then 2,000 cached requests through `serve()`. Prints the medians and the sizes.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = r'''
import json, time
t0 = time.perf_counter()
from kubeplane.apiserver import openapi_v2 as o
from kubeplane.apiserver.request import Request
t1 = time.perf_counter(); s = o.served()
t2 = time.perf_counter(); jg = s.body(o.JSON_TYPE, True)
t3 = time.perf_counter(); p = s.body(o.PROTOBUF_TYPE, False)
t4 = time.perf_counter(); pg = s.body(o.PROTOBUF_TYPE, True)
t5 = time.perf_counter()
req = Request.build("GET", "/openapi/v2", "", {"accept-encoding": "gzip"})
a = time.perf_counter()
for _ in range(2000):
    o.serve(req)
b = time.perf_counter()
print(json.dumps({"import_ms": 1e3 * (t1 - t0), "build_json_ms": 1e3 * (t2 - t1), "gzip_json_ms": 1e3 * (t3 - t2),
                  "protobuf_ms": 1e3 * (t4 - t3), "gzip_protobuf_ms": 1e3 * (t5 - t4),
                  "cached_request_us": 1e6 * (b - a) / 2000, "json_bytes": len(s.json), "json_gzip_bytes": len(jg),
                  "protobuf_bytes": len(p), "protobuf_gzip_bytes": len(pg)}))
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    runs = [json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(args.runs)]
    for key in runs[0]:
        values = [r[key] for r in runs]
        unit = "" if key.endswith("bytes") else f" (range {min(values):.1f}-{max(values):.1f})"
        print(f"{key:22} {statistics.median(values):10.1f}{unit}")


if __name__ == "__main__":
    main()
