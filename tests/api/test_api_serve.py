"""`brain serve` as a user runs it: a subprocess on a free port (here on the test index, --no-ingest)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import httpx

from brain.config import PROJECT_ROOT


def test_brain_serve_answers(api_brain, api_settings, tmp_path):
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api_brain.close()  # the embedded index takes one owner: this test process lets go (and reopens it later)
    env = {**os.environ, "BRAIN_HOME": str(api_settings.home), "HF_HUB_OFFLINE": "1", "BRAIN_API_KEY": ""}
    log = (tmp_path / "serve.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--no-ingest", "--port", str(port)],
                            cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"brain serve exited: {open(log.name).read()[-2000:]}"
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "brain serve did not come up in 90 s"
            time.sleep(0.3)
        r = httpx.get(f"{url}/search", params={"q": "variable scoping in dynamic control flow", "k": 1}).json()
        assert r["results"][0]["source"] == "000_51fd70c217354f0e.txt"
        r = httpx.post(f"{url}/documents", files={"file": ("x.md", b"# x\ntext\n")}, headers={"X-API-Key": "k"})
        assert r.status_code == 403  # no key configured: writes refused with a message
        assert "BRAIN_API_KEY" in r.json()["error"]
        assert httpx.get(url + "/").status_code == 200
    finally:
        proc.terminate()
        proc.wait(30)
    out = open(log.name).read()
    assert f"serving http://127.0.0.1:{port}/" in out and "writes" in out and "Traceback" not in out
