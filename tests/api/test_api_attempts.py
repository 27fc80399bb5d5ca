"""GET/POST /attempts, GET /attempts/conflicts and the MCP tools find_attempts / record_attempt, end to end on
an index of their own (writes here must not change the shared API index)."""
from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from brain.config import CorpusSpec, Settings

KEY = "attempts-key"
LOG = """# Worklog

## Optimization attempts

### Attempt 1: more pipeline stages
**Hypothesis:** 3 stages will hide TMA latency.

| shape | before (us) | after (us) |
| --- | --- | --- |
| M=128 | 100 | 130 |

### Attempt 2: TMA store epilogue
80 us -> 60 us on the large shape.
"""


@pytest.fixture(scope="module")
def setup(tmp_path_factory, embedder, live_server_factory):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from brain.service import Brain
    home, logs = tmp_path_factory.mktemp("att_home"), tmp_path_factory.mktemp("att_logs")
    (logs / "log.md").write_text(LOG)
    settings = Settings(home=home, api_key=KEY)
    brain = Brain(settings, embedder=embedder)
    brain.ingest([CorpusSpec("logs", logs)])
    with TestClient(create_app(settings, brain=brain), raise_server_exceptions=False) as client, \
            live_server_factory(settings, brain) as live:
        yield client, live, home


def test_get_attempts_filters_and_ranks(setup):
    client, _, _ = setup
    r = client.get("/attempts", params={"q": "pipeline stages", "k": 5})
    assert r.status_code == 200
    body = r.json()
    assert body["query"] == "pipeline stages" and body["results"][0]["title"] == "Attempt 1: more pipeline stages"
    first = body["results"][0]
    assert first["verdict"] == "regressed" and first["figures"][0]["after"] == 130.0
    assert {"status", "superseded_by", "supersedes", "conflicts_with", "source", "start_line"} <= set(first)
    r = client.get("/attempts", params={"verdict": "improved"})
    assert [x["title"] for x in r.json()["results"]] == ["Attempt 2: TMA store epilogue"]
    for params, needle in (({"verdict": "meh"}, "unknown verdict"), ({"technique": "magic"}, "unknown technique"),
                           ({"problem": "conv"}, "unknown problem")):
        r = client.get("/attempts", params=params)
        assert r.status_code == 400 and needle in r.json()["error"]
    assert client.get("/attempts", params={"k": 0}).status_code == 422


def test_post_attempts_writes_reads_back_and_refuses_bad_records(setup):
    client, _, home = setup
    old = client.get("/attempts", params={"q": "more pipeline stages"}).json()["results"][0]["id"]
    record = {"title": "fewer pipeline stages", "verdict": "regressed", "problem": "gemm", "techniques": ["pipeline"],
              "change": "reduce stages 4 -> 2", "supersedes": old,
              "figures": [{"label": "M=4096", "before": 50, "after": 61, "unit": "us"}]}
    assert client.post("/attempts", json=record).status_code == 401
    assert client.post("/attempts", json=record, headers={"X-API-Key": "wrong"}).status_code == 401
    records = home / "records"
    for bad, needle in (({**record, "verdict": "meh"}, "unknown verdict"), ({**record, "title": ""}, "missing 'title'"),
                        ({**record, "supersedes": "nope"}, "names no record"), ([1], "JSON object")):
        r = client.post("/attempts", json=bad, headers={"X-API-Key": KEY})
        assert r.status_code == 400 and needle in r.json()["error"]
        assert not records.exists()
    r = client.post("/attempts", json=record, headers={"X-API-Key": KEY})
    assert r.status_code == 201, r.text
    out = r.json()
    assert set(out) >= {"id", "source", "start_line", "end_line"} and (records / out["source"]).exists()
    got = {x["id"]: x for x in client.get("/attempts", params={"include_superseded": "true", "k": 50}).json()["results"]}
    assert got[old]["status"] == "superseded" and got[old]["superseded_by"] == out["id"]
    assert got[out["id"]]["figures"] == [{"label": "M=4096", "before": 50.0, "after": 61.0, "unit": "us"}]
    assert old not in {x["id"] for x in client.get("/attempts", params={"k": 50}).json()["results"]}
    hits = client.get("/search", params={"q": "more pipeline stages hide TMA latency", "k": 5}).json()["results"]
    assert all("superseded_by" in h and "conflicts_with" in h for h in hits)
    r = client.get(f"/sources/records/{out['source']}", params={"start": out["start_line"], "end": out["end_line"]})
    assert r.status_code == 200 and "**Verdict:** regressed" in r.json()["text"]
    r = client.get("/attempts/conflicts", params={"technique": "pipeline"})
    assert r.status_code == 200 and isinstance(r.json()["conflicts"], list)


def test_mcp_attempt_tools(setup):
    _, live, _ = setup

    async def main():
        with anyio.fail_after(60):
            async with Client(f"{live.url}/mcp") as client:
                r = await client.call_tool("find_attempts", {"query": "TMA store epilogue", "k": 2, "max_tokens": 300})
                assert not r.is_error and "TMA store epilogue" in r.content[0].text
                r = await client.call_tool("record_attempt", {"record": {"title": "x"}, "api_key": KEY})
                assert r.is_error and "unknown verdict" in r.content[0].text
                r = await client.call_tool("record_attempt", {"record": {"title": "y", "verdict": "neutral"},
                                                              "api_key": "wrong"})
                assert r.is_error and "wrong API key" in r.content[0].text
                r = await client.call_tool("record_attempt", {"record": {"title": "L2 prefetch two tiles ahead",
                                                                         "verdict": "neutral"}, "api_key": KEY})
                assert not r.is_error and json.loads(r.content[0].text)["source"].startswith("l2-prefetch-")
                r = await client.call_tool("find_attempts", {"query": "L2 prefetch two tiles ahead", "k": 1})
                assert "L2 prefetch two tiles ahead" in r.content[0].text and "[neutral]" in r.content[0].text
    anyio.run(main)
