"""Write leases: one writer at a time for an index.

Local mode: an flock on `write.lock` in the home, released by the OS if the process dies. Server mode: a chain
of Chroma collections (ServerLease), so writers on several hosts with nothing else in common take turns.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
import time
import uuid
from pathlib import Path

from brain import Unavailable

LEASE_TTL = float(os.environ.get("BRAIN_LEASE_TTL") or 30)  # a holder that stops renewing loses it after this
LEASE_WAIT = float(os.environ.get("BRAIN_LEASE_WAIT") or 120)  # how long a writer waits for a busy lease


@contextlib.contextmanager
def local_lease(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "write.lock", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released by the OS if this process dies
        try:
            yield _LocalLease()
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class _LocalLease:
    def check(self) -> None:
        """An flock cannot be taken away while the process lives."""


class ServerLease:
    """The write lease of an index on a Chroma server, built on the one atomic primitive Chroma offers:
    `create_collection` fails if the name exists.

    Leases form a chain of collections `<index>-lease-1`, `-2`, ...; the valid one is the highest, and its
    metadata holds the holder and an expiry the holder keeps pushing forward (a heartbeat every ttl/3). A
    writer that finds the highest released, or expired (its holder died or hangs), creates the next number:
    of several racing, exactly one creation succeeds; the winner then re-lists the chain to verify nothing
    higher appeared. Released leases are marked, not deleted, so numbers only grow and a holder that slept past
    its expiry finds a higher number and knows it lost (check() before every commit); older links are deleted.
    Expiry compares wall clocks of different hosts: keep them in sync (NTP) and the ttl well above any skew.
    """

    PREFIX_SEP = "-lease-"

    def __init__(self, store, wait: float = LEASE_WAIT, ttl: float | None = None):
        self.store, self.wait, self.ttl = store, wait, ttl or LEASE_TTL
        self.prefix = store.collection_name("lease-")
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.number = 0
        self.expires = 0.0
        self._stop = threading.Event()
        self._lost: str | None = None
        self._beat: threading.Thread | None = None

    def _chain(self) -> dict[int, dict]:
        out, offset = {}, 0
        while True:  # every page: a server may hold many indexes' collections
            page = self.store.call("list collections", self.store.client.list_collections, limit=1000,
                                    offset=offset)
            for col in page:
                tail = col.name[len(self.prefix):] if col.name.startswith(self.prefix) else ""
                if tail.isdigit():
                    out[int(tail)] = dict(col.metadata or {})
            if len(page) < 1000:
                return out
            offset += 1000

    def _create(self, number: int) -> bool:
        self.expires = time.time() + self.ttl
        try:
            self.store.client.create_collection(f"{self.prefix}{number}", embedding_function=None, metadata={
                "holder": self.holder, "expires": self.expires, "released": False})
            return True
        except Exception as e:
            if "already exists" in str(e):
                return False
            raise Unavailable(f"Chroma at {self.store.where()} failed to create a lease: {e}") from None

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait
        while True:
            chain = self._chain()
            top = max(chain, default=0)
            meta = chain.get(top, {})
            free = top == 0 or meta.get("released") or float(meta.get("expires", 0)) < time.time()
            if free and self._create(top + 1):
                now = self._chain()
                if max(now) == top + 1 and now[top + 1].get("holder") == self.holder:
                    self.number = top + 1
                    for old in (n for n in now if n < top):  # keep the one below: a late loser must see it
                        with contextlib.suppress(Exception):
                            self.store.client.delete_collection(f"{self.prefix}{old}")
                    self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="lease-heartbeat")
                    self._beat.start()
                    return
            if time.monotonic() > deadline:
                until = time.strftime("%H:%M:%S", time.localtime(float(meta.get("expires", 0))))
                raise Unavailable(f"index '{self.store.index}' is being written by {meta.get('holder', '?')} "
                                  f"(lease until {until}); try again later")
            time.sleep(0.1 + 0.2 * (uuid.uuid4().int % 100) / 100)  # jitter: racing writers spread out

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                chain = self._chain()
                if max(chain, default=0) != self.number:
                    self._lost = f"another writer took the lease (number {max(chain, default=0)})"
                    return
                expires = time.time() + self.ttl
                self.store.client.get_collection(f"{self.prefix}{self.number}").modify(
                    metadata={"holder": self.holder, "expires": expires, "released": False})
                self.expires = expires
            except Exception:  # the server is away for a moment: check() fails once the expiry passes
                continue

    def check(self) -> None:
        """Raise if this writer may no longer commit: lost to a taker, or expired without renewal."""
        if self._lost:
            raise Unavailable(f"write to index '{self.store.index}' abandoned: {self._lost}")
        if time.time() > self.expires - 1.0:
            raise Unavailable(f"write to index '{self.store.index}' abandoned: its lease expired")
        if max(self._chain(), default=0) != self.number:
            raise Unavailable(f"write to index '{self.store.index}' abandoned: another writer took the lease")

    def release(self) -> None:
        self._stop.set()
        if self._beat:
            self._beat.join(5)
        if self._lost:
            return
        with contextlib.suppress(Exception):  # unreachable server: the lease simply expires
            self.store.client.get_collection(f"{self.prefix}{self.number}").modify(
                metadata={"holder": self.holder, "expires": 0.0, "released": True})
