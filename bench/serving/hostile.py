"""The hostile suite: issue 30's findings replayed against served indexes, a schemathesis run and a kill -9
series; bounded in count and time, loopback only.

    python bench/serving/hostile.py                      # about 10 minutes on the 2-core machine
    python bench/serving/hostile.py --examples 4 --kills 3 --no-team

Starts `brain serve` on a fresh BRAIN_HOME (a two-file corpus, an API key) on a free loopback port; with the
`chroma` CLI installed also a Chroma server and two `brain serve` processes sharing one index (team mode).
Every answer is checked: a 5xx is counted, and so is a leak (the temporary folder's path, the project's path,
the Chroma URL or a traceback in the body). Every record write that was acknowledged is read back at the end:
"writes lost" counts those missing or duplicated. The replays are in hostile_replays.py. Prints each replay's
verdict and the four counts; exits 1 when a replay failed or a count is not 0.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from brain import MAX_K  # noqa: E402
from served import KEY, ROOT, Served, brain, env_for, free_port  # noqa: E402


class Tally:
    """Every request of the suite goes through `ask`: counted, and its answer checked for a 5xx and a leak."""

    def __init__(self, secrets: list[str]):
        self.secrets = [s for s in secrets if s]
        self.requests, self.documented, self.server_errors, self.leaks, self.failed = 0, 0, [], [], []
        self._mark = (0, 0)  # 5xx and leaks counted at the last verdict
        self.acked: list[tuple[str, str]] = []  # (index label, record id) of every 201 on a record write
        self.lost: list[str] = []
        self.http = httpx.Client(timeout=120)

    def ask(self, method: str, url: str, **kw) -> httpx.Response:
        try:
            r = self.http.request(method, url, **kw)
        except httpx.TransportError as e:  # no answer at all (the server died, or dropped the connection)
            r = httpx.Response(599, json={"error": f"no answer: {type(e).__name__}", "results": []})
        self.check(f"{method} {url.split('?')[0]}", r.status_code, r.content)
        return r

    def guarded(self, step, *args) -> None:
        """Run one replay; one that breaks (an answer it cannot read) is a failed replay, not the suite's end."""
        try:
            step(*args)
        except Exception as e:
            self.verdict(step.__name__, False, f"{type(e).__name__}: {str(e)[:200]}")

    def check(self, label: str, status: int, body: bytes, local: bool = False) -> None:
        """`local`: the command line's own output, which may name paths on its own machine."""
        self.requests += 1
        text = body.decode("utf-8", "replace")
        if status in (503, 504):  # documented answers: the index unusable, busy, a run over its time
            self.documented += 1
        elif status >= 500:
            self.server_errors.append(f"{label} -> {status}: {text[:200]}")
        for s in [] if local else self.secrets:
            if s in text:
                self.leaks.append(f"{label} -> {status} names {s!r}: {text[:200]}")

    def verdict(self, name: str, held: bool, detail: str = "") -> None:
        """A replay held when its own check passed and no answer since the last verdict was a 5xx or leaked."""
        new = (len(self.server_errors) - self._mark[0], len(self.leaks) - self._mark[1])
        self._mark = (len(self.server_errors), len(self.leaks))
        held = held and new == (0, 0)
        extra = f" (+{new[0]} 5xx, +{new[1]} leaks)" if any(new) else ""
        print(f"  {'ok  ' if held else 'FAIL'} {name}{': ' + detail if detail else ''}{extra}", flush=True)
        if not held:
            self.failed.append(name)


def chroma_server(path: Path) -> tuple[str, subprocess.Popen] | None:
    exe = Path(sys.executable).with_name("chroma")
    exe = str(exe) if exe.exists() else shutil.which("chroma")
    if not exe:
        return None
    port = free_port()
    proc = subprocess.Popen([exe, "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            httpx.get(f"{url}/api/v2/heartbeat", timeout=1)
            return url, proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    return None


def fuzz(t: Tally, url: str, examples: int) -> None:
    """Schemathesis over the served OpenAPI document: every operation without the key (writes answer 401), the
    record and document writes with it; a bounded, derandomized number of examples per operation."""
    import schemathesis
    from hypothesis import HealthCheck, Phase, given, settings
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    ops = [r.ok() for r in schema.get_all_operations()]
    plan = [(op, None) for op in ops] + [(op, {"X-API-Key": KEY}) for op in ops
                                          if op.path.startswith(("/documents", "/attempts")) and op.method != "get"]
    before = t.requests
    for op, headers in plan:
        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def one(case):
            try:
                r = case.call(base_url=url, headers=headers, timeout=120)
            except Exception as e:  # a dropped connection is the server's failure too
                t.check(f"{op.method.upper()} {op.path}", 599, f"{type(e).__name__}: {e}".encode())
                return
            t.check(f"{op.method.upper()} {op.path}", r.status_code, r.content)
        one()
    t.verdict("schemathesis", True, f"{t.requests - before} requests over {len(plan)} operation runs")


def kill_series(t: Tally, tmp: Path, kills: int) -> None:
    """`brain record` killed with SIGKILL, then retried until it answers: every answered record must be there
    exactly once (a retry of a half-finished write must not duplicate it), and a killed write must be visible
    whole or absent. Half the kills land at a random moment of a write (most of which is start-up), half the
    moment the records folder changes: the record's file is written, its commit under way."""
    home = tmp / "kill-home"
    env = env_for(home)
    assert brain(["ingest", str(tmp / "notes"), "--corpus", "notes", "--quiet"], env).returncode == 0
    rng = random.Random(30)
    folder = home / "records"

    def stamp() -> set:
        return {(p.name, p.stat().st_mtime_ns) for p in folder.glob("*")} if folder.exists() else set()
    t_first = time.monotonic()
    (tmp / "first.json").write_text(json.dumps({"title": "an uninterrupted write", "verdict": "neutral"}))
    assert brain(["record", str(tmp / "first.json")], env).returncode == 0
    took = time.monotonic() - t_first  # how long one write takes here, start-up included
    ids, killed_n, at_commit, seen_after_kill, half = [], 0, 0, 0, []
    for n in range(kills):
        rec = tmp / f"kill{n}.json"
        rec.write_text(json.dumps({"title": f"killed write {n}", "verdict": "neutral", "problem": "gemm",
                                   "lesson": f"written under kill -9 number {n}"}))
        proc = subprocess.Popen([sys.executable, "-m", "cli", "record", str(rec), "--json"], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if n % 2:
            time.sleep(rng.uniform(0.2, 1.0) * took)
        else:
            before, deadline = stamp(), time.monotonic() + 2 * took
            while stamp() == before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            at_commit += stamp() != before
        killed = proc.poll() is None
        if killed:
            os.kill(proc.pid, signal.SIGKILL)
            killed_n += 1
        proc.wait()
        if killed:  # never acknowledged: visible whole or absent, never half
            out = brain(["attempts", "--json", "--k", str(MAX_K), "--include-superseded"], env)
            mine = [r for r in json.loads(out.stdout)["results"] if r["title"] == f"killed write {n}"] \
                if out.returncode == 0 else []
            seen_after_kill += bool(mine)
            half += [f"killed write {n}" for r in mine if r["lesson"] != f"written under kill -9 number {n}"]
        done = brain(["record", str(rec), "--json"], env)  # the retry: answers with the record's id
        t.check(f"brain record ({'killed' if killed else 'finished'} first)", 500 if done.returncode else 201,
                (done.stdout + done.stderr).encode(), local=True)
        if done.returncode == 0:
            ids.append(json.loads(done.stdout)["id"])
            t.acked.append(("kill-home", ids[-1]))
    out = brain(["attempts", "--json", "--k", str(MAX_K), "--include-superseded"], env)
    rows = json.loads(out.stdout)["results"] if out.returncode == 0 else []
    got = [r["id"] for r in rows if r["title"].startswith("killed write ")]
    titles = [r["title"] for r in rows if r["title"].startswith("killed write ")]
    lost = [i for i in ids if got.count(i) != 1] + [f"{x} (x{titles.count(x)})" for x in set(titles)
                                                     if titles.count(x) > 1]  # a retry that duplicated it
    t.lost += lost + half
    t.verdict("kill -9 series", not lost and not half and len(ids) == kills,
              f"{kills} writes ({took:.1f} s each), {killed_n} killed midway, {at_commit} of them as their file "
              f"appeared ({seen_after_kill} visible whole before the "
              f"retry, {len(half)} half), {len(ids)} answered after a retry, {len(got)} records read back, "
              f"{len(lost)} missing or duplicated")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=8, help="schemathesis examples per operation (default 8)")
    ap.add_argument("--kills", type=int, default=8, help="record writes killed with SIGKILL (default 8)")
    ap.add_argument("--no-team", action="store_true", help="skip team mode (a Chroma server, two hosts)")
    args = ap.parse_args()
    import hostile_replays as replays
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="hostile-"))
    t = Tally([str(tmp), str(ROOT), "Traceback (most recent call last)"])
    try:
        home = tmp / "home"
        (tmp / "notes").mkdir()
        (tmp / "notes" / "a.md").write_text("# Notes\n\n## TMA\nTMA loads are issued by one warp.\n")
        (tmp / "notes" / "b.md").write_text("# More\n\n## Stages\nThree pipeline stages were slower.\n")
        assert brain(["ingest", str(tmp / "notes"), "--corpus", "notes", "--quiet"], env_for(home)).returncode == 0
        print(f"serving {home}", flush=True)
        s = Served(env_for(home))
        try:
            for step in replays.LOCAL:
                t.guarded(step, t, s.url, home, tmp)
            t.guarded(replays.malformed, t, s.url)
            t.guarded(fuzz, t, s.url, args.examples)
            t.guarded(replays.connections, t, s.url)
            t.guarded(replays.read_back_acked, t, s.url, "local")
        finally:
            s.stop()
        if not args.no_team:
            found = chroma_server(tmp / "chroma")
            if found is None:
                print("  skip team mode: no `chroma` CLI", flush=True)
            else:
                url, chroma = found
                t.secrets += [url, url.split("//")[1]]
                try:
                    t.guarded(replays.team, t, url, tmp, chroma)
                finally:
                    chroma.kill()
        t.guarded(kill_series, t, tmp, args.kills)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nhostile suite: {t.requests} requests, {len(t.server_errors)} 5xx, {len(t.leaks)} leaks, "
          f"{len(t.lost)} writes lost ({len(t.acked)} acknowledged); {len(t.failed)} replays failed; "
          f"{t.documented} documented 503/504 answers (not counted as 5xx); {time.monotonic() - t0:.0f} s")
    for line in (t.server_errors + t.leaks + t.lost)[:20]:
        print("  " + line)
    return 1 if t.failed or t.server_errors or t.leaks or t.lost else 0


if __name__ == "__main__":
    sys.exit(main())
