"""Incremental ingest: walk corpora, re-chunk and re-embed only files whose content changed.

Two phases, so readers never wait on the expensive part: files are hashed, chunked and embedded first, with
no lock held; then, under the index's write lease (Store.lease: one writer at a time across processes and
hosts), the plan is re-checked against the manifest as stored now (another writer may have committed
meanwhile), chunks are upserted (ids are content hashes, so a retry is idempotent), the manifest is replaced
(the moment the change becomes visible: readers only see chunks the manifest lists), and stale chunks are
deleted. A writer killed anywhere leaves at worst chunks the manifest does not list, which readers ignore and
the next writer deletes under the lease before doing anything else.

An index built with another embedding model, dimension or chunker version is refused with one line naming
what differs (`brain ingest --rebuild` starts it over): chunks of two versions are never mixed.
"""
from __future__ import annotations

import fnmatch
import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from brain import BrainError, Changed, NotFound
from brain.chunking import CHUNKER_VERSION, SUPPORTED_SUFFIXES, Chunk, UnsupportedFile, chunk_file
from brain.config import DEFAULT_MAX_FILE_BYTES, CorpusSpec, Settings
from brain.embed import Embedder
from brain.embed_cache import EmbeddingCache
from brain.lexical import LexicalIndex
from brain.store import Manifest, Store, chunk_metadata, file_key, open_store
from brain.store.base import RECORDS_CORPUS

_SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", ".brain", ".pytest_cache", ".cute", ".whl"}


@dataclass
class Committed:
    """The generation a write committed, read back whole: the writer's process installs it as its snapshot."""
    manifest: Manifest
    ids: list[str]
    texts: list[str]
    metas: list[dict]
    lexical: LexicalIndex
    vectors: np.ndarray


@dataclass
class Summary:
    """What a write did. Every file seen is exactly one of changed (new or edited), unchanged or skipped;
    removed files are those gone from their corpus."""
    files_seen: int = 0
    files_changed: int = 0
    files_removed: int = 0
    skipped: list[str] = field(default_factory=list)  # "path: reason"
    files_unchanged: int = 0
    chunks_added: int = 0
    chunks_removed: int = 0
    chunks_embedded: int = 0
    seconds: float = 0.0
    committed: Committed | None = field(default=None, repr=False)  # what this write made visible, if anything

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "committed"}

    @classmethod
    def of(cls, d: dict) -> "Summary":
        """The Summary of an as_dict() answer (a write done by a server)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "committed"})

    def line(self) -> str:
        return (f"files: {self.files_seen} seen: {self.files_changed} changed, {self.files_unchanged} unchanged, "
                f"{len(self.skipped)} skipped; {self.files_removed} removed · chunks: {self.chunks_added} added, "
                f"{self.chunks_removed} removed, {self.chunks_embedded} embedded · {self.seconds:.2f} s")


def _matches(rel: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or (p.startswith("**/") and fnmatch.fnmatch(rel, p[3:])) for p in patterns)


def discover(spec: CorpusSpec, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> tuple[list[tuple[Path, str]], list[str]]:
    """Files of a corpus as (path, source relative to its root), and skipped files with the reason (a link out
    of the corpus, a format not supported, a file over `max_bytes`)."""
    root = spec.root
    if root.is_file():
        too_big = _too_big(root, root.name, max_bytes)
        return ([], [too_big]) if too_big else ([(root, root.name)], [])
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
        too_big = _too_big(path, rel, max_bytes)
        if too_big:
            skipped.append(too_big)
            continue
        files.append((path, rel))
    return files, skipped


def _too_big(path: Path, rel: str, max_bytes: int) -> str | None:
    try:
        size = path.stat().st_size
    except OSError:
        return None  # gone meanwhile: the reader says so
    if size <= max_bytes:
        return None
    return f"{rel}: {size / 1e6:.1f} MB, over the limit of {max_bytes / 1e6:g} MB per file (BRAIN_MAX_FILE_MB)"


def _hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Prepared:
    """One file's new version, chunked and embedded (outside the lease)."""
    chunks: list[Chunk]
    vectors: np.ndarray
    embedded: int = 0  # how many of the vectors were computed (the others came from the embedding cache)


@dataclass
class Plan:
    """What a write changes: new file versions, files gone, corpora (re)declared."""
    new: dict[str, tuple[str, dict, Prepared]] = field(default_factory=dict)  # key -> (hash, stat, prepared)
    gone: list[str] = field(default_factory=list)
    corpora: dict[str, dict] = field(default_factory=dict)
    drop_corpora: list[str] = field(default_factory=list)
    touched: dict[str, int] = field(default_factory=dict)  # key -> new mtime_ns (same content)


class Ingester:
    def __init__(self, settings: Settings, store: Store | None = None, embedder: Embedder | None = None,
                 current=lambda: None):
        self.settings = settings
        self.store = store or open_store(settings)
        self.embedder = embedder or Embedder(settings.model, settings.device)
        self.vectors = EmbeddingCache(settings.home, settings.model)
        self.current = current  # the view this process holds (ids, texts, metas, vectors, generation), if any

    # ---- compatibility --------------------------------------------------------------------------
    def check_writable(self, m: Manifest, dim: int | None = None) -> None:
        """Refuse to write into an index built by another chunker or model dimension (load_manifest already
        refused another model or index name)."""
        if m.chunker and m.chunker != CHUNKER_VERSION:
            raise BrainError(f"index '{self.store.index}' was chunked by chunker version {m.chunker}, this brain "
                             f"has version {CHUNKER_VERSION}; run `brain ingest --rebuild` (or use another "
                             "BRAIN_INDEX) rather than mix the two")
        if dim and m.dim and m.dim != dim:
            raise BrainError(f"index '{self.store.index}' holds {m.dim}-dimensional embeddings, model "
                             f"'{self.settings.model}' makes {dim}; run `brain ingest --rebuild`")

    def check_folder_names(self, m: Manifest, specs: list[CorpusSpec]) -> None:
        """A folder corpus cannot take the name of an upload corpus or of the written records: the folder's
        scan would remove the stored files' chunks and leave the files where nothing can reach them."""
        for spec in specs:
            if spec.name == RECORDS_CORPUS or self.store.is_upload_corpus(spec.name, m.corpora.get(spec.name)):
                raise BrainError(f"corpus '{spec.name}' holds uploaded documents or written records; ingest the "
                                 "folder under another name (--corpus)")

    # ---- phase 1: read, chunk, embed (no lock) --------------------------------------------------
    def prepare(self, chunks: list[Chunk], progress: bool = False) -> Prepared:
        chunks = _dedupe(chunks)
        vectors, embedded = self.embed(chunks, progress)
        return Prepared(chunks, vectors, embedded)

    def embed(self, chunks: list[Chunk], progress: bool = False) -> tuple[np.ndarray, int]:
        """Vectors of `chunks` and how many had to be computed: a text embedded before comes from the cache."""
        texts = [c.embedding_text() for c in chunks]
        files = [f"{c.corpus}/{c.source}" for c in chunks]
        return self.vectors.encode(texts, lambda todo: self.embedder.encode(
            [texts[i] for i in todo], progress=progress, groups=[files[i] for i in todo]))

    def _scan(self, m: Manifest, specs: list[CorpusSpec], s: Summary, cache: dict, progress: bool) -> Plan:
        """The plan that brings `m` in line with the files of `specs`; chunks and embeds what `cache` (keyed
        by (file key, content hash)) does not hold yet."""
        plan = Plan()
        todo: list[tuple[str, Path, str, dict]] = []
        seen: set[str] = set()
        for spec in specs:
            files, skipped = discover(spec, self.settings.max_file_bytes)
            s.skipped += [f"{spec.name}/{x}" for x in skipped]
            s.files_seen += len(files) + len(skipped)
            plan.corpora[spec.name] = {"root": str(spec.root), "include": list(spec.include),
                                       "exclude": list(spec.exclude)}
            for path, rel in files:
                key = file_key(spec.name, rel)
                seen.add(key)
                st = path.stat()
                entry = m.files.get(key)
                if entry and entry["size"] == st.st_size and entry["mtime_ns"] == st.st_mtime_ns:
                    s.files_unchanged += 1
                    continue  # unchanged by stat: no read, no hash
                digest = _hash(path)
                if entry and entry["hash"] == digest:
                    plan.touched[key] = st.st_mtime_ns
                    s.files_unchanged += 1
                    continue
                todo.append((key, path, digest, {"size": st.st_size, "mtime_ns": st.st_mtime_ns}))
        # files gone from a corpus we just scanned (other corpora are left as they are)
        scanned = {spec.name for spec in specs}
        plan.gone = [k for k in m.files if k not in seen and k.split(":", 1)[0] in scanned]

        # chunk every changed file first, so one bad file is skipped by name and costs nothing else
        fresh: list[tuple[str, str, dict, list[Chunk]]] = []
        for key, path, digest, stat in todo:
            if (key, digest) in cache:
                plan.new[key] = (digest, stat, cache[key, digest])
                continue
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
            fresh.append((key, digest, stat, _dedupe(chunks)))
        all_chunks = [c for *_, chunks in fresh for c in chunks]
        vectors, embedded = self.embed(all_chunks, progress)  # one call for every file: batches stay full
        s.chunks_embedded += embedded
        at = 0
        for key, digest, stat, chunks in fresh:
            cache[key, digest] = Prepared(chunks, vectors[at:at + len(chunks)])
            at += len(chunks)
            plan.new[key] = (digest, stat, cache[key, digest])
        return plan

    # ---- phase 2: commit under the lease --------------------------------------------------------
    def run(self, specs: list[CorpusSpec], progress: bool = False) -> Summary:
        """Bring the index in line with `specs`. A spec whose root is missing is an error before any write."""
        t0 = time.perf_counter()
        for spec in specs:
            if not spec.root.exists():
                raise BrainError(f"path does not exist: {spec.root}")
        cache: dict = {}
        embedded = Summary()
        m = self.store.load_manifest()
        self.check_writable(m)
        self.check_folder_names(m, specs)
        self._scan(m, specs, embedded, cache, progress)  # the expensive part, with no lock held
        with self.store.lease() as lease:
            m = self.store.load_manifest()  # as stored now: another writer may have committed meanwhile
            self.check_writable(m)
            self.check_folder_names(m, specs)
            s = Summary()
            plan = self._scan(m, specs, s, cache, progress)  # cache hits, bar files another writer changed
            s.chunks_embedded += embedded.chunks_embedded
            self.commit(m, plan, s, lease)
        s.seconds = time.perf_counter() - t0
        return s

    def commit(self, m: Manifest, plan: Plan, s: Summary, lease) -> None:
        """Apply `plan` to `m` (loaded under `lease`): orphans out, new chunks in, manifest, stale chunks out."""
        dim = next((p.vectors.shape[1] for _, _, p in plan.new.values() if len(p.chunks)), None)
        self.check_writable(m, dim)
        before = m.generation
        new_chunks = [c for _, _, p in plan.new.values() for c in p.chunks]
        if new_chunks:  # first: a write the store refuses has deleted nothing
            self.store.upsert(new_chunks, np.concatenate([p.vectors for _, _, p in plan.new.values()
                                                          if len(p.chunks)]))
        changed = self._reconcile(m, {c.id for c in new_chunks})
        stale: list[str] = []  # deleted only once the new manifest is saved
        for key in plan.gone:
            ids = m.files.pop(key)["ids"]
            stale += ids
            s.chunks_removed += len(ids)
            s.files_removed += 1
            changed = True
        for key, (digest, stat, p) in plan.new.items():
            old_ids = set(m.files.get(key, {}).get("ids", []))
            new_ids = [c.id for c in p.chunks]
            replaced = old_ids - set(new_ids)
            stale += replaced
            s.chunks_removed += len(replaced)
            s.chunks_added += len(set(new_ids) - old_ids)
            m.files[key] = {"hash": digest, **stat, "ids": new_ids}
            s.files_changed += 1
            changed = True
        for name in plan.drop_corpora:
            changed |= m.corpora.pop(name, None) is not None
        declared = any(m.corpora.get(name) != spec for name, spec in plan.corpora.items())
        m.corpora.update(plan.corpora)
        for key, mtime in plan.touched.items():
            if key in m.files:
                m.files[key]["mtime_ns"] = mtime
        if changed or not m.last_ingest:
            m.generation += 1
            m.model = self.settings.model
            m.chunker = CHUNKER_VERSION
            m.dim = dim or m.dim
            m.last_ingest = time.time()
            lease.check()  # a writer that lost its lease must not commit over the one that took it
            self.store.save_manifest(m)
            self.store.delete(stale)
            s.committed = self.updated(m, before, plan) or self.read_back(m)
        elif plan.touched or declared:
            lease.check()
            self.store.save_manifest(m)

    def _reconcile(self, m: Manifest, new: set[str]) -> bool:
        """Delete chunks neither the manifest lists nor this write just stored (a writer was killed between its
        writes). Runs under the lease, and only ever on this index's own collection."""
        orphans = list(self.store.stored_ids() - m.ids() - new)
        self.store.delete(orphans)
        return bool(orphans)

    def read_back(self, m: Manifest) -> Committed:
        ids, docs, metas, vectors = self.store.records_with_vectors(m.ids())
        return Committed(m, ids, docs, metas, LexicalIndex.of_chunks(ids, docs, metas), vectors)

    def updated(self, m: Manifest, before: int, plan: Plan) -> Committed | None:
        """The committed generation without reading the index back: the view this process held of generation
        `before` (the one this write started from), less what the write dropped, plus what it stored, in
        read_back's order. None when there is no such view (another process wrote meanwhile)."""
        view = self.current()
        if view is None or view.generation != before:
            return None
        keep = m.ids()
        rows = {i: (t, meta, n) for n, (i, t, meta) in enumerate(zip(view.ids, view.texts, view.metas)) if i in keep}
        fresh = {c.id: (c, p.vectors[n]) for _, _, p in plan.new.values() for n, c in enumerate(p.chunks)}
        if set(rows) | set(fresh) != keep:
            return None
        ids = sorted(keep, key=lambda i: _position(fresh[i][0] if i in fresh else rows[i][1]))
        dim = next((v.shape[0] for _, v in fresh.values()), view.vectors.shape[1] if view.vectors.ndim == 2 else 0)
        texts, metas, vectors = [], [], np.zeros((len(ids), dim), dtype=np.float32)
        for n, i in enumerate(ids):
            if i in fresh:
                c, vectors[n] = fresh[i]
                texts.append(c.text)
                metas.append(chunk_metadata(c))
            else:
                text, meta, at = rows[i]
                texts.append(text)
                metas.append(meta)
                vectors[n] = view.vectors[at]
        return Committed(m, ids, texts, metas, LexicalIndex.of_chunks(ids, texts, metas), vectors)

    # ---- uploaded documents ---------------------------------------------------------------------
    def put_document(self, corpus: str, name: str, text: str, prepared: Prepared, base: str | None = None
                     ) -> Summary:
        """Store one uploaded file (already chunked and embedded) in an upload corpus and index it. With `base`,
        only if the stored file's text is still `base` ("" for no file), else Changed."""
        t0 = time.perf_counter()
        s = Summary(files_seen=1, chunks_embedded=prepared.embedded)
        with self.store.lease() as lease:
            m = self.store.load_manifest()
            known = m.corpora.get(corpus)
            if known and not self.store.is_upload_corpus(corpus, known):
                raise BrainError(f"corpus '{corpus}' is a folder corpus, not one the index stores; remove it with "
                                 f"`brain ingest --remove {corpus}` first")
            if base is not None and (self.store.read_upload(corpus, name) or "") != base:
                raise Changed(f"'{corpus}/{name}' changed meanwhile")
            key = file_key(corpus, name)
            digest = hashlib.sha256(text.encode()).hexdigest()
            plan = Plan(corpora={corpus: {"root": "", "include": [], "exclude": [], "uploads": True}})
            if m.files.get(key, {}).get("hash") != digest:
                plan.new[key] = (digest, {"size": len(text.encode()), "mtime_ns": time.time_ns()}, prepared)
            else:
                s.chunks_embedded, s.files_unchanged = 0, 1
            self.store.save_upload(corpus, name, text)  # before the manifest: a listed file is always readable
            self.commit(m, plan, s, lease)
        s.seconds = time.perf_counter() - t0
        return s

    def drop_document(self, corpus: str, name: str) -> Summary:
        """Remove an uploaded file and its chunks (the corpus goes too when it is left empty)."""
        t0 = time.perf_counter()
        s = Summary()
        with self.store.lease() as lease:
            m = self.store.load_manifest()
            key = file_key(corpus, name)
            if key not in m.files:
                raise NotFound(f"no document '{corpus}/{name}' (GET /sources lists them)")
            if not self.store.is_upload_corpus(corpus, m.corpora.get(corpus)):
                raise BrainError(f"'{corpus}/{name}' belongs to a corpus on disk; only uploaded documents can "
                                 "be deleted")
            plan = Plan(gone=[key])
            if not any(k.split(":", 1)[0] == corpus for k in m.files if k != key):
                plan.drop_corpora.append(corpus)
            self.commit(m, plan, s, lease)
            self.store.delete_upload(corpus, name)  # after the manifest: a listed file is always readable
        s.seconds = time.perf_counter() - t0
        return s

    def remove_corpus(self, name: str) -> Summary:
        t0 = time.perf_counter()
        s = Summary()
        with self.store.lease() as lease:
            m = self.store.load_manifest()
            keys = [k for k in m.files if k.split(":", 1)[0] == name]
            if not keys and name not in m.corpora:
                raise NotFound(f"no corpus named '{name}' (known: {', '.join(sorted(m.corpora)) or 'none'})")
            uploads = self.store.is_upload_corpus(name, m.corpora.get(name))
            self.commit(m, Plan(gone=keys, drop_corpora=[name]), s, lease)
            if uploads:
                for key in keys:
                    self.store.delete_upload(name, key.split(":", 1)[1])
        s.seconds = time.perf_counter() - t0
        return s


def _position(c: Chunk | dict) -> tuple:
    """Where a chunk (or its stored metadata) sorts in a view: by corpus, source and lines."""
    if isinstance(c, Chunk):
        return c.corpus, c.source, c.start_line, c.end_line
    return c["corpus"], c["source"], c["start_line"], c["end_line"]


def _dedupe(chunks: list[Chunk]) -> list[Chunk]:
    """Identical chunks in one file (same text at the same lines) would collide on id; keep the first."""
    seen, out = set(), []
    for c in chunks:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out
