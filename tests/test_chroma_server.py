"""The same code against a real `chroma run` server on loopback (how several API processes share an index)."""
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from brain.config import Settings
from brain.service import Brain
from tests.conftest import corpus

CHROMA = Path(sys.executable).with_name("chroma")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def chroma_server(tmp_path):
    exe = str(CHROMA) if CHROMA.exists() else shutil.which("chroma")
    if not exe:
        pytest.skip("the chroma CLI (from the chromadb package) is not installed")
    port = _free_port()
    proc = subprocess.Popen([exe, "run", "--path", str(tmp_path / "server"), "--host", "127.0.0.1",
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1)
            break
        except OSError:
            if time.time() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("chroma server did not come up")
            time.sleep(0.3)
    yield url
    proc.terminate()
    proc.wait(10)


def test_ingest_and_search_through_a_chroma_server(tmp_path, chroma_server, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text("# Rules\n\n## Scoping\nVariables defined inside `if` blocks cannot be used "
                                   "in other `if` blocks: NameError.\n\n## TMA\nTMA loads are issued by one warp.\n")
    writer = Brain(Settings(home=tmp_path / "w", chroma_url=chroma_server), embedder=embedder)
    summary = writer.ingest([corpus(docs)])
    assert summary.chunks_added == 2
    hit = writer.search("NameError in an if block", k=1)["results"][0]
    assert hit["section"] == "Rules › Scoping" and (hit["start_line"], hit["end_line"]) == (1, 4)
    # a second process (its own BRAIN_HOME) sees the same server-side index
    assert writer.store.stored_ids() == Brain(Settings(home=tmp_path / "r", chroma_url=chroma_server),
                                              embedder=embedder).store.stored_ids()


def test_unreachable_server_is_one_clear_error(tmp_path, embedder):
    from brain import BrainError
    brain = Brain(Settings(home=tmp_path, chroma_url=f"http://127.0.0.1:{_free_port()}"), embedder=embedder)
    with pytest.raises(BrainError, match="cannot open the Chroma store"):
        brain.ingest([corpus(tmp_path)])
