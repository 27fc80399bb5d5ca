"""API fixtures: ONE small index per session (docs_corpus + a small marked kernel file), one app on it,
and one uvicorn on a free loopback port for the tests that need a real socket (MCP over HTTP, browser)."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from brain.config import PROJECT_ROOT, CorpusSpec, Settings

SHIPPED = PROJECT_ROOT / "docs_corpus"

API_KEY = "test-key-123"

# A kernel-like file with explicit pattern markers, so /snippets and the MCP snippet tool have something
# stable to find (the real kernels/ folder changes while the project grows, and is slow to embed).
SAMPLE_KERNEL = '''"""Sample CuTe DSL kernel fragments for the API tests."""
import cutlass
import cutlass.cute as cute


@cute.kernel
def sample_kernel(tma_atom_a, mA, sA, tmem_holder):
    warp_idx = cute.arch.warp_idx()
    # pattern: tmem-alloc
    tmem_ptr = tmem_holder.allocate(512)  # allocate tensor memory columns for the accumulator
    tmem_holder.relinquish_alloc_permit()
    # end pattern
    # pattern: tma-load
    if warp_idx == 0:
        tAsA, tAgA = cute.nvgpu.cpasync.tma_partition(tma_atom_a, 0, cute.make_layout(1), sA, mA)
        cute.copy(tma_atom_a, tAgA, tAsA, tma_bar_ptr=None)
    # end pattern
    return tmem_ptr
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def api_settings(tmp_path_factory) -> Settings:
    return Settings(home=tmp_path_factory.mktemp("api_home"), api_key=API_KEY)


@pytest.fixture(scope="session")
def key_header(api_settings) -> dict:
    return {"X-API-Key": api_settings.api_key}


@pytest.fixture(scope="session")
def kernel_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("sample_kernels")
    (d / "sample_kernel.py").write_text(SAMPLE_KERNEL)
    return d


@pytest.fixture(scope="session")
def api_brain(api_settings, embedder, kernel_dir):
    from brain.service import Brain
    brain = Brain(api_settings, embedder=embedder)
    brain.ingest([CorpusSpec("docs_corpus", SHIPPED), CorpusSpec("sample_kernels", kernel_dir)])
    return brain


@pytest.fixture(scope="session")
def client(api_settings, api_brain):
    """TestClient on the shared index (its lifespan runs once: the MCP session manager allows one run)."""
    from fastapi.testclient import TestClient

    from api.app import create_app
    with TestClient(create_app(api_settings, brain=api_brain), raise_server_exceptions=False) as c:
        yield c


class LiveServer:
    """uvicorn in a thread on a free loopback port."""

    def __init__(self, app):
        import uvicorn
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="session")
def live_server_factory():
    """live_server_factory(settings, brain) -> a LiveServer context on a new app for that Brain."""
    from api.app import create_app
    return lambda settings, brain: LiveServer(create_app(settings, brain=brain))


@pytest.fixture(scope="session")
def live_server(api_settings, api_brain, live_server_factory):
    with live_server_factory(api_settings, api_brain) as s:
        yield s
