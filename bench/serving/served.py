"""A `brain serve` on a free loopback port and the `brain` command, for the serving benches (hostile.py and its
replays, load_search.py): each server gets its own BRAIN_HOME, the API key KEY and no network."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
KEY = "hostile-key"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(home: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BRAIN_")}
    return {**env, "BRAIN_HOME": str(home), "BRAIN_API_KEY": KEY, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "PYTHONPATH": str(ROOT), **{k: str(v) for k, v in extra.items()}}


def brain(args: list[str], env: dict, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


class Served:
    """`brain serve --no-ingest` on a free loopback port."""

    def __init__(self, env: dict):
        self.env, self.port = env, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "cli", "serve", "--no-ingest", "--host", "127.0.0.1",
                                      "--port", str(self.port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        while True:
            try:
                httpx.get(f"{self.url}/health", timeout=2)
                return
            except httpx.HTTPError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise SystemExit(f"brain serve did not come up on {self.url}")
                time.sleep(0.5)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
