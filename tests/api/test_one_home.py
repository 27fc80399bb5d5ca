"""One embedded home, many clients: `brain serve --watch` runs, and beside it the CLI records, ingests and
searches while a file is edited. Every surface (HTTP, the CLI, the search page's requests) agrees, nothing
answers 5xx, a second writer is refused in one line, and once the server is killed -9 the CLI opens the index
itself again."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time

import httpx
import pytest

from brain.config import PROJECT_ROOT
from tests.api.conftest import free_port

RECORD = {"title": "split-K 1 -> 4 on the small-M gemm", "verdict": "regressed", "problem": "gemm",
          "techniques": ["split-k"], "figures": [{"label": "M=64", "before": 21.0, "after": 25.5, "unit": "us"}],
          "lesson": "split-K needs a reduction that costs more than it saves at M=64"}


def cli(home, *args, stdin=None):
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_API_KEY", "BRAIN_CHROMA_URL")}
    env.update(BRAIN_HOME=str(home), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env,
                          cwd=PROJECT_ROOT, input=stdin, timeout=300)


def wait_for(predicate, limit: float, what: str):
    deadline = time.monotonic() + limit
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {limit} s"
        time.sleep(0.2)


@pytest.fixture
def served(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "pipeline.md").write_text("# Pipeline\n\n## Stages 1 -> 3\n\n**Verdict:** regressed\n\n**Problem:** "
                                       "dual_gemm\n\n**Techniques:** pipeline\n\nThree stages made it 31% slower.\n")
    (notes / "tma.md").write_text("# TMA\n\nTMA loads the scale factors into shared memory.\n")
    home = tmp_path / "home"
    r = cli(home, "ingest", str(notes), "--corpus", "notes")  # another process: this one never opens the index
    assert r.returncode == 0, r.stderr
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_API_KEY", "BRAIN_CHROMA_URL")}
    env.update(BRAIN_HOME=str(home), HF_HUB_OFFLINE="1")
    log = (tmp_path / "serve.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--watch", "--no-ingest", "--port", str(port)],
                            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        assert proc.poll() is None, open(log.name).read()[-2000:]
        try:
            return httpx.get(f"{url}/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False
    try:
        wait_for(up, 180, "brain serve")
        with contextlib.suppress(AssertionError):  # it advertises itself a moment after it listens
            wait_for(lambda: (home / "server.json").exists(), 10, "the advertisement")
        yield home, notes, url, proc, log.name
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


def test_server_cli_and_watcher_share_one_home(served, tmp_path):
    home, notes, url, proc, log = served
    statuses = []

    def get(path, **params):
        r = httpx.get(url + path, params=params, timeout=60)
        statuses.append((path, r.status_code))
        assert r.status_code < 500, (path, r.text)
        return r

    assert get("/attempts").status_code == 200  # the server has read the records once: a stale view would show

    r = cli(home, "record", "-", stdin=json.dumps(RECORD))  # no API key: the local token stands in for it
    assert r.returncode == 0 and r.stdout.startswith("recorded "), r.stderr
    record_id = r.stdout.split()[1]
    http_attempts = get("/attempts", k=50).json()
    assert record_id in {x["id"] for x in http_attempts["results"]}
    r = cli(home, "attempts", "-k", "50", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == http_attempts
    assert get("/attempts/conflicts").status_code == 200

    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "tmem.md").write_text("# TMEM\n\nAllocate 512 tensor memory columns before the MMA.\n")
    r = cli(home, "ingest", str(extra), "--corpus", "extra")
    assert r.returncode == 0 and "through brain serve" in r.stderr and "1 changed" in r.stdout, r.stderr
    assert set(get("/stats").json()["corpora"]) == {"notes", "records", "extra"}

    (notes / "tma.md").write_text("# TMA\n\nTMA loads the scale factors into shared memory.\n\nzqxwatch: the "
                                  "multicast mask must name every CTA of the cluster.\n")
    wait_for(lambda: any("zqxwatch" in h["text"] for h in get("/search", q="zqxwatch multicast mask", k=1).json()["results"]),
             60, "the watcher's re-ingest")
    http_search = get("/search", q="zqxwatch multicast mask", k=3).json()
    r = cli(home, "search", "zqxwatch", "multicast", "mask", "-k", "3", "--json")
    assert r.returncode == 0, r.stderr
    cited = lambda p: [(h["corpus"], h["source"], h["start_line"], h["end_line"], h["text"]) for h in p["results"]]  # noqa: E731
    assert cited(json.loads(r.stdout)) == cited(http_search)

    for path, params in [("/stats", {}), ("/tags", {}), ("/patterns", {}),  # what the search page asks for
                         ("/search", {"q": "split-K small M", "k": 10}), ("/attempts", {"q": "split-K small M", "k": 3})]:
        assert get(path, **params).status_code == 200
    assert record_id in {x["id"] for x in get("/attempts", q="split-K small M", k=3).json()["results"]}
    r = httpx.post(url + "/attempts", json=RECORD)  # no key, no token: refused, not a server error
    statuses.append(("/attempts POST", r.status_code))
    assert r.status_code == 403

    from brain.owner import ADVERT_FILE
    advert = json.loads((home / ADVERT_FILE).read_text())
    assert stat.S_IMODE((home / ADVERT_FILE).stat().st_mode) == 0o600 and advert["pid"] == proc.pid
    r = cli(home, "watch")  # a second writer on the embedded home: one line saying what to do
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "brain serve --watch" in r.stderr
    assert all(status < 500 for _, status in statuses), statuses
    assert advert["token"] not in open(log).read()  # the token is never printed

    os.kill(proc.pid, signal.SIGKILL)  # a stale advertisement: the CLI detects it and opens the index itself
    proc.wait(30)
    r = cli(home, "record", "-", stdin=json.dumps({**RECORD, "title": "split-K 1 -> 2 on the small-M gemm"}))
    assert r.returncode == 0 and r.stdout.startswith("recorded "), r.stderr
    assert not (home / ADVERT_FILE).exists()
    r = cli(home, "attempts", "split-K", "-k", "5", "--json")
    titles = {x["title"] for x in json.loads(r.stdout)["results"]}
    assert {RECORD["title"], "split-K 1 -> 2 on the small-M gemm"} <= titles
