"""Reads under writes: 8 search clients for 60 s while 20 uploads and 10 deletes run through the same server.

    BRAIN_HOME=/tmp/x python bench/serving/load_writes.py          # starts `brain serve` on a free port (ingests first)
    python bench/serving/load_writes.py --url http://127.0.0.1:8000 --key KEY

Search clients are closed loops (one keep-alive connection each, every query text new, as in
bench/serving/load_search.py). First `--quiet` seconds of searches alone (the reference on this machine, now), then
the measured run: one writer uploads generated worklogs (real worklog paragraphs, about 15 chunks each) and
deletes half of them again, spread evenly over it. Prints search p50/p99 without writes, over the whole run
with writes and over the moments a write was in flight, the error count, and each kind of write's time.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_search import client, percentile, server  # noqa: E402
from synthetic import write_corpus  # noqa: E402


def multipart(name: str, data: bytes, corpus: str) -> tuple[bytes, str]:
    b = uuid.uuid4().hex
    body = (f"--{b}\r\nContent-Disposition: form-data; name=\"corpus\"\r\n\r\n{corpus}\r\n"
            f"--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: text/markdown\r\n\r\n").encode() + data + f"\r\n--{b}--\r\n".encode()
    return body, f"multipart/form-data; boundary={b}"


def writer(host: str, port: int, key: str, files: list[Path], deletes: int, seconds: float,
           log: list[tuple[str, float, float, int]], errors: list[str]) -> None:
    """Uploads every file, deleting one of the earlier uploads after every second upload, evenly spaced."""
    plan = []
    for n, f in enumerate(files):
        plan.append(("upload", f))
        if n % 2 == 1 and sum(1 for k, _ in plan if k == "delete") < deletes:
            plan.append(("delete", files[n - 1]))
    gap = seconds / (len(plan) + 1)
    conn = http.client.HTTPConnection(host, port, timeout=120)
    start = time.perf_counter()
    for i, (kind, f) in enumerate(plan):
        time.sleep(max(0.0, start + gap * (i + 1) - time.perf_counter()))
        t0 = time.perf_counter()
        if kind == "upload":
            body, ctype = multipart(f.name, f.read_bytes(), "bench-writes")
            conn.request("POST", "/documents", body, {"Content-Type": ctype, "X-API-Key": key})
        else:
            conn.request("DELETE", f"/documents/bench-writes/{f.name}", headers={"X-API-Key": key})
        resp = conn.getresponse()
        text = resp.read()
        t1 = time.perf_counter()
        if resp.status not in (200, 201):
            errors.append(f"{kind} {f.name}: {resp.status} {text[:200]!r}")
        log.append((kind, t0, t1, json.loads(text).get("chunks_added", 0) if resp.status in (200, 201) else 0))
    conn.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="a running server (default: start `brain serve` on a free port)")
    ap.add_argument("--key", default=os.environ.get("BRAIN_API_KEY") or "bench-key")
    ap.add_argument("--port", type=int, help="port for the server this script starts (default: a free one)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--uploads", type=int, default=20)
    ap.add_argument("--deletes", type=int, default=10)
    ap.add_argument("--quiet", type=float, default=20.0, help="seconds of searches without writes first")
    args = ap.parse_args()

    if not args.url:
        os.environ["BRAIN_API_KEY"] = args.key  # the server started here takes writes with this key
    host, port, proc = server(args.url, args.port)
    tmp = Path(tempfile.mkdtemp(prefix="load-writes-"))
    files = sorted(write_corpus(tmp, args.uploads, sections_per_file=8, seed=int(time.time())).glob("*.md"))
    try:
        # clear leftovers of an earlier run (same names), then measure
        for f in files:
            c = http.client.HTTPConnection(host, port, timeout=60)
            c.request("DELETE", f"/documents/bench-writes/{f.name}", headers={"X-API-Key": args.key})
            c.getresponse().read()
        quiet: list[tuple[float, float]] = []
        if args.quiet > 0:
            qstop, qerrors = threading.Event(), []
            qthreads = [threading.Thread(target=client, args=(host, port, i * 5 + 3, qstop, [], qerrors, False),
                                         kwargs={"stamps": quiet}) for i in range(args.clients)]
            for t in qthreads:
                t.start()
            time.sleep(args.quiet)
            qstop.set()
            for t in qthreads:
                t.join()
        stop, errors, wlog, werrors = threading.Event(), [], [], []
        stamped: list[tuple[float, float]] = []  # (end time, ms) of each search, to split by write activity

        def timed_client(offset: int) -> None:
            mine: list[float] = []
            client(host, port, offset, stop, mine, errors, False, stamps=stamped)

        threads = [threading.Thread(target=timed_client, args=(i * 7 + 1,)) for i in range(args.clients)]
        w = threading.Thread(target=writer, args=(host, port, args.key, files, args.deletes, args.seconds, wlog,
                                                   werrors))
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        w.start()
        time.sleep(args.seconds)
        w.join()
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t0
    finally:
        if proc:
            proc.terminate()
            proc.wait(30)

    lat = sorted(ms for _, ms in stamped)
    alone = sorted(ms for _, ms in quiet)
    busy = sorted(ms for end, ms in stamped
                  if any(a <= end and end - ms / 1000 <= b for _, a, b, _ in wlog))
    print(f"load: {args.clients} search clients x {args.seconds:.0f} s (GET /search, k=5, every query new) "
          f"with {sum(k == 'upload' for k, *_ in wlog)} uploads + {sum(k == 'delete' for k, *_ in wlog)} deletes "
          f"on {host}:{port}")
    print(f"searches: {len(lat)} ok, {len(errors)} errors, {len(lat) / elapsed:.1f} req/s")
    if alone:
        print(f"search ms, no writes ({args.quiet:.0f} s before): p50 {percentile(alone, 50):.1f}  "
              f"p99 {percentile(alone, 99):.1f}")
    print(f"search ms, whole run: p50 {percentile(lat, 50):.1f}  p99 {percentile(lat, 99):.1f}  "
          f"max {lat[-1] if lat else float('nan'):.1f}")
    print(f"search ms, overlapping a write ({len(busy)}): p50 {percentile(busy, 50):.1f}  "
          f"p99 {percentile(busy, 99):.1f}")
    for kind in ("upload", "delete"):
        t = sorted((b - a) * 1000 for k, a, b, _ in wlog if k == kind)
        if t:
            print(f"{kind} ms ({len(t)}): min {t[0]:.0f}  p50 {percentile(t, 50):.0f}  max {t[-1]:.0f}")
    print(f"write errors: {len(werrors)}")
    for e in (sorted(set(errors)) + werrors)[:5]:
        print(f"  error: {e}")
    return 1 if errors or werrors else 0


if __name__ == "__main__":
    sys.exit(main())
