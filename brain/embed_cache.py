"""Embeddings by content: a re-ingest embeds only the chunks whose text is new.

A vector depends on nothing but the model and the text embedded (a chunk's `embedding_text()`, an attempt
record's ranking text), so each is kept under (model, sha256 of the text) in `embeddings.sqlite` in the home.
A one-line edit moves the line numbers, and so the ids, of every chunk after it, but not their texts: only the
chunks whose text changed are embedded again. The file is a cache: one that cannot be opened or written (a
read-only home, a damaged file) costs the embedding, never the write. It keeps the MAX_ROWS vectors used last.
"""
from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from pathlib import Path
from typing import Callable

import numpy as np

FILE = "embeddings.sqlite"
MAX_ROWS = 50_000  # about 80 MB of 384-dimensional float32 vectors
_BATCH = 500  # keys per SQL statement (SQLite allows 999 parameters in older builds)


class EmbeddingCache:
    def __init__(self, home: Path, model: str):
        self.path = Path(home) / FILE
        self.model = model

    def encode(self, texts: list[str], embed: Callable[[list[int]], np.ndarray]) -> tuple[np.ndarray, int]:
        """Vectors for `texts` (float32, row i for texts[i]): cached ones are read, the others are embedded by
        `embed(indices)` (rows in the order of `indices`) and kept. Returns (vectors, how many were embedded)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32), 0
        keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
        first: dict[bytes, int] = {}
        for i, key in enumerate(keys):
            first.setdefault(key, i)
        try:
            with self._open() as db:
                found = self._lookup(db, list(first))
        except (sqlite3.Error, OSError):
            found = {}
        todo = [i for key, i in first.items() if key not in found]
        fresh = embed(todo) if todo else np.zeros((0, 0), dtype=np.float32)
        dims = {len(v) for v in found.values()} | ({fresh.shape[1]} if todo else set())
        if len(dims) > 1:  # cached rows of another dimension (the model behind the name changed): embed all
            found, todo = {}, list(first.values())
            fresh = embed(todo)
        self._keep([keys[i] for i in todo], fresh, list(found))
        vectors = {**found, **{keys[i]: fresh[n] for n, i in enumerate(todo)}}
        return np.stack([vectors[k] for k in keys]).astype(np.float32, copy=False), len(todo)

    # ---- the file -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _open(self):
        """A connection in one transaction (committed on success), closed afterwards."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key BLOB NOT NULL, "
                           "vector BLOB NOT NULL, used REAL NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID")
                yield db
        finally:
            db.close()

    def _lookup(self, db: sqlite3.Connection, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found = {}
        for at in range(0, len(keys), _BATCH):
            part = keys[at:at + _BATCH]
            rows = db.execute(f"SELECT key, vector FROM vectors WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                              [self.model, *part])
            found.update({key: np.frombuffer(vec, dtype=np.float32) for key, vec in rows})
        return found

    def _keep(self, keys: list[bytes], vectors: np.ndarray, hits: list[bytes]) -> None:
        """Store new vectors, mark the hits as used now, and drop the least recently used beyond MAX_ROWS."""
        now = time.time()
        try:
            with self._open() as db:
                db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)",
                               [(self.model, k, np.ascontiguousarray(v, dtype=np.float32).tobytes(), now)
                                for k, v in zip(keys, vectors)])
                for at in range(0, len(hits), _BATCH):
                    part = hits[at:at + _BATCH]
                    db.execute(f"UPDATE vectors SET used = ? WHERE model = ? AND key IN ({','.join('?' * len(part))})",
                               [now, self.model, *part])
                extra = db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] - MAX_ROWS
                if extra > 0:
                    db.execute("DELETE FROM vectors WHERE (model, key) IN "
                               "(SELECT model, key FROM vectors ORDER BY used LIMIT ?)", (extra,))
        except (sqlite3.Error, OSError):
            pass
