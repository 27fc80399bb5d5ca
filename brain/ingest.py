"""Incremental ingest: walk corpora, re-chunk and re-embed only files whose content changed.

Order of writes: new chunks are upserted (ids are content hashes, so a retry is idempotent), then the
manifest is replaced atomically (the moment the change becomes visible: readers only see chunks the manifest
lists), then stale chunks are deleted. A run killed anywhere leaves at worst chunks the manifest does not
list, which readers ignore and the next run deletes before doing anything else.
"""
from __future__ import annotations

import fnmatch
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from brain import BrainError, NotFound
from brain.chunking import CHUNKER_VERSION, SUPPORTED_SUFFIXES, Chunk, UnsupportedFile, chunk_file
from brain.config import CorpusSpec, Settings
from brain.embed import Embedder
from brain.lexical import LexicalIndex
from brain.store import Manifest, Store, file_key

_SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", ".brain", ".pytest_cache", ".cute", ".whl"}


@dataclass
class Summary:
    files_seen: int = 0
    files_changed: int = 0
    files_removed: int = 0
    skipped: list[str] = field(default_factory=list)  # "path: reason"
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    def line(self) -> str:
        return (f"files: {self.files_seen} seen, {self.files_changed} changed, {self.files_removed} removed, "
                f"{len(self.skipped)} skipped · chunks: {self.chunks_added} added, {self.chunks_removed} removed, "
                f"{self.chunks_embedded} embedded · {self.seconds:.2f} s")


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or (p.startswith("**/") and fnmatch.fnmatch(rel, p[3:])) for p in patterns)


def discover(spec: CorpusSpec) -> tuple[list[tuple[Path, str]], list[str]]:
    """Files of a corpus as (path, source relative to its root), and skipped files with the reason."""
    root = spec.root
    if root.is_file():
        return [(root, root.name)], []
    files, skipped = [], []
    for path in sorted(root.rglob("*")):
        rel_parts = path.relative_to(root).parts
        if any(p in _SKIP_DIRS or p.startswith(".") for p in rel_parts) or not path.is_file():
            continue
        rel = "/".join(rel_parts)
        if not path.resolve().is_relative_to(root.resolve()):
            skipped.append(f"{rel}: a link to a file outside the corpus")
            continue
        if spec.include and not _matches(rel, spec.include):
            continue
        if spec.exclude and _matches(rel, spec.exclude):
            continue
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            skipped.append(f"{rel}: unsupported format '{path.suffix or 'no extension'}'")
            continue
        files.append((path, rel))
    return files, skipped


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Ingester:
    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.store = store or Store(settings)
        self.embedder = embedder or Embedder(settings.model, settings.device)

    def run(self, specs: list[CorpusSpec], progress: bool = False) -> Summary:
        """Bring the index in line with `specs`. A spec whose root is missing is an error before any write."""
        t0 = time.perf_counter()
        for spec in specs:
            if not spec.root.exists():
                raise BrainError(f"path does not exist: {spec.root}")
        s = Summary()
        m = self.store.load_manifest()
        changed = self._reconcile(m)
        touched = False  # only mtimes changed: save the manifest, but readers have nothing new to see

        rechunk_all = m.chunker != CHUNKER_VERSION  # the chunker changed since this index was built
        todo: list[tuple[str, Path, str, dict]] = []  # (key, path, hash, stat) of changed files
        seen: set[str] = set()
        for spec in specs:
            files, skipped = discover(spec)
            s.skipped += [f"{spec.name}/{x}" for x in skipped]
            m.corpora[spec.name] = {"root": str(spec.root), "include": list(spec.include),
                                    "exclude": list(spec.exclude)}
            for path, rel in files:
                key = file_key(spec.name, rel)
                seen.add(key)
                s.files_seen += 1
                st = path.stat()
                entry = m.files.get(key)
                if entry and not rechunk_all and entry["size"] == st.st_size and entry["mtime_ns"] == st.st_mtime_ns:
                    continue  # unchanged by stat: no read, no hash
                digest = _hash(path)
                if entry and not rechunk_all and entry["hash"] == digest:
                    entry["mtime_ns"] = st.st_mtime_ns
                    touched = True
                    continue
                todo.append((key, path, digest, {"size": st.st_size, "mtime_ns": st.st_mtime_ns}))

        # files gone from a corpus we just scanned (other corpora are left as they are)
        scanned = {spec.name for spec in specs}
        gone = [k for k in m.files if k not in seen and k.split(":", 1)[0] in scanned]
        stale: list[str] = []  # deleted only once the new manifest is saved
        for key in gone:
            ids = m.files.pop(key)["ids"]
            stale += ids
            s.chunks_removed += len(ids)
            s.files_removed += 1
            changed = True

        # chunk every changed file first, so one bad file is skipped by name and costs nothing else
        new: list[tuple[str, str, dict, list[Chunk]]] = []
        for key, path, digest, stat in todo:
            corpus, rel = key.split(":", 1)
            try:
                chunks = chunk_file(path, rel)
            except UnsupportedFile as e:
                s.skipped.append(f"{corpus}/{e}")
                continue
            except OSError as e:
                s.skipped.append(f"{corpus}/{rel}: cannot read ({e.strerror})")
                continue
            for c in chunks:
                c.corpus = corpus
            new.append((key, digest, stat, _dedupe(chunks)))

        all_chunks = [c for *_, chunks in new for c in chunks]
        if all_chunks:
            vectors = self.embedder.encode([c.embedding_text() for c in all_chunks], progress=progress)
            s.chunks_embedded = len(all_chunks)
            self.store.upsert(all_chunks, vectors)
        for key, digest, stat, chunks in new:
            old_ids = set(m.files.get(key, {}).get("ids", []))
            new_ids = [c.id for c in chunks]
            replaced = old_ids - set(new_ids)
            stale += replaced
            s.chunks_removed += len(replaced)
            s.chunks_added += len(set(new_ids) - old_ids)
            m.files[key] = {"hash": digest, **stat, "ids": new_ids}
            s.files_changed += 1
            changed = True

        if changed or rechunk_all or not m.last_ingest:
            m.generation += 1
            m.model = self.settings.model
            m.chunker = CHUNKER_VERSION
            m.last_ingest = time.time()
            self.store.save_manifest(m)
            self.store.delete(stale)
            self.rebuild_lexical(m)
        elif touched:
            self.store.save_manifest(m)
        s.seconds = time.perf_counter() - t0
        return s

    def _reconcile(self, m: Manifest) -> bool:
        """Delete chunks the manifest does not list (an earlier ingest was killed between its writes)."""
        if m.model and m.model != self.settings.model:
            raise BrainError(f"this index was embedded with model '{m.model}', not '{self.settings.model}'; "
                             "use another BRAIN_HOME or `brain ingest --rebuild`")
        orphans = list(self.store.stored_ids() - m.ids())
        self.store.delete(orphans)
        return bool(orphans)

    def rebuild_lexical(self, m: Manifest) -> LexicalIndex:
        ids, docs, metas = self.store.records(m.ids())
        lex = LexicalIndex.build(ids, [f"{meta['context']}\n{doc}" for doc, meta in zip(docs, metas)])
        self.store.save_lexical(lex, m.generation)
        return lex

    def remove_corpus(self, name: str) -> Summary:
        t0 = time.perf_counter()
        m = self.store.load_manifest()
        keys = [k for k in m.files if k.split(":", 1)[0] == name]
        if not keys and name not in m.corpora:
            raise NotFound(f"no corpus named '{name}' (known: {', '.join(sorted(m.corpora)) or 'none'})")
        s = Summary()
        stale = []
        for key in keys:
            stale += m.files.pop(key)["ids"]
            s.files_removed += 1
        s.chunks_removed = len(stale)
        m.corpora.pop(name, None)
        m.generation += 1
        self.store.save_manifest(m)
        self.store.delete(stale)
        self.rebuild_lexical(m)
        s.seconds = time.perf_counter() - t0
        return s


def _dedupe(chunks: list[Chunk]) -> list[Chunk]:
    """Identical chunks in one file (same text at the same lines) would collide on id; keep the first."""
    seen, out = set(), []
    for c in chunks:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
