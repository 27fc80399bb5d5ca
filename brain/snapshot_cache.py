"""A read snapshot of one manifest generation in one file, so a fresh process searches without Chroma.

Chroma stays the store of record. After a write (and whenever a reader had to read Chroma anyway) the chunk
records and their L2-normalised vectors are saved as one `.npz` beside the index; a command-line read loads it
with numpy in milliseconds instead of importing chromadb and paging every record out of it. The file names
what it was built from (index, model, chunker, generation, time of the ingest) and the chunk ids it holds; it
is used only when all of these match the manifest as stored now, so a stale or foreign file is never read,
only rebuilt. It is replaced atomically (written aside, then renamed), so a reader sees an old file or a new
one, never half of one.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

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


class SnapshotCache:
    def __init__(self, settings):
        home = Path(settings.home)
        # server mode: several indexes may share one local home, so each gets its own file (as the lexical cache)
        self.path = home / "cache" / settings.index / "snapshot.npz" if settings.chroma_url else home / "snapshot.npz"
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
        """Write the snapshot of manifest `m` (best effort: a read-only home only costs the next reader time)."""
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

