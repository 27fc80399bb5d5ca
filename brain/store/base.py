"""What every index store does, whichever backend holds it: chunks in Chroma (vectors, text, metadata), the
manifest that says which of them are visible, the write lease, and uploaded files.

An index has a name (Settings.index, from BRAIN_INDEX) and every Chroma collection it owns derives from it:
`<index>` holds the chunks, `<index>-<suffix>` its side collections (SIDE_SUFFIXES: `-meta`, `-uploads`,
`-records`, `-attempts`; and `-lease-<n>`). An index name may not end in such a suffix, so nothing here ever
touches another index's collections.

Chroma is the source of truth for chunks. The manifest (content hash and chunk ids per file) makes ingest
incremental and says which stored chunks are visible: anything the manifest does not list (left by a writer
killed midway) is deleted by the next writer, under the lease. The backends (local.py: an embedded Chroma in
$BRAIN_HOME; server.py: a Chroma server shared by several hosts) differ in where the manifest, the lease and
uploads live.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from brain import BrainError, Unavailable
from brain.chunking import Chunk
from brain.config import Settings

MANIFEST_VERSION = 1
PAGE = 2000  # Chroma get() page size
READ_TRIES = 4  # tries of one page read that races a write
LEGACY_INDEX = "brain"  # what a manifest written before index names were recorded was built as
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,100}[A-Za-z0-9]$")
# `<index>-<suffix>`: the collections an index owns beside its chunks. An index name may not end in one of
# them, so no index's chunk collection is another index's side collection (which its ingest would clean up).
SIDE_SUFFIXES = ("meta", "uploads", "attempts", "records")
# The corpus of attempt records written back (`brain record`): documents the store holds, like uploads, so every
# host serving the index writes them; unlike uploads they survive `brain ingest --rebuild`.
RECORDS_CORPUS = "records"
_SIDE = re.compile(r"-(" + "|".join(SIDE_SUFFIXES) + r"|lease-\d+)$")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _umask()  # read once: os.umask can only be read by setting it, which races other threads


def atomic_write(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8) whole: readers see the old file or the new one. The temporary file is
    hidden (a dot name, which no ingest lists) and removed when the write fails; the file gets the mode any new
    file gets (0666 less the umask), not mkstemp's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~UMASK)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@dataclass
class Manifest:
    generation: int = 0
    model: str = ""
    chunker: int = 0
    last_ingest: float | None = None
    corpora: dict[str, dict] = field(default_factory=dict)  # name -> {"root", "include", "exclude"[, "uploads"]}
    files: dict[str, dict] = field(default_factory=dict)  # "corpus:source" -> {"hash","size","mtime_ns","ids"}
    index: str = ""  # the index name it was written for
    dim: int = 0  # embedding dimension

    def ids(self) -> set[str]:
        return {i for entry in self.files.values() for i in entry["ids"]}

    def to_json(self) -> str:
        return json.dumps({"version": MANIFEST_VERSION, "generation": self.generation, "model": self.model,
                           "chunker": self.chunker, "last_ingest": self.last_ingest, "corpora": self.corpora,
                           "files": self.files, "index": self.index, "dim": self.dim})

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        raw = json.loads(text)
        if raw.get("version") != MANIFEST_VERSION:
            raise ValueError(f"version {raw.get('version')!r}, expected {MANIFEST_VERSION}")
        return cls(raw["generation"], raw.get("model", ""), raw.get("chunker", 0), raw.get("last_ingest"),
                   raw.get("corpora", {}), raw["files"], raw.get("index") or LEGACY_INDEX, raw.get("dim", 0))


def file_key(corpus: str, source: str) -> str:
    return f"{corpus}:{source}"


def chunk_metadata(c: Chunk) -> dict:
    meta = {
        "corpus": c.corpus, "source": c.source, "start_line": c.start_line, "end_line": c.end_line,
        "section": c.section, "kind": c.kind, "language": c.language, "title": c.title, "context": c.context,
        "tags": ",".join(c.tags), "patterns": ",".join(c.patterns), "region": c.region,
    }
    # one boolean key per tag / pattern so Chroma can filter on them
    meta.update({f"tag:{t}": True for t in c.tags})
    meta.update({f"pattern:{p}": True for p in c.patterns})
    return meta


class Store:
    """The interface both backends share. Subclasses supply the Chroma client, the manifest's home, the
    generation poll, the lease, uploads and reset."""

    server = False

    def __init__(self, settings: Settings):
        self.settings = settings
        self.home = settings.home
        self.index = settings.index
        if not _NAME.match(self.index) or ".." in self.index:
            raise BrainError(f"index name '{self.index}' (BRAIN_INDEX) must be 3-102 letters, digits, '.', '_' "
                             "or '-', starting and ending with a letter or digit")
        if _SIDE.search(self.index):
            raise BrainError(f"index name '{self.index}' (BRAIN_INDEX) ends like a side collection of another "
                             f"index (-{', -'.join(SIDE_SUFFIXES)}, -lease-N); choose another name")
        self._client = None
        self._collection = None
        self._client_lock = threading.Lock()
        self._generation: tuple[float, object, int] | None = None  # (checked at, file stat or None, generation)

    # ---- Chroma -------------------------------------------------------------------------------
    @property
    def client(self):
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    try:
                        self._client = self._open_client()
                    except BrainError:
                        raise
                    except Exception as e:  # connection refused, corrupt folder, ...
                        raise Unavailable(f"cannot open the Chroma store at {self.where()}: {e}") from None
        return self._client

    def _open_client(self):
        raise NotImplementedError

    def where(self) -> str:
        raise NotImplementedError

    def collection_name(self, suffix: str = "") -> str:
        if suffix and suffix not in SIDE_SUFFIXES and not suffix.startswith("lease-"):
            raise ValueError(f"'{suffix}' is not a side collection of an index (SIDE_SUFFIXES)")
        return f"{self.index}-{suffix}" if suffix else self.index

    def named_collection(self, suffix: str = ""):
        """The index's chunk collection (suffix "") or a side collection of the same index (e.g. "attempts"),
        cosine space, embeddings supplied by us."""
        name = self.collection_name(suffix)
        try:
            return self.client.get_or_create_collection(name, embedding_function=None,
                                                        configuration={"hnsw": {"space": "cosine"}})
        except BrainError:
            raise
        except Exception as e:
            raise Unavailable(f"cannot open the Chroma collection '{name}' at {self.where()}: {e}") from None

    @property
    def collection(self):
        if self._collection is None:
            self._collection = self.named_collection()
        return self._collection

    def _forget_collections(self) -> None:
        self._collection = None

    def claim(self, role: str | None = None) -> None:
        """Become the one process that opens this index (local: the owner lock, brain/owner.py). A server
        backend has no owner: every process is its client."""

    def owned_here(self) -> bool:
        """May this process open the store without waiting on another's (always, on a server backend)?"""
        return True

    def reopen(self) -> None:
        """Drop the client and open it afresh on next use: the way out of a view another process left stale."""
        with self._client_lock:
            client, self._client = self._client, None
            self._forget_collections()
        if client is not None and hasattr(client, "close"):
            client.close()

    def close(self) -> None:
        """Let go of the store (its client; locally also the owner lock, so another process may open it)."""
        self.reopen()

    def side(self, suffix: str = ""):
        """The chunk collection (suffix "") or a side collection, as the cached attribute or opened now."""
        return self.collection if not suffix else self.named_collection(suffix)

    def call(self, what: str, fn, *args, **kwargs):
        """A Chroma call whose failure (server gone, ...) is one clear line, not a traceback."""
        try:
            return fn(*args, **kwargs)
        except BrainError:
            raise
        except Exception as e:
            if "does not exist" in str(e):  # dropped by another process's --rebuild: re-open on the next call
                self._forget_collections()
            raise Unavailable(f"Chroma at {self.where()} failed to {what}: {e}") from None

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        for i in range(0, len(chunks), PAGE):
            part = chunks[i:i + PAGE]
            self.call("store chunks", self.collection.upsert, ids=[c.id for c in part],
                      embeddings=vectors[i:i + PAGE], documents=[c.text for c in part],
                      metadatas=[chunk_metadata(c) for c in part])

    def delete(self, ids: list[str]) -> None:
        for i in range(0, len(ids), PAGE):
            self.call("delete chunks", self.collection.delete, ids=ids[i:i + PAGE])

    def pages(self, suffix: str, include: list[str], what: str = "read chunks"):
        """Every record of the collection `suffix` ("": the chunks; else a side collection), one get() page at
        a time."""
        offset = 0
        while True:
            page = self._page(suffix, include, offset, what)
            yield page
            if len(page["ids"]) < PAGE:
                return
            offset += PAGE

    def _page(self, suffix: str, include: list[str], offset: int, what: str) -> dict:
        """One page. An embedded Chroma read racing a write in this process fails now and then ("Error finding
        id") with the index intact: the page is read again (readers that need one generation check it
        afterwards). One that keeps failing is a view made stale by another process's writes: the client is
        reopened, then the page read afresh."""
        tries, reopened = 0, False
        while True:
            try:
                return self.call(what, self.side(suffix).get, include=include, limit=PAGE, offset=offset)
            except Unavailable as e:
                if "Internal error" not in str(e):
                    raise
                tries += 1
                if tries < READ_TRIES:
                    time.sleep(0.02 * tries)
                elif reopened:
                    raise
                else:
                    self.reopen()
                    tries, reopened = 0, True

    def stored_ids(self) -> set[str]:
        return {i for page in self.pages("", [], "list chunks") for i in page["ids"]}

    def records(self, only: set[str] | None = None) -> tuple[list[str], list[str], list[dict]]:
        """Stored chunks (those in `only`, if given): (ids, texts, metadatas), ordered by source and line."""
        return self._records(only, False)[:3]

    def records_with_vectors(self, only: set[str] | None = None
                             ) -> tuple[list[str], list[str], list[dict], np.ndarray]:
        """As records(), plus the vectors (float32, row i is ids[i]) read in the same pages."""
        return self._records(only, True)

    def _records(self, only: set[str] | None, vectors: bool):
        ids, docs, metas, vecs = [], [], [], []
        for page in self.pages("", ["documents", "metadatas"] + (["embeddings"] if vectors else [])):
            rows = page["embeddings"] if vectors else [None] * len(page["ids"])
            for i, doc, meta, vec in zip(page["ids"], page["documents"], page["metadatas"], rows):
                if only is None or i in only:
                    ids.append(i)
                    docs.append(doc)
                    metas.append(meta)
                    vecs.append(vec)
        order = sorted(range(len(ids)), key=lambda i: (metas[i]["corpus"], metas[i]["source"],
                                                       metas[i]["start_line"], metas[i]["end_line"]))
        matrix = np.asarray([vecs[i] for i in order], dtype=np.float32) if vectors and ids \
            else np.zeros((0, 0), np.float32)
        return [ids[i] for i in order], [docs[i] for i in order], [metas[i] for i in order], matrix

    # ---- manifest -----------------------------------------------------------------------------
    def _manifest_text(self) -> str | None:
        """The stored manifest's JSON, or None when the index has none yet."""
        raise NotImplementedError

    def where_manifest(self) -> str:
        raise NotImplementedError

    def load_manifest(self) -> Manifest:
        """The manifest as stored now; one built for another index name or embedding model is refused."""
        try:
            text = self._manifest_text()
            if text is None:
                return Manifest(index=self.index)
            m = Manifest.from_json(text)
        except (ValueError, KeyError, TypeError) as e:
            raise Unavailable(f"the ingest manifest {self.where_manifest()} is corrupt ({e}); "
                              f"run `brain ingest --rebuild` to re-create the index") from None
        if m.index != self.index:
            raise Unavailable(f"the index in {self.where()} was built as '{m.index}', not '{self.index}'; set "
                              f"BRAIN_INDEX={m.index} to use it, or run `brain ingest --rebuild`")
        if m.model and m.model != self.settings.model:
            raise Unavailable(f"index '{self.index}' was embedded with model '{m.model}', not "
                              f"'{self.settings.model}'; set BRAIN_MODEL={m.model}, use another BRAIN_INDEX, "
                              "or run `brain ingest --rebuild`")
        return m

    def save_manifest(self, m: Manifest) -> None:
        raise NotImplementedError

    def generation(self, max_age: float = 1.0) -> int:
        """The stored manifest's generation, cheaply (server mode: at most `max_age` seconds old; 0: now)."""
        raise NotImplementedError

    def reset(self) -> None:
        """Forget this index (`brain ingest --rebuild`): its chunks, manifest and uploads; written records
        (RECORDS_CORPUS, re-indexed by the caller), side collections of other features (attempt records, ...)
        and other indexes are left alone. Takes the write lease."""
        raise NotImplementedError

    def lease(self, wait: float | None = None):
        """One writer at a time for this index, across threads, processes and (server mode) hosts: a context
        manager yielding an object whose `check()` raises if the lease was lost (call it before committing)."""
        raise NotImplementedError

    # ---- uploaded files -----------------------------------------------------------------------
    def is_upload_corpus(self, name: str, spec: dict | None) -> bool:
        return bool(spec) and bool(spec.get("uploads"))

    def save_upload(self, corpus: str, name: str, text: str) -> None:
        raise NotImplementedError

    def read_upload(self, corpus: str, name: str) -> str | None:
        raise NotImplementedError

    def list_uploads(self, corpus: str) -> list[str]:
        """Names of the files stored for `corpus`, listed in the manifest or not."""
        raise NotImplementedError

    def delete_upload(self, corpus: str, name: str) -> None:
        raise NotImplementedError
