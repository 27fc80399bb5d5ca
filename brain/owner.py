"""One owner of an embedded index, and the server that advertises itself in the home.

Embedded Chroma (`$BRAIN_HOME/chroma`) is one process's store: another process's writes leave this one's view
stale ("Error finding id" on every read until it reopens). So the process that opens a home's Chroma takes an
flock on `owner.lock` in the home for as long as it lives (the OS drops it when the process dies, kill -9
included) and writes who it is into the file; another process that needs Chroma is refused with one line
that names the owner and says what to do. Reads of the snapshot file need no Chroma and stay open to all.

`brain serve` also advertises itself in `server.json` (mode 0600, so only the home's owner can read it): its
address, pid and a token that stands in for the API key. The CLI then sends its writes and its Chroma reads
through the server instead of opening the index. An advertisement whose process is gone is ignored (pid
check; the CLI also probes /health) and removed by the next process that takes the lock.

This module imports nothing heavy: the CLI reads the advertisement before deciding whether to load the index.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

from brain import Unavailable

OWNER_FILE = "owner.lock"
ADVERT_FILE = "server.json"

# who this process is, as a refusal names it (cli/main.py sets "brain <command>")
ROLE = " ".join([Path(sys.argv[0]).name, *sys.argv[1:2]]) if sys.argv and sys.argv[0] else "a Python process"

_held: dict[Path, list] = {}  # home -> [open lock file, claims]: one flock per home and process
_guard = threading.Lock()


class Owned(Unavailable):
    """Another live process holds the embedded index."""


def claim(home: Path, role: str | None = None) -> None:
    """Hold `home`'s owner lock for this process (each call one more claim; release() gives one back).
    Raises Owned, naming the holder and what to do, while another process holds it."""
    home = Path(home).resolve()
    with _guard:
        if home in _held:
            _held[home][1] += 1
            return
        try:
            home.mkdir(parents=True, exist_ok=True)
            f = open(home / OWNER_FILE, "a+")
        except OSError as e:
            raise Unavailable(f"cannot open the index at {home}: {e.strerror or e}") from None
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise Owned(refusal(home)) from None
        f.seek(0)
        f.truncate()
        f.write(json.dumps({"pid": os.getpid(), "role": role or ROLE, "since": time.time()}))
        f.flush()
        _held[home] = [f, 1]
    withdraw(home)  # an advertisement left by a server that died: it no longer holds the index


def release(home: Path) -> None:
    """Give back one claim; the lock goes with the last."""
    home = Path(home).resolve()
    with _guard:
        held = _held.get(home)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            del _held[home]
            fcntl.flock(held[0], fcntl.LOCK_UN)
            held[0].close()


def holds(home: Path) -> bool:
    return Path(home).resolve() in _held


def holder(home: Path) -> dict | None:
    """Who holds `home` now ({"pid", "role", "since"}), or None when nobody does."""
    path = Path(home) / OWNER_FILE
    try:
        with open(path) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                try:
                    return json.loads(f.read() or "{}") or {"pid": "?", "role": "another process"}
                except ValueError:
                    return {"pid": "?", "role": "another process"}
            fcntl.flock(f, fcntl.LOCK_UN)
            return None
    except OSError:
        return None


def refusal(home: Path) -> str:
    """The one line a process gets when another holds the index: who, and what to do."""
    who = holder(home) or {"pid": "?", "role": "another process"}
    role, pid = who.get("role", "another process"), who.get("pid", "?")
    head = f"the index at {home} is open in another process: {role} (pid {pid}); embedded Chroma takes one process."
    if role.startswith("brain serve"):
        url = role.rsplit(" ", 1)[-1]
        return (f"{head} Go through it (the CLI's commands do by themselves while it answers; agents: {url}/mcp), "
                "or stop it first")
    return (f"{head} Wait for it or stop it; for several clients on one index run `brain serve` (add --watch to "
            "keep it fresh): the CLI then goes through it")


# ---- the server's advertisement ------------------------------------------------------------------
def new_token() -> str:
    return secrets.token_urlsafe(32)


def advertise(home: Path, url: str, token: str) -> None:
    """Write `server.json` (mode 0600): this process serves the home at `url` to clients presenting `token`."""
    home = Path(home)
    fd, tmp = tempfile.mkstemp(dir=home, prefix=ADVERT_FILE, suffix=".tmp")  # created 0600
    with os.fdopen(fd, "w") as f:
        json.dump({"url": url, "pid": os.getpid(), "token": token, "since": time.time()}, f)
    os.replace(tmp, home / ADVERT_FILE)


def withdraw(home: Path, pid: int | None = None) -> None:
    """Remove the advertisement (only this pid's, when given)."""
    path = Path(home) / ADVERT_FILE
    if pid is not None and (read_advert(home, check_pid=False) or {}).get("pid") != pid:
        return
    with contextlib.suppress(OSError):
        path.unlink()


def read_advert(home: Path, check_pid: bool = True) -> dict | None:
    """The advertisement of a server of `home` ({"url", "pid", "token", "since"}), or None: none, unreadable
    (another user's), damaged, or its process is gone."""
    try:
        advert = json.loads((Path(home) / ADVERT_FILE).read_text())
        url, pid, token = advert["url"], int(advert["pid"]), advert["token"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if check_pid and not alive(pid):
        return None
    return {"url": url, "pid": pid, "token": token, "since": advert.get("since")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
