"""kubeplane.testing's session start-up: how long the `kubeplane` fixture takes before a test runs.

Run:  .venv/bin/python benchmarks/testing_startup.py [--runs 5] [--nodes 1] [--no-controllers]

Each run is a fresh interpreter (as a test session is) that imports kubeplane.testing and times,
with time.perf_counter:
  import   `from kubeplane.testing import ControlPlane` (the API server, `up` and their imports:
           what the plugin defers until a test asks for a fixture)
  start    ControlPlane(...).start(): PKI, memory storage, bootstrap, HTTPS listening, the
           kubeconfig written, the CRD controller and the components started
  client   `import kubernetes`, an ApiClient on the kubeconfig (the kubeplane_client fixture) and
           a CoreV1Api
  first    the first request through it (list namespaces: TLS handshake included)
  stop     ControlPlane.stop()
and the figure is the median of each over --runs runs; "session" = import + start.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from kubeplane.testing import ControlPlane
t1 = time.perf_counter()
cp = ControlPlane(nodes={nodes}, controllers={controllers}).start()
t2 = time.perf_counter()
import kubernetes
client = cp.kubernetes_client()
core = kubernetes.client.CoreV1Api(client)
t3 = time.perf_counter()
core.list_namespace()
t4 = time.perf_counter()
client.close()
cp.stop()
t5 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "start": t2 - t1, "client": t3 - t2, "first": t4 - t3, "stop": t5 - t4}}))
"""


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--nodes", type=int, default=1)
    p.add_argument("--no-controllers", dest="controllers", action="store_false")
    args = p.parse_args()
    runs = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD.format(nodes=args.nodes, controllers=args.controllers)],
                             capture_output=True, text=True, check=True).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    for key in ("import", "start", "client", "first", "stop"):
        values = [r[key] for r in runs]
        print(f"{key:8} median {statistics.median(values) * 1000:7.1f} ms   "
              f"({', '.join(f'{v * 1000:.0f}' for v in values)})")
    session = [r["import"] + r["start"] for r in runs]
    print(f"session  median {statistics.median(session) * 1000:7.1f} ms   (import + start)")


if __name__ == "__main__":
    main()
