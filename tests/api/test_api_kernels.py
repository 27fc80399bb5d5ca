"""GET /kernels and POST /kernels/{problem}/run (wired to kernels.runner): CPU backends, errors, Busy -> 429."""
from __future__ import annotations

import pytest

pytest.importorskip("kernels.runner", reason="kernels/runner.py is not in this checkout")


def test_list_kernels(client):
    r = client.get("/kernels")
    assert r.status_code == 200
    body = r.json()
    assert {"gemv", "gemm"} <= {p["name"] for p in body["problems"]}
    assert any(b["problem"] == "gemv" and b["name"] == "reference" and b["runs_here"] for b in body["backends"])


def test_run_reference_backend_on_cpu(client, key_header):
    r = client.post("/kernels/gemv/run", headers=key_header,
                    json={"backend": "torch", "shapes": {"m": 128, "k": 256, "l": 1}, "device": "cpu"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["problem"] == "gemv" and body["backend"] == "torch" and body["ok"] is True
    assert body["results"][0]["shape"] == {"m": 128, "k": 256, "l": 1} and body["results"][0]["check"]["ok"]


@pytest.mark.parametrize("url, payload, status, fragment", [
    ("/kernels/nope/run", {"backend": "reference"}, 404, "nope"),
    ("/kernels/gemv/run", {"backend": "nope"}, 404, "nope"),
    ("/kernels/gemv/run", {"backend": "reference", "shapes": {"m": 128, "k": 100}}, 400, "multiple of 64"),
])
def test_run_errors(client, key_header, url, payload, status, fragment):
    r = client.post(url, headers=key_header, json=payload)
    assert r.status_code == status and fragment in r.json()["error"], r.text


def test_busy_is_429(client, key_header):
    from kernels import runner
    with runner.run_slot():  # another run holds the GPU
        r = client.post("/kernels/gemv/run", headers=key_header,
                        json={"backend": "reference", "shapes": {"m": 128, "k": 256}, "device": "cpu"})
    assert r.status_code == 429 and "in progress" in r.json()["error"]


def test_a_run_takes_at_most_its_shape_cap(client, key_header):
    from api.routers import kernels
    shapes = [{"m": 128, "k": 256, "l": 1}] * (kernels.MAX_SHAPES + 1)
    r = client.post("/kernels/gemv/run", headers=key_header, json={"backend": "torch", "shapes": shapes, "device": "cpu"})
    assert r.status_code == 400 and str(kernels.MAX_SHAPES) in r.json()["error"]


def test_a_run_over_its_time_limit_stops_with_504(client, key_header, monkeypatch):
    from api.routers import kernels
    from kernels import runner
    monkeypatch.setattr(kernels, "RUN_SECONDS", 0.0)
    r = client.post("/kernels/gemv/run", headers=key_header,
                    json={"backend": "torch", "shapes": {"m": 128, "k": 256, "l": 1}, "device": "cpu"})
    assert r.status_code == 504 and "limit" in r.json()["error"]
    with runner.run_slot():  # and the run slot is free again
        pass


@pytest.mark.parametrize("spec", ["./evil.py", "evil.py:custom_kernel", "evil.py"])
def test_the_server_never_runs_a_file_named_in_a_request(client, key_header, tmp_path, monkeypatch, spec):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.py"
    evil.write_text(f"open({str(marker)!r}, 'w').write('x')\ndef custom_kernel(data):\n    return data[-1]\n")
    monkeypatch.chdir(tmp_path)  # the file is right there, under the name the request gives
    r = client.post("/kernels/gemm/run", headers=key_header,
                    json={"backend": spec, "shapes": {"m": 128, "n": 128, "k": 256}, "device": "cpu"})
    assert r.status_code == 404 and "unknown backend" in r.json()["error"], r.text
    assert not marker.exists()
