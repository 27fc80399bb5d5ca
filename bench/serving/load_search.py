"""Load bench: N concurrent clients (default 16) for D seconds (default 60) against GET /search on loopback.

    python bench/serving/load_search.py                     # starts `brain serve` on a free port (BRAIN_HOME as set)
    python bench/serving/load_search.py --url http://127.0.0.1:8000

Each client is a thread with one keep-alive connection issuing requests back to back (a closed loop), so
the rate printed is the highest the server sustains at this concurrency. Prints requests/s, latency
p50/p90/p99/max over every request, and the error count (non-200 answers and connection failures).
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

from served import ROOT, free_port

# Questions a kernel engineer asks; each client walks the list from its own offset so requests differ.
QUERIES = [
    "variable scoping in dynamic control flow", "NameError acc_empty is not defined", "tmem allocation",
    "TMA descriptor prefetch", "scale factor layout for blockscaled mma", "mbarrier wait phase",
    "why is my kernel slow", "double buffering pipeline stages", "s2t copy of scale factors",
    "warp specialization producer consumer", "epilogue TMA store", "tile scheduler persistent",
    "group gemm tensormap update", "fp4 e2m1 decode", "speed of light gap analysis", "cute.gemm cooperative",
    "range_constexpr vs range", "register pressure spills", "tcgen05 mma instruction", "L2 cache eviction hint",
    "dual gemm silu fused epilogue", "how many pipeline stages fit in shared memory", "gemv warp reduction",
    "benchmark results microseconds", "accumulator staging", "split-k", "occupancy ctas per sm",
    "smem layout swizzle", "cluster shape 2x1", "what went wrong with the reverted attempt",
]


def percentile(sorted_ms: list[float], p: float) -> float:
    if not sorted_ms:
        return float("nan")
    i = min(len(sorted_ms) - 1, max(0, round(p / 100 * len(sorted_ms)) - 1))
    return sorted_ms[i]


def client(host: str, port: int, offset: int, stop: threading.Event, latencies: list[float], errors: list[str],
           repeat: bool, stamps: list[tuple[float, float]] | None = None):
    """Searches back to back until `stop`; `stamps` (if given) also gets (end time, ms) of each success."""
    conn = http.client.HTTPConnection(host, port, timeout=30)
    n = offset
    while not stop.is_set():
        q = QUERIES[n % len(QUERIES)]
        if not repeat:  # a query text never seen before: no cache anywhere can answer it
            q = f"{q} {QUERIES[(n * 7 + offset) % len(QUERIES)].split()[-1]} {offset}x{n}"
        n += 1
        path = "/search?" + urllib.parse.urlencode({"q": q, "k": 5})
        t0 = time.perf_counter()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            ms = (time.perf_counter() - t0) * 1000
            if resp.status != 200 or not json.loads(body).get("results"):
                errors.append(f"{resp.status}: {body[:120]!r}")
            else:
                latencies.append(ms)
                if stamps is not None:
                    stamps.append((time.perf_counter(), ms))
        except (OSError, http.client.HTTPException) as e:
            errors.append(f"{type(e).__name__}: {e}")
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.close()


def start_server(port: int) -> subprocess.Popen:
    """`brain serve` in a subprocess (it ingests the default corpora incrementally first)."""
    proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--port", str(port)], cwd=ROOT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=sys.stderr)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"brain serve exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("brain serve did not answer /health within 600 s")



def server(url: str | None, port: int | None = None) -> tuple[str, int, subprocess.Popen | None]:
    """(host, port, process) of the server to load: `url` when given, else a `brain serve` started here on
    `port` (default: a free one); the process is None for a server this script did not start."""
    if url:
        parsed = urllib.parse.urlparse(url)
        return parsed.hostname or "127.0.0.1", parsed.port or 80, None
    port = port or free_port()
    return "127.0.0.1", port, start_server(port)

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="a running server (default: start `brain serve` on a free port)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds of load before measuring")
    ap.add_argument("--repeat", action="store_true",
                    help="cycle through the fixed queries (repeats hit the query-embedding cache); default: "
                         "every request's text is new")
    args = ap.parse_args()

    host, port, proc = server(args.url)
    try:
        def run(seconds: float) -> tuple[list[float], list[str], float]:
            stop, latencies, errors = threading.Event(), [], []
            threads = [threading.Thread(target=client, args=(host, port, i * 7 + int(seconds * 1000), stop, latencies, errors, args.repeat))
                       for i in range(args.clients)]
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            time.sleep(seconds)
            stop.set()
            for t in threads:
                t.join()
            return latencies, errors, time.perf_counter() - t0

        if args.warmup > 0:
            run(args.warmup)
        latencies, errors, elapsed = run(args.seconds)
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)

    lat = sorted(latencies)
    kind = f"{len(QUERIES)} queries repeated" if args.repeat else "every query text new"
    print(f"load: {args.clients} clients x {args.seconds:.0f} s, GET /search (k=5, {kind}) on {host}:{port}")
    print(f"requests: {len(lat) + len(errors)}  ok: {len(lat)}  errors: {len(errors)}")
    print(f"throughput: {len(lat) / elapsed:.1f} req/s")
    print(f"latency ms: p50 {percentile(lat, 50):.1f}  p90 {percentile(lat, 90):.1f}  "
          f"p99 {percentile(lat, 99):.1f}  max {lat[-1] if lat else float('nan'):.1f}")
    for e in sorted(set(errors))[:5]:
        print(f"  error: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
