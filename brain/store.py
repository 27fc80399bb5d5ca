"""Where chunks live: a Chroma collection (vectors, text, metadata), the ingest manifest, and the bm25 index.

Chroma is the source of truth for chunks. The manifest (content hash and chunk ids per file) makes ingest
incremental; it is replaced atomically, and anything in Chroma the manifest does not know (left by an ingest
killed midway) is deleted by the next ingest. The lexical index is saved with the manifest generation it was
built for; a reader finding it older rebuilds it from Chroma.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from brain import BrainError, Unavailable
from brain.chunking import Chunk
from brain.config import Settings
from brain.lexical import LexicalIndex

MANIFEST_VERSION = 1
_PAGE = 2000  # Chroma get() page size


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass
class Manifest:
    generation: int = 0
    model: str = ""
    chunker: int = 0
    last_ingest: float | None = None
    corpora: dict[str, dict] = field(default_factory=dict)  # name -> {"root", "include", "exclude"}
    files: dict[str, dict] = field(default_factory=dict)  # "corpus:source" -> {"hash","size","mtime_ns","ids"}

    def ids(self) -> set[str]:
        return {i for entry in self.files.values() for i in entry["ids"]}


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
    def __init__(self, settings: Settings):
        self.settings = settings
        self.home = settings.home
        self.manifest_path = self.home / "manifest.json"
        self.lexical_path = self.home / "lexical"
        self._client = None
        self._collection = None

    # ---- Chroma -------------------------------------------------------------------------------
    @property
    def client(self):
        """The Chroma client: an HttpClient when BRAIN_CHROMA_URL is set, else a PersistentClient in the home."""
        if self._client is None:
            import chromadb
            from chromadb.config import Settings as ChromaSettings
            chroma_settings = ChromaSettings(anonymized_telemetry=False)
            try:
                if self.settings.chroma_url:
                    from urllib.parse import urlparse
                    url = urlparse(self.settings.chroma_url)
                    self._client = chromadb.HttpClient(host=url.hostname or "127.0.0.1", port=url.port or 8000,
                                                       ssl=url.scheme == "https", settings=chroma_settings)
                else:
                    self.home.mkdir(parents=True, exist_ok=True)
                    self._client = chromadb.PersistentClient(path=str(self.home / "chroma"), settings=chroma_settings)
            except Exception as e:  # connection refused, corrupt folder, ...
                raise Unavailable(f"cannot open the Chroma store at {self._where()}: {e}") from None
        return self._client

    def _where(self) -> str:
        return self.settings.chroma_url or str(self.home / "chroma")

    def named_collection(self, suffix: str = ""):
        """The index's chunk collection (suffix "") or a side collection of the same index (e.g. "attempts"),
        cosine space, embeddings supplied by us."""
        name = f"{self.settings.collection}-{suffix}" if suffix else self.settings.collection
        try:
            return self.client.get_or_create_collection(name, embedding_function=None,
                                                        configuration={"hnsw": {"space": "cosine"}})
        except BrainError:
            raise
        except Exception as e:
            raise Unavailable(f"cannot open the Chroma collection '{name}' at {self._where()}: {e}") from None

    @property
    def collection(self):
        if self._collection is None:
            self._collection = self.named_collection()
        return self._collection

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        for i in range(0, len(chunks), _PAGE):
            part = chunks[i:i + _PAGE]
            self.collection.upsert(ids=[c.id for c in part], embeddings=vectors[i:i + _PAGE],
                                   documents=[c.text for c in part], metadatas=[chunk_metadata(c) for c in part])

    def delete(self, ids: list[str]) -> None:
        for i in range(0, len(ids), _PAGE):
            self.collection.delete(ids=ids[i:i + _PAGE])

    def stored_ids(self) -> set[str]:
        out: set[str] = set()
        offset = 0
        while True:
            page = self.collection.get(include=[], limit=_PAGE, offset=offset)["ids"]
            out.update(page)
            if len(page) < _PAGE:
                return out
            offset += _PAGE

    def records(self, only: set[str] | None = None) -> tuple[list[str], list[str], list[dict]]:
        """Stored chunks (those in `only`, if given): (ids, texts, metadatas), ordered by source and line."""
        ids, docs, metas, offset = [], [], [], 0
        while True:
            page = self.collection.get(include=["documents", "metadatas"], limit=_PAGE, offset=offset)
            for i, doc, meta in zip(page["ids"], page["documents"], page["metadatas"]):
                if only is None or i in only:
                    ids.append(i)
                    docs.append(doc)
                    metas.append(meta)
            if len(page["ids"]) < _PAGE:
                break
            offset += _PAGE
        order = sorted(range(len(ids)), key=lambda i: (metas[i]["corpus"], metas[i]["source"],
                                                       metas[i]["start_line"], metas[i]["end_line"]))
        return [ids[i] for i in order], [docs[i] for i in order], [metas[i] for i in order]

    # ---- manifest -----------------------------------------------------------------------------
    def load_manifest(self) -> Manifest:
        if not self.manifest_path.exists():
            return Manifest()
        try:
            raw = json.loads(self.manifest_path.read_text())
            if raw.get("version") != MANIFEST_VERSION:
                raise ValueError(f"version {raw.get('version')!r}, expected {MANIFEST_VERSION}")
            return Manifest(raw["generation"], raw.get("model", ""), raw.get("chunker", 0), raw.get("last_ingest"),
                            raw.get("corpora", {}), raw["files"])
        except (ValueError, KeyError, TypeError) as e:
            raise Unavailable(f"the ingest manifest {self.manifest_path} is corrupt ({e}); "
                             f"run `brain ingest --rebuild` to re-create the index") from None

    def save_manifest(self, m: Manifest) -> None:
        _atomic_write(self.manifest_path, json.dumps({
            "version": MANIFEST_VERSION, "generation": m.generation, "model": m.model, "chunker": m.chunker,
            "last_ingest": m.last_ingest, "corpora": m.corpora, "files": m.files}))

    def reset(self) -> None:
        """Forget everything (used by --rebuild after a corrupt manifest)."""
        try:
            ids = list(self.stored_ids())
            self.delete(ids)
        except BrainError:
            shutil.rmtree(self.home / "chroma", ignore_errors=True)
            self._client = self._collection = None
        self.manifest_path.unlink(missing_ok=True)
        shutil.rmtree(self.lexical_path, ignore_errors=True)

    # ---- lexical ------------------------------------------------------------------------------
    def save_lexical(self, lex: LexicalIndex, generation: int) -> None:
        tmp = Path(tempfile.mkdtemp(dir=self.home, prefix="lexical.tmp"))
        lex.save(tmp)
        (tmp / "generation").write_text(str(generation))
        old = self.home / f"lexical.old.{time.time_ns()}"
        if self.lexical_path.exists():
            os.replace(self.lexical_path, old)
        os.replace(tmp, self.lexical_path)
        shutil.rmtree(old, ignore_errors=True)

    def load_lexical(self, generation: int) -> LexicalIndex | None:
        try:
            if int((self.lexical_path / "generation").read_text()) != generation:
                return None
            return LexicalIndex.load(self.lexical_path)
        except (OSError, ValueError):
            return None
