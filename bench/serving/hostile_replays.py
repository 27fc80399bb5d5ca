"""The findings of issue 30, each replayed against a served index by bench/serving/hostile.py (which counts
every request, 5xx and leak through its Tally). Each replay prints one verdict: did the fix hold."""
from __future__ import annotations

import json
import os
import socket
import stat
import time
from pathlib import Path

from brain import MAX_K
from served import KEY, Served, brain, env_for

W = {"X-API-Key": KEY}
RECORD = {"title": "pipeline stages 1 -> 3", "verdict": "regressed", "problem": "gemm", "techniques": ["pipeline"]}
DEEP_PY = "x = " + "+".join(["a"] * 50_000) + "\n"
ALIAS_BOMB = "---\na: &a [" + ", ".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9)}]\n" for p, n in zip("abcdef", "bcdefg")) + "title: *g\n---\nbody\n"


def mcp(t, url: str, tool: str, arguments: dict) -> str:
    r = t.ask("POST", f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                          "params": {"name": tool, "arguments": arguments}},
              headers={"Accept": "application/json, text/event-stream"})
    return r.text


def record(t, url: str, body, to: str | None = None, label: str = "local"):
    raw = isinstance(body, str)  # a JSON text Python's json would not write (a lone surrogate's escape)
    r = t.ask("POST", f"{url}/attempts", params={"to": to} if to else None,
              headers={**W, "Content-Type": "application/json"} if raw else W,
              **({"content": body} if raw else {"json": body}))
    if r.status_code == 201:
        t.acked.append((label, r.json()["id"]))
    return r


def refused_text(t, url: str, home: Path, tmp: Path) -> None:
    """2, 3: NUL, control characters, lone surrogates: refused naming the field; later records are found."""
    r = record(t, url, {**RECORD, "title": "nul\u0000title"})
    bad = [record(t, url, '{"title": "x", "verdict": "neutral", "lesson": "lone \\ud800"}'),
           record(t, url, {**RECORD, "change": "esc \x1b[31m"}), record(t, url, '{"\\udfff": 1}')]
    later = record(t, url, {**RECORD, "title": "after the refused ones"})
    found = t.ask("GET", f"{url}/attempts", params={"q": "after the refused ones", "k": 1}).json()["results"]
    tmps = [p.name for p in (home / "records").rglob("*.tmp")] if (home / "records").exists() else []
    t.verdict("NUL / control / surrogate refused, later records found",
              r.status_code == 400 and "'title'" in r.json()["error"] and all(b.status_code == 400 for b in bad)
              and later.status_code == 201 and found and found[0]["id"] == later.json()["id"] and not tmps)


def parser_failures(t, url: str, home: Path, tmp: Path) -> None:
    """4, 9: parser failures and alias bombs are the file's failure."""
    t0 = time.monotonic()
    answers = [t.ask("POST", f"{url}/documents", headers=W, files={"file": (name, data)}).status_code
               for name, data in (("deep.py", DEEP_PY), ("deep.ipynb", "[" * 100_000), ("bomb.md", ALIAS_BOMB))]
    t.verdict("deep nesting and alias bombs refused by name", answers == [400, 400, 400],
              f"{answers} in {time.monotonic() - t0:.1f} s")


def chunk_limit(t, url: str, home: Path, tmp: Path) -> None:
    """13: chunks stay within 2,000 characters however many headings."""
    heads = "\n".join(f"# heading {i}" for i in range(20_000))
    up = t.ask("POST", f"{url}/documents", headers=W, files={"file": ("heads.md", heads)}, data={"corpus": "up"})
    hits = t.ask("GET", f"{url}/search", params={"q": "heading 19999", "corpus": "up", "k": 50,
                                                 "mode": "bm25"}).json()["results"]
    worst = max((len(h["text"]) for h in hits if "\n" in h["text"]), default=0)
    t.verdict("20,000 headings: no chunk over 2,000 characters", up.status_code == 201 and hits and worst <= 2000,
              f"longest {worst}")


def read_back(t, url: str, home: Path, tmp: Path) -> None:
    """12, 15: what is written reads back the same, the answer's lines are those a read reports, a retry adds
    nothing."""
    same = []
    for field, value in (("lesson", "~~~"), ("title", "<b> first"), ("hypothesis", '">quoted'),
                         ("title", "🚀 faster"), ("change", "**num_stages** = `3`")):
        out = record(t, url, {**RECORD, field: value}, to="log.md").json()
        got = [x for x in t.ask("GET", f"{url}/attempts", params={"include_superseded": "true", "k": MAX_K}).json()[
            "results"] if x["id"] == out["id"]]
        same.append("changed" not in out and got and got[0][field] == value
                    and (got[0]["start_line"], got[0]["end_line"]) == (out["start_line"], out["end_line"]))
    again = record(t, url, {**RECORD, "lesson": "~~~"}, to="log.md").json()
    t.verdict("written records read back as written, lines agree, a retry adds nothing",
              all(same) and again.get("existed"), f"{sum(map(bool, same))}/5 the same")


def corrupt_manifest(t, url: str, home: Path, tmp: Path) -> None:
    """5: no server path in any answer (the Tally checks every body), even with a corrupt manifest."""
    manifest = home / "manifest.json"
    good = manifest.read_text()
    manifest.write_text("{not json")
    try:
        codes = [t.ask("GET", f"{url}{p}").status_code for p in ("/health", "/search?q=tma", "/stats", "/sources")]
        text = mcp(t, url, "search", {"query": "tma"})
        t.check("MCP search (corrupt manifest)", 200, text.encode())
    finally:
        manifest.write_text(good)
    t.verdict("a corrupt manifest: 503 naming no path (HTTP and MCP)", codes == [503] * 4 and "corrupt" in text)


def links(t, url: str, home: Path, tmp: Path) -> None:
    """6: write-back never follows a link out of the records folder."""
    secret = tmp / "secret.md"
    secret.write_text("# secret\n\nnot for readers\n")
    (home / "records").mkdir(exist_ok=True)
    os.symlink(secret, home / "records" / "evil.md")
    r = record(t, url, RECORD, to="evil.md")
    read = t.ask("GET", f"{url}/sources/records/evil.md")
    t.verdict("a link in the records folder is refused",
              r.status_code == 400 and "not for readers" not in read.text and secret.read_text().startswith("# secret"))


def corpus_names(t, url: str, home: Path, tmp: Path) -> None:
    """7: upload corpora and folder corpora cannot share a name."""
    codes = [t.ask("POST", f"{url}/documents", headers=W, files={"file": ("n.md", "# N\n\ntext\n")},
                   data={"corpus": c}).status_code for c in ("docs_corpus", "records", "notes")]
    t.verdict("uploads cannot take a folder corpus's or the records' name", codes == [400, 400, 400], str(codes))


def kernel_shapes(t, url: str, home: Path, tmp: Path) -> None:
    """10: kernel runs: the shape cap."""
    r = t.ask("POST", f"{url}/kernels/gemv/run", headers=W,
              json={"backend": "torch", "device": "cpu", "shapes": [{"m": 128, "k": 256, "l": 1}] * 17})
    t.verdict("17 kernel shapes refused", r.status_code in (400, 422), str(r.status_code))


def smaller(t, url: str, home: Path, tmp: Path) -> None:
    """16: smaller points."""
    files = [p for p in (home / "records").iterdir() if p.is_file() and not p.is_symlink()]
    checks = {
        "HEAD /health": t.ask("HEAD", f"{url}/health").status_code == 200,
        "OPTIONS /mcp": t.ask("OPTIONS", f"{url}/mcp").status_code == 204,
        "OPTIONS /static": t.ask("OPTIONS", f"{url}/static/app.js").status_code == 204,
        "414 in OpenAPI": all("414" in op["responses"] for ops in t.ask("GET", f"{url}/openapi.json").json()[
            "paths"].values() for op in ops.values()),
        "k true is 422": t.ask("POST", f"{url}/search", json={"q": "tma", "k": True}).status_code == 422,
        "MCP echo": "SECRET" not in mcp(t, url, "search", {"query": "x", "k": "SECRET"}),
        "file mode": all(stat.S_IMODE(p.stat().st_mode) != 0o600 for p in files),
    }
    t.verdict("HEAD, OPTIONS, 414 documented, strict k, no MCP echo, file modes", all(checks.values()),
              ", ".join(k for k, v in checks.items() if not v))


BAD_BODIES = ['{"q":"tmem","k":1e309}', '{"q":"tmem","k":NaN}', '{"q":"\\ud800"}', '{"error":"\\ud800x"}',
              b"\xff\xfe\x00garbage", "[" * 50_000, '{"q":"x","k":' + "9" * 5000 + "}", '{"q":"x"}garbage',
              '{"title":"\\u0000","verdict":"neutral"}', '{"title":"t","verdict":"neutral","figures":[' + "[" * 20_000 + "]}",
              '{"backend":"torch","shapes":[' + ",".join(['{"m":128,"k":256}'] * 40) + "]}", "null", '"text"', "1"]
BAD_URLS = ["/sources/..%2F..%2Fetc%2Fpasswd", "/sources/%00", "/search?q=%ED%A0%80", "/search?q=%00%1b",
            "/sources/records/..%2Fmanifest.json", "/attempts?k=true", "/context?q=x&budget_tokens=1e9",
            "/documents/records/../../manifest.json", "/search?q=" + "%F0%9F%9A%80" * 500, "/kernels/..%2F/run"]


def malformed(t, url: str) -> None:
    """Bodies no route can take and URLs that reach for files outside the index: each a 4xx, none a 5xx."""
    codes = []
    for path in ("/search", "/pitfalls", "/attempts", "/kernels/gemv/run", "/mcp"):
        for body in BAD_BODIES:
            codes.append(t.ask("POST", f"{url}{path}", content=body, headers={**W, "Content-Type": "application/json",
                               "Accept": "application/json, text/event-stream"}).status_code)
    for u in BAD_URLS:
        for method in ("GET", "DELETE"):
            codes.append(t.ask(method, f"{url}{u}", headers=W).status_code)
    t.verdict("malformed bodies and URLs answer 4xx", all(c < 500 for c in codes), f"{len(codes)} requests")


# the file that overflowed the parser last: on the code before the fix it took the whole server down
LOCAL = [refused_text, read_back, chunk_limit, corrupt_manifest, links, corpus_names, kernel_shapes, smaller,
         parser_failures]


def _read_all(sock: socket.socket, wait: float) -> bytes:
    """What the server sends within `wait` seconds (or until it closes the connection)."""
    deadline, data = time.monotonic() + wait, b""
    try:
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except (socket.timeout, ConnectionError):
        pass
    return data


def connections(t, url: str) -> None:
    """14: slow headers time out, connections beyond the cap are refused, no idle MCP stream can be held."""
    host, port = "127.0.0.1", int(url.rsplit(":", 1)[1])
    t0 = time.monotonic()
    with socket.create_connection((host, port)) as slow:
        slow.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        answer = _read_all(slow, 20)
    t.check("slow headers", int(answer[9:12] or 0), answer)
    t.verdict("an incomplete header is closed", answer.startswith(b"HTTP/1.1 408"), f"after {time.monotonic() - t0:.1f} s")
    held, refused = [], 0
    for _ in range(600):
        held.append(socket.create_connection((host, port)))
    time.sleep(1.0)
    for s in held:
        s.setblocking(False)
        try:
            refused += s.recv(64).startswith(b"HTTP/1.1 503")
        except BlockingIOError:
            pass
        s.close()
    t.requests += len(held)
    time.sleep(1.0)
    ok = t.ask("GET", f"{url}/health").status_code == 200
    t.verdict("600 idle connections: those over 512 refused, the server recovers", refused >= 80 and ok,
              f"{refused} refused")
    with socket.create_connection((host, port)) as stream:  # raw: an open SSE stream would never end a read
        stream.sendall(f"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: text/event-stream\r\n\r\n".encode())
        answer = _read_all(stream, 3)
    t.check("GET /mcp", int(answer[9:12] or 0), answer)
    t.verdict("GET /mcp holds no stream", answer.startswith(b"HTTP/1.1 405"), answer[:12].decode(errors="replace"))


def read_back_acked(t, url: str, label: str) -> None:
    """Every record acknowledged under `label` is read back exactly once (through another host: within 5 s)."""
    mine = [i for lab, i in t.acked if lab == label]
    deadline = time.monotonic() + 5
    while True:
        got = [r["id"] for r in t.ask("GET", f"{url}/attempts", params={"include_superseded": "true",
                                                                         "k": MAX_K}).json()["results"]]
        lost = [i for i in set(mine) if got.count(i) != 1]
        if not lost or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    t.lost += [f"{label} {i}" for i in lost]
    t.verdict(f"{label}: every acknowledged record read back once", not lost, f"{len(set(mine))} records")


def team(t, chroma_url: str, tmp: Path, chroma) -> None:
    """1, 8: an index named like another's side collection touches nothing; records write through any host."""
    team_env = dict(BRAIN_CHROMA_URL=chroma_url, BRAIN_INDEX="victim")
    ok = brain(["ingest", str(tmp / "notes"), "--corpus", "notes", "--quiet", "--json"],
               env_for(tmp / "h-v", **team_env))
    before = json.loads(ok.stdout)["chunks_added"] if ok.returncode == 0 else -1
    for name in ("victim-meta", "victim-uploads"):
        bad = brain(["ingest", str(tmp / "notes"), "--quiet"], env_for(tmp / "h-x", **{**team_env, "BRAIN_INDEX": name}))
        t.check(f"BRAIN_INDEX={name} brain ingest", 400 if bad.returncode == 2 else 500,
                (bad.stdout + bad.stderr).encode(), local=True)
    after = brain(["stats", "--json"], env_for(tmp / "h-v2", **team_env))
    chunks = json.loads(after.stdout)["chunks"] if after.returncode == 0 else -2
    t.verdict("an index named victim-meta or victim-uploads is refused; victim keeps its chunks",
              before > 0 and chunks == before, f"{before} -> {chunks}")
    hosts = [Served(env_for(tmp / f"h{n}", **team_env)) for n in range(2)]
    try:
        codes = [record(t, hosts[n % 2].url, {**RECORD, "title": f"team record {n}"}, label="team").status_code
                 for n in range(9)]
        t.verdict("9 records through two hosts of one index", codes == [201] * 9, str(codes))
        for h in hosts:
            read_back_acked(t, h.url, "team")
        chroma.kill()
        chroma.wait()
        served = t.ask("GET", f"{hosts[0].url}/search", params={"q": "stages", "mode": "bm25"}).status_code
        codes = [record(t, hosts[0].url, {**RECORD, "title": "while Chroma is gone"}, label="gone").status_code,
                 t.ask("POST", f"{hosts[1].url}/documents", headers=W,
                       files={"file": ("n.md", "# N\n\ntext\n")}).status_code]
        t.verdict("Chroma gone: 503s naming no URL (the Tally checks each body)",
                  served == 503 and codes == [503, 503], f"search {served}, writes {codes}")
    finally:
        for h in hosts:
            h.stop()
