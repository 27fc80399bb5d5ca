"""`brain serve`: incremental ingest of the default corpora (one summary line), then uvicorn."""
from __future__ import annotations

import sys

import uvicorn

from api.app import create_app, server_brain
from brain.config import Settings


def serve(settings: Settings, host: str = "127.0.0.1", port: int = 8000, ingest_first: bool = True) -> int:
    brain = server_brain(settings)
    if ingest_first:
        summary = brain.ingest(progress=sys.stderr.isatty())
        print(f"ingest: {summary.line()}", flush=True)
        for skip in summary.skipped:
            print(f"  skipped {skip}", file=sys.stderr)
    if not settings.api_key:
        print("writes (upload, delete, ingest, kernel runs) are disabled: set BRAIN_API_KEY to allow them",
              file=sys.stderr)
    print(f"serving http://{host}:{port}/  (API docs /docs, MCP /mcp)", flush=True)
    uvicorn.run(create_app(settings, brain=brain, host=host), host=host, port=port, log_level="warning")
    return 0
