"""A server whose embedded store was written behind its back (a process that ignored the owner lock) reads a
stale view ("Error finding id"): it reopens the store and answers, never 503 until restarted."""
from __future__ import annotations

import json
import subprocess
import sys

from brain.config import PROJECT_ROOT, CorpusSpec, Settings

LOG = """# Worklog

### Attempt 1: more pipeline stages
**Hypothesis:** 3 stages will hide TMA latency.

| shape | before (us) | after (us) |
| --- | --- | --- |
| M=128 | 100 | 130 |
"""

# Another process writing a record through its own embedded Chroma, as `brain record` did before the owner
# lock: here it ignores the lock on purpose.
FOREIGN_WRITE = """
import json, sys
try:
    from brain import owner
    owner.claim = lambda *a, **k: None
except ImportError:
    pass
from brain.config import Settings
from brain.service import Brain
from pathlib import Path
print(Brain(Settings(home=Path(sys.argv[1]))).record(json.loads(sys.argv[2]))["id"])
"""
RECORD = {"title": "TMA store epilogue", "verdict": "improved", "problem": "gemm", "techniques": ["tma"],
          "figures": [{"label": "large shape", "before": 80, "after": 60, "unit": "us"}]}


def test_a_stale_view_is_reopened_not_served_as_503(tmp_path, embedder):
    from fastapi.testclient import TestClient

    from api.app import create_app
    from brain.service import Brain
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "log.md").write_text(LOG)
    settings = Settings(home=tmp_path / "home")
    brain = Brain(settings, embedder=embedder)
    brain.ingest([CorpusSpec("logs", logs)])
    with TestClient(create_app(settings, brain=brain), raise_server_exceptions=False) as client:
        before = client.get("/attempts")
        assert before.status_code == 200 and before.json()["results"]
        written = subprocess.run([sys.executable, "-c", FOREIGN_WRITE, str(settings.home), json.dumps(RECORD)],
                                 cwd=PROJECT_ROOT, timeout=300, capture_output=True, text=True)
        assert written.returncode == 0, written.stderr[-2000:]
        for path in ("/attempts", "/attempts/conflicts", "/search?q=TMA+store+epilogue", "/attempts"):
            r = client.get(path)
            assert r.status_code == 200, r.text
        assert written.stdout.strip() in {x["id"] for x in r.json()["results"]}
