"""The command line beside a running `brain serve` of the same home: its writes, and the reads that need the
index's Chroma, go through the server (embedded Chroma is one process's store, brain/owner.py).

`find_server(settings)` reads the server's advertisement in the home (address, pid, token), checks the process
lives and probes /health with the token (which also says the server serves this home); a stale advertisement
(a server killed with -9) yields None and the CLI opens the index itself, which the owner lock refuses in one
line if another process still holds it. Team mode (BRAIN_CHROMA_URL) has no advertisement: every process is a
client of the Chroma server already. Only the standard library is imported here, so a command that goes
through a server starts in a fraction of a second.
"""
from __future__ import annotations

import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from brain import BrainError, NotFound, Unavailable, check_k
from brain.owner import read_advert

PROBE_TIMEOUT = 5.0  # a server busy embedding on a loaded 2-core machine still answers /health within this
READ_TIMEOUT = 120.0
WRITE_TIMEOUT = 24 * 3600.0  # an ingest of a big folder takes as long as it takes


class Remote:
    """The Brain calls the CLI makes, answered by the server at `url` with the home's local token."""

    def __init__(self, url: str, token: str, pid: int):
        self.url, self.token, self.pid = url.rstrip("/"), token, pid

    def __str__(self) -> str:
        return f"brain serve at {self.url} (pid {self.pid})"

    def _call(self, method: str, path: str, params: dict | None = None, body=None,
              timeout: float = READ_TIMEOUT) -> dict:
        query = urllib.parse.urlencode({k: v for k, v in (params or {}).items() if v is not None and v is not False},
                                       doseq=True)
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}" + (f"?{query}" if query else ""), data=data, method=method,
                                     headers={"X-Brain-Token": self.token, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read())["error"]
            except (ValueError, KeyError, TypeError, OSError):
                message = f"HTTP {e.code}"
            raise (NotFound if e.code == 404 else Unavailable if e.code >= 500 else BrainError)(message) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise Unavailable(f"{self} stopped answering ({reason}); try again, or stop it and run the command "
                              "without it") from None

    def healthy(self, home) -> bool:
        """Does the server answer, and for this home (a reused pid or port would name another)?"""
        try:
            answer = self._call("GET", "/health", timeout=PROBE_TIMEOUT).get("home")
        except BrainError:
            return False
        return answer is not None and Path(answer).resolve() == Path(home).resolve()

    # ---- reads that rank ----------------------------------------------------------------------------
    def search(self, query: str, k: int, filters: dict, mode: str = "hybrid", expand: bool = False) -> dict:
        check_k(k)
        return self._call("POST", "/search", body={"q": query, "k": k, "mode": mode, "expand": expand, **filters})

    def pitfall(self, error: str, k: int, filters: dict) -> dict:
        check_k(k)
        return self._call("POST", "/pitfalls", body={"error": error, "k": k, **filters})

    def snippets(self, pattern: str, query: str | None, k: int, filters: dict) -> dict:
        check_k(k)
        return self._call("GET", "/snippets", {"pattern": pattern, "q": query, "k": k, **filters})

    def context(self, query: str, budget: int, k: int, filters: dict) -> dict:
        check_k(k)
        return self._call("GET", "/context", {"q": query, "budget_tokens": budget, "k": k, **filters})

    def find_attempts(self, query, technique, verdict, problem, include_superseded, k, corpus) -> dict:
        check_k(k)
        return self._call("GET", "/attempts", {"q": query, "technique": technique, "verdict": verdict,
                                               "problem": problem, "include_superseded": include_superseded,
                                               "k": k, "corpus": corpus})

    def attempt_conflicts(self, technique: str | None) -> dict:
        return self._call("GET", "/attempts/conflicts", {"technique": technique})

    # ---- writes -------------------------------------------------------------------------------------
    def record(self, obj, target: str | None = None) -> dict:
        return self._call("POST", "/attempts", {"to": target}, body=obj, timeout=WRITE_TIMEOUT)

    def ingest(self, specs) -> dict:
        body = {"corpora": [{"name": s.name, "root": str(s.root), "include": list(s.include),
                             "exclude": list(s.exclude)} for s in specs]}
        return self._call("POST", "/ingest", body=body, timeout=WRITE_TIMEOUT)

    def remove_corpus(self, name: str) -> dict:
        return self._call("DELETE", f"/corpora/{urllib.parse.quote(name, safe='')}", timeout=WRITE_TIMEOUT)


def find_server(settings) -> Remote | None:
    """The live server of this home, or None (no advertisement, a dead one, team mode)."""
    if settings.chroma_url:
        return None
    advert = read_advert(settings.home)
    if advert is None:
        return None
    remote = Remote(advert["url"], advert["token"], advert["pid"])
    return remote if remote.healthy(settings.home) else None


def note(remote: Remote, what: str) -> None:
    """A write through the server says so on stderr (its progress shows in the server's log)."""
    print(f"{what} through {remote} ...", file=sys.stderr, flush=True)
