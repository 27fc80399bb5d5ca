"""One owner of an embedded index: a second process that needs its Chroma is refused in one line naming the
owner, reads of the snapshot file stay open to all, a dead owner's lock and advertisement are detected."""
import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from brain import owner
from brain.config import PROJECT_ROOT, CorpusSpec, Settings

HOLD = """
import sys, time
from brain import owner
owner.claim(sys.argv[1], "brain watch")
print("held", flush=True)
time.sleep(600)
"""


def run_cli(home, *args, stdin=None):
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_API_KEY", "BRAIN_CHROMA_URL")}
    env.update(BRAIN_HOME=str(home), HF_HUB_OFFLINE="1")
    return subprocess.run([sys.executable, "-m", "cli", *args], capture_output=True, text=True, env=env,
                          cwd=PROJECT_ROOT, input=stdin, timeout=300)


@pytest.fixture
def held(tmp_path, embedder):
    """An index of one small corpus, and another process holding it (as `brain watch` does)."""
    from brain.service import Brain
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nTMA loads the scale factors into shared memory.\n")
    home = tmp_path / "home"
    brain = Brain(Settings(home=home), embedder=embedder)
    brain.ingest([CorpusSpec("docs", docs)])
    brain.close()
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(home)], stdout=subprocess.PIPE, text=True,
                            cwd=PROJECT_ROOT)
    assert proc.stdout.readline().strip() == "held"
    yield home, docs, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)


def test_a_second_writer_is_refused_in_one_line_and_reads_stay_open(held):
    home, docs, proc = held
    (docs / "b.md").write_text("# B\n\nThree pipeline stages made the dual gemm slower.\n")
    r = run_cli(home, "ingest", str(docs), "--corpus", "docs")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith(f"error: the index at {home.resolve()} is open in another process: brain watch "
                               f"(pid {proc.pid})") and "brain serve" in r.stderr
    r = run_cli(home, "record", "-", stdin='{"title": "x", "verdict": "failed"}')
    assert r.returncode == 2 and "open in another process" in r.stderr
    r = run_cli(home, "search", "TMA", "scale", "factors", "--json")  # the snapshot file: no Chroma needed
    assert r.returncode == 0 and json.loads(r.stdout)["results"][0]["source"] == "a.md"
    assert len(json.loads(run_cli(home, "sources", "--json").stdout)) == 1

    proc.send_signal(signal.SIGKILL)  # the OS drops a dead owner's lock: the next writer goes ahead
    proc.wait(30)
    r = run_cli(home, "ingest", str(docs), "--corpus", "docs")
    assert r.returncode == 0 and "1 changed" in r.stdout, r.stderr


def test_claims_count_within_a_process_and_the_last_release_lets_go(tmp_path):
    home = tmp_path / "h"
    owner.claim(home, "test")
    owner.claim(home, "test")
    owner.release(home)
    assert owner.holds(home)
    code = f"from brain import owner\ntry:\n    owner.claim({str(home)!r})\nexcept owner.Owned as e:\n    print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT).stdout
    assert f"open in another process: test (pid {os.getpid()})" in out
    owner.release(home)
    assert not owner.holds(home) and owner.holder(home) is None
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT_ROOT).stdout
    assert out == ""


def test_a_stale_advertisement_is_ignored_and_removed_by_the_next_owner(tmp_path):
    from cli.remote import find_server
    home = tmp_path / "h"
    home.mkdir()
    owner.advertise(home, "http://127.0.0.1:9", "secret")
    assert stat.S_IMODE((home / owner.ADVERT_FILE).stat().st_mode) == 0o600
    settings = Settings(home=home)
    t0 = time.monotonic()
    assert owner.read_advert(home)["pid"] == os.getpid()  # a live pid, but nothing answers there
    assert find_server(settings) is None and time.monotonic() - t0 < 5
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    advert = json.loads((home / owner.ADVERT_FILE).read_text())
    (home / owner.ADVERT_FILE).write_text(json.dumps({**advert, "pid": dead.pid}))
    assert owner.read_advert(home) is None  # killed -9 long ago
    owner.claim(home, "test")
    try:
        assert not (home / owner.ADVERT_FILE).exists()
    finally:
        owner.release(home)
