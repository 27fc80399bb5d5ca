"""Schemathesis against /openapi.json, a bounded number of examples per operation: no 5xx, errors are JSON."""
from __future__ import annotations

import pytest

schemathesis = pytest.importorskip("schemathesis", reason="pip install schemathesis (the test extra)")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from brain.config import Settings  # noqa: E402

EXAMPLES = 12  # per operation: keeps the whole fuzz run well under a minute on 2 cores


def fuzz(app, headers: dict | None = None, only: tuple[str, ...] = ()) -> list[str]:
    """Every operation (or those whose path starts with one of `only`): generated requests; returns failures."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    failures: list[str] = []
    operations = [r.ok() for r in schema.get_all_operations()]
    operations = [op for op in operations if not only or op.path.startswith(only)]
    assert operations

    for op in operations:
        # derandomize: CI sees the same examples on every run, so a failure here is reproducible
        @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def check(case):
            try:
                response = case.call(headers=headers)
            except Exception as e:  # the in-process client re-raises what a real server would answer with a 500
                notes = " ".join(getattr(e, "__notes__", []))
                failures.append(f"{op.method.upper()} {op.path} -> 500: {type(e).__name__}: {e} {notes}")
                return
            label = f"{op.method.upper()} {op.path} -> {response.status_code}"
            if response.status_code >= 500:
                failures.append(f"{label}: {response.text[:300]}")
            elif response.status_code >= 400:
                body = response.json()
                if not ("error" in body or "detail" in body):
                    failures.append(f"{label}: error without a message: {response.text[:300]}")
                if "Traceback" in response.text:
                    failures.append(f"{label}: traceback in the body")
        check()
    return failures


def test_fuzz_read_api(api_brain):
    """All operations on the shared index with writes disabled (no key configured): reads get fuzzed for real."""
    from api.app import create_app
    app = create_app(Settings(home=api_brain.settings.home, api_key=None), brain=api_brain)
    failures = fuzz(app)
    assert not failures, "\n".join(failures[:10])


def test_fuzz_uploads_and_deletes(tmp_path, embedder):
    """Writes with the key, on a throwaway index: random uploads are accepted or refused with a 4xx."""
    from api.app import create_app
    from brain.service import Brain
    settings = Settings(home=tmp_path / "home", api_key="fuzz-key")
    app = create_app(settings, brain=Brain(settings, embedder=embedder))
    failures = fuzz(app, headers={"X-API-Key": "fuzz-key"}, only=("/documents",))
    assert not failures, "\n".join(failures[:10])
