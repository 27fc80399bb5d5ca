"""GET /kernels/{problem}/history (and /compare) and the kernel_history MCP tool: the run log that
`brain kernels run --record` writes, read only, on a home of their own."""
from __future__ import annotations

import anyio
import pytest
from mcp import Client

from brain.config import Settings
from brain.runs import RunLog

KEY = "history-key"


def _run(run_id, times, record, ok=True):
    return {"id": run_id, "time": 1700000000 + int(run_id[4:]), "problem": "dual_gemm",
            "backend": "submission.py:custom_kernel", "title": f"dual attempt {run_id}", "ok": ok,
            "verdict": "inconclusive" if run_id == "run-1" else "improved",
            "kernel": {"path": "/home/someone/secret/submission.py", "function": "custom_kernel",
                       "sha256": run_id[-1] * 64},
            "scope": {"device": "NVIDIA H100 80GB HBM3", "capability": "9.0", "torch": "2.7.0", "cute_dsl": "4.2.1"},
            "record": record, "shapes": [{"shape": "m=256,n=4096,k=7168,l=1", "ok": ok, "us": times[0], "spread": 0.01},
                                         {"shape": "m=512,n=4096,k=7168,l=1", "ok": ok, "us": times[1], "spread": 0.01}]}


@pytest.fixture(scope="module")
def setup(tmp_path_factory, embedder, live_server_factory):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from brain.service import Brain
    home = tmp_path_factory.mktemp("history_home")
    log = RunLog(home)
    for n, times in enumerate(((60.0, 100.0), (57.0, 97.0), (50.0, 90.0)), 1):
        log.add(lambda rid, times=times, n=n: _run(rid, times, f"{n:016x}"))
    settings = Settings(home=home, api_key=KEY)
    brain = Brain(settings, embedder=embedder)
    with TestClient(create_app(settings, brain=brain), raise_server_exceptions=False) as client, \
            live_server_factory(settings, brain) as live:
        yield client, live


def test_history_route_reads_the_run_log_without_paths(setup):
    client, _ = setup
    r = client.get("/kernels/dual_gemm/history", params={"k": 2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["total"] == 3 and [x["id"] for x in body["runs"]] == ["run-3", "run-2"]
    assert body["runs"][0]["kernel"]["path"] == "submission.py" and "secret" not in r.text
    best = client.get("/kernels/dual_gemm/history", params={"order": "best"}).json()
    assert [x["id"] for x in best["runs"]] == ["run-3", "run-2", "run-1"]
    assert client.get("/kernels/dual_gemm/history", params={"device": "B200"}).json()["total"] == 0
    r = client.get("/kernels/dual_gemm/history/compare", params={"a": "run-1", "b": "last"})
    assert r.status_code == 200 and r.json()["verdict"] == "improved" and len(r.json()["shapes"]) == 2
    for path, params, status, needle in (("/kernels/conv/history", {}, 404, "unknown problem 'conv'"),
                                         ("/kernels/dual_gemm/history/compare", {"a": "run-9", "b": "run-1"}, 404,
                                          "run-9"),
                                         ("/kernels/dual_gemm/history", {"order": "worst"}, 422, "order")):
        r = client.get(path, params=params)
        assert r.status_code == status and needle in r.json()["error"], r.text
    assert client.post("/kernels/dual_gemm/history").status_code == 405  # read only


def test_mcp_kernel_history_answers_the_last_three_changes(setup):
    _, live = setup

    async def main():
        with anyio.fail_after(60):
            async with Client(f"{live.url}/mcp") as client:
                r = await client.call_tool("kernel_history", {"problem": "dual_gemm", "k": 3})
                text = r.content[0].text
                assert not r.is_error and text.index("run-3") < text.index("run-2") < text.index("run-1")
                assert "dual attempt run-2" in text and "m=512,n=4096,k=7168,l=1" in text and "secret" not in text
                r = await client.call_tool("kernel_history", {"problem": "dual_gemm", "compare": ["prev", "last"]})
                assert not r.is_error and "run-2 -> run-3" in r.content[0].text and "improved" in r.content[0].text
                r = await client.call_tool("kernel_history", {"problem": "conv"})
                assert r.is_error and "unknown problem" in r.content[0].text
    anyio.run(main)
