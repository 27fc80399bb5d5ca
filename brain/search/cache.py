"""What a fresh process reads instead of Chroma: the snapshot file and the bm25 index of one generation.

Chroma stays the store of record. After a write (and whenever a reader had to read Chroma anyway) the chunk
records and their L2-normalised vectors are saved as one `.npz` beside the index, and the lexical index as a
folder; a command-line read loads them in milliseconds instead of importing chromadb and paging every record
out of it. Each names what it was built from (the snapshot: index, model, chunker, generation, time of the
ingest and its chunk ids; the lexical index: its generation) and is used only when that matches the manifest
as stored now, so a stale or foreign file is never read, only rebuilt. Both are replaced atomically and
written best effort: a read-only home only costs the next reader time.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from brain.lexical import LexicalIndex

FORMAT = 1


@dataclass
class Cached:
    ids: list[str]
    texts: list[str]
    metas: list[dict]
    vectors: np.ndarray  # float32 [len(ids), dim], row i is ids[i]


def cache_key(m, index: str) -> dict:
    """What a snapshot file must have been built from to stand for manifest `m`."""
    return {"format": FORMAT, "index": index, "model": m.model, "chunker": m.chunker,
            "generation": m.generation, "last_ingest": m.last_ingest}


def cache_dir(settings) -> Path:
    """Server mode: several indexes may share one local home, so each gets its own folder."""
    home = Path(settings.home)
    return home / "cache" / settings.index if settings.chroma_url else home


class SnapshotCache:
    def __init__(self, settings):
        self.path = cache_dir(settings) / "snapshot.npz"
        self.index = settings.index

    def load(self, m) -> Cached | None:
        """The cached records of manifest `m`, or None when there is no file or it stands for anything else."""
        try:
            with np.load(self.path, allow_pickle=False) as z:
                head = json.loads(z["head"].tobytes())
                if head["key"] != cache_key(m, self.index):
                    return None
                body = json.loads(z["body"].tobytes())
                vectors = z["vectors"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        ids = body["ids"]
        if len(ids) != len(vectors) or set(ids) != m.ids():
            return None
        return Cached(ids, body["texts"], body["metas"], vectors)

    def save(self, m, ids: list[str], texts: list[str], metas: list[dict], vectors: np.ndarray) -> None:
        """Write the snapshot of manifest `m`."""
        head = json.dumps({"key": cache_key(m, self.index)}).encode()
        body = json.dumps({"ids": ids, "texts": texts, "metas": metas}, ensure_ascii=False).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix="snapshot.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as f:
                    np.savez(f, head=np.frombuffer(head, np.uint8), body=np.frombuffer(body, np.uint8),
                             vectors=np.ascontiguousarray(vectors, dtype=np.float32))
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass


class LexicalCache:
    def __init__(self, settings):
        self.path = cache_dir(settings) / "lexical"

    def save(self, lex: LexicalIndex, generation: int) -> None:
        """Writers and readers (threads or processes) of one home may save at the same moment, and renaming a
        folder onto one that exists fails, so the swap is done under an flock."""
        parent = self.path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=parent, prefix="lexical.tmp"))
            old = parent / f"lexical.old.{uuid.uuid4().hex}"
            try:
                lex.save(tmp)
                (tmp / "generation").write_text(str(generation))
                with self._locked(fcntl.LOCK_EX):
                    if self.path.exists():
                        os.replace(self.path, old)
                    os.replace(tmp, self.path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # gone already unless something failed
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass

    def load(self, generation: int) -> LexicalIndex | None:
        """The cached bm25 index if it was built for `generation` (the snapshot also checks its ids match). Its
        files are read under a shared lock: a swap between reading its ids and its scores would pair one
        generation's ids with another's scores."""
        try:
            with self._locked(fcntl.LOCK_SH):
                if int((self.path / "generation").read_text()) != generation:
                    return None
                return LexicalIndex.load(self.path)
        except (OSError, ValueError):
            return None

    @contextlib.contextmanager
    def _locked(self, how: int):
        """Hold the home's lexical.lock; a read-only home has no lock to take and no writer to race."""
        try:
            lock = open(self.path.parent / "lexical.lock", "a")
        except OSError:
            if how == fcntl.LOCK_EX:
                raise
            lock = None
        if lock is None:
            yield
            return
        with lock:
            fcntl.flock(lock, how)
            yield

    def clear(self) -> None:
        try:
            with self._locked(fcntl.LOCK_EX):  # not under a reader: half a folder would load as a torn index
                shutil.rmtree(self.path, ignore_errors=True)
        except OSError:
            pass
