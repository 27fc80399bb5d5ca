"""Keep an index fresh without asking: poll the corpora's files, re-ingest when they change.

`brain watch` and `brain serve --watch` run a Watcher. Every `interval` seconds it takes each file's size and
mtime (what the ingester itself compares); when anything changed, was added or deleted, it waits until the
files have been still for `settle` seconds (at most `max_wait`), so a burst of edits (a save-all, a git
checkout) is one ingest, then runs the ordinary incremental ingest of every known corpus and refreshes the
snapshot file the CLI reads. Searches are never blocked: they run on the last snapshot meanwhile.
Polling needs no dependency and works on any file system; a scan of a few thousand files is milliseconds.

`unchanged()` is the same comparison against the manifest: a no-op `brain ingest` answers from it without
opening Chroma or loading the embedding model.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable

from brain import BrainError
from brain.chunking import CHUNKER_VERSION
from brain.config import DEFAULT_MAX_FILE_BYTES, CorpusSpec
from brain.ingest import Summary, discover
from brain.store import file_key

Signature = dict[str, tuple[int, int]]  # file key -> (size, mtime_ns)


def scan(specs: list[CorpusSpec], max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Signature:
    """(size, mtime_ns) of every file the ingester would take from `specs` (a missing root: no files)."""
    out: Signature = {}
    for spec in specs:
        if not spec.root.exists():
            continue
        for path, rel in discover(spec, max_bytes)[0]:
            try:
                st = path.stat()
            except OSError:  # deleted between the walk and the stat
                continue
            out[file_key(spec.name, rel)] = (st.st_size, st.st_mtime_ns)
    return out


def unchanged(m, specs: list[CorpusSpec], max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Summary | None:
    """The summary of an ingest of `specs` that would change nothing (every file listed in manifest `m` with
    the same size and mtime, none added or gone, the same corpus declarations), else None."""
    t0 = time.perf_counter()
    if not m.last_ingest or m.chunker != CHUNKER_VERSION:
        return None
    s = Summary()
    for spec in specs:
        declared = {"root": str(spec.root), "include": list(spec.include), "exclude": list(spec.exclude)}
        if m.corpora.get(spec.name) != declared or not spec.root.exists():
            return None
        files, skipped = discover(spec, max_bytes)
        s.skipped += [f"{spec.name}/{x}" for x in skipped]
        keys = set()
        for path, rel in files:
            key = file_key(spec.name, rel)
            keys.add(key)
            entry = m.files.get(key)
            st = path.stat()
            if not entry or entry["size"] != st.st_size or entry["mtime_ns"] != st.st_mtime_ns:
                return None
        if keys != {k for k in m.files if k.split(":", 1)[0] == spec.name}:
            return None
        s.files_seen += len(files) + len(skipped)
        s.files_unchanged += len(files)
    s.seconds = time.perf_counter() - t0
    return s


class Watcher:
    """`ingest(specs)` writes and returns a Summary; `corpora()` lists what to watch when no `specs` are given
    (re-read each scan, so a corpus added meanwhile is watched too); `warm()` loads what an ingest needs."""

    def __init__(self, ingest: Callable[[list[CorpusSpec]], Summary], corpora: Callable[[], list[CorpusSpec]],
                 warm: Callable[[], None] = lambda: None, interval: float = 0.5, settle: float = 0.3,
                 max_wait: float = 1.0, log=None, specs: list[CorpusSpec] | None = None,
                 max_bytes: int = DEFAULT_MAX_FILE_BYTES):
        self.ingest, self.corpora, self.warm = ingest, corpora, warm
        self.specs = specs
        self.max_bytes = max_bytes  # the ingester's per-file limit: a file it skips is not watched either
        self.interval, self.settle, self.max_wait = interval, settle, max_wait
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.ingests = 0  # ingests run (tests: a burst of edits is one)
        self.stop_event = threading.Event()

    def start(self) -> threading.Thread:
        """Run in a daemon thread (`brain serve --watch`); stop() ends it."""
        t = threading.Thread(target=self.run, name="brain-watch", daemon=True)
        t.start()
        return t

    def stop(self) -> None:
        self.stop_event.set()

    def run(self) -> None:
        """Ingest once (anything changed while nobody watched), then follow changes until stop()."""
        self.warm()  # load the model now: a change must not wait seconds for torch
        specs = self.specs or self.corpora()
        if specs:
            self._ingest(specs)
        last = scan(specs, self.max_bytes)
        while not self.stop_event.wait(self.interval):
            specs = self.specs or self.corpora()
            now = scan(specs, self.max_bytes)
            if now == last:
                continue
            deadline = time.monotonic() + self.max_wait
            while time.monotonic() < deadline and not self.stop_event.wait(self.settle):
                again = scan(specs, self.max_bytes)
                if again == now:
                    break
                now = again
            if specs:  # the last corpus removed: nothing to ingest
                self._ingest(specs)
            last = now

    def _ingest(self, specs: list[CorpusSpec]) -> None:
        try:
            summary = self.ingest(specs)
        except BrainError as e:
            self.log(f"watch: ingest failed: {e}")
            return
        except Exception as e:  # a bug must not kill the watcher of a running server
            self.log(f"watch: internal error: {type(e).__name__}: {e}")
            return
        self.ingests += 1
        if summary.files_changed or summary.files_removed:
            self.log(f"watch: {summary.line()}")
