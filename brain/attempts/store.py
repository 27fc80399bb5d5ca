"""Attempt records in a side Chroma collection of the index (`Store.named_collection("attempts")`), so they live
wherever the index lives. Document = the record's text for ranking, embedding = the Embedder's, metadata =
the record as JSON plus the file it came from and that file's content hash (as the ingest manifest has it).

`sync()` runs after every ingest, upload and delete (and, lazily, before a read that finds the records behind
the manifest): it re-extracts only files whose manifest hash changed and drops the records of files the
manifest no longer lists. Readers also ignore records of files the manifest does not list.

Search annotations need only each record's lines and relations: sync writes them to
`$BRAIN_HOME/attempts.json`, so annotating a search opens neither Chroma nor the model.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np

from brain.attempts.extract import EXTRACTOR_VERSION, SUFFIXES, extract

RECORD_TEXT = 3  # bump when record_text or attempts.json changes: every record is synced again
VERSION = f"{EXTRACTOR_VERSION}.{RECORD_TEXT}"  # what a stored record was extracted and embedded by
from brain.attempts.relations import conflicts, supersession
from brain import Unavailable
from brain.chunking import UnsupportedFile, read_text
from brain.embed import Embedder
from brain.embed_cache import EmbeddingCache
from brain.lexical import LexicalIndex
from brain.store import Store, atomic_write

_PAGE = 2000


def _marker(file_key: str) -> str:
    return "file:" + hashlib.sha1(file_key.encode()).hexdigest()[:16]


EXCERPT = 800  # characters of the cited passage in the embedded text; bm25 reads all of it (lexical_text)


def record_text(r: dict, excerpt: str, context: str = "") -> str:
    """What a record is ranked by: the headings it sits under (the document's title first: a question names
    the kernel, the GPU, the library more often than the step), its fields and scope, then the first lines of
    the passage it cites."""
    figs = "; ".join(f"{f['label']} {f['before']:g} → {f['after']:g} {f['unit']}" for f in r["figures"][:8])
    parts = [r["title"], f"problem {r['problem']}; techniques {', '.join(r['techniques']) or '-'}; "
             f"verdict {r['verdict']}", r["hypothesis"] and f"Hypothesis: {r['hypothesis']}",
             r["change"] and f"Change: {r['change']}", figs and f"Figures: {figs}",
             r["lesson"] and f"Lesson: {r['lesson']}", excerpt[:EXCERPT]]
    scope = " ".join(str(v) for v in (r.get("scope") or {}).values() if v)
    parts = [" / ".join(x for x in (context, scope) if x)] + parts
    return "\n".join(p for p in parts if p)


def lexical_text(text: str, excerpt: str) -> str:
    """What bm25 ranks a record by: its text, then the rest of the passage it cites. A question often names what
    only the body says (a shape, a figure, a step's detail); the embedding reads the first 256 word pieces anyway."""
    return f"{text}\n{excerpt[EXCERPT:]}" if len(excerpt) > EXCERPT else text


@dataclass
class Loaded:
    """All live records of one index state, with what is derived from them (relations, ranking index)."""
    key: tuple
    records: list[dict]  # as stored, plus status / superseded_by / supersedes / conflicts_with
    texts: list[str]
    vectors: np.ndarray
    lexical: LexicalIndex
    conflicts: list[dict]

    def by_id(self) -> dict[str, dict]:
        return {r["id"]: r for r in self.records}


class AttemptStore:
    def __init__(self, store: Store, embedder: Embedder):
        self.store = store
        self.embedder = embedder
        self.vectors = EmbeddingCache(store.home, embedder.model_name)  # a record edited elsewhere in its file: no re-embedding
        self._loaded: Loaded | None = None
        self._relations: tuple | None = None  # (attempts.json mtime, (by file, by id))
        self._lock = threading.Lock()
        self._sync_lock = threading.Lock()

    @property
    def collection(self):
        return self.store.named_collection("attempts")

    @property
    def relations_path(self) -> Path:
        return self.store.home / "attempts.json"

    # ---- writes -------------------------------------------------------------------------------
    def _stored(self) -> tuple[list[str], list[dict]]:
        ids, metas = [], []
        for page in self.store.pages("attempts", ["metadatas"], "read attempt records"):
            ids += page["ids"]
            metas += page["metadatas"]
        return ids, metas

    @staticmethod
    def _wanted(m) -> dict[str, str]:
        """file key -> the hash its records must carry: the file's content hash and the extractor's version."""
        return {k: f"{e['hash']}:{VERSION}" for k, e in m.files.items()
                if PurePosixPath(k).suffix.lower() in SUFFIXES}

    def sync(self, wait: float | None = None) -> dict:
        """Bring the records in line with the manifest, under the index's write lease (one writer at a time);
        returns {"files", "added", "removed"}. Nothing to do when attempts.json already describes this
        manifest generation and extractor version."""
        with self._sync_lock, self.store.lease(wait=wait):
            m = self.store.load_manifest()
            if self._synced() == (m.generation, VERSION):
                return {"files": 0, "added": 0, "removed": 0}
            return self._sync(m)

    def _synced(self) -> tuple | None:
        try:
            raw = json.loads(self.relations_path.read_text())
            return raw["generation"], raw["extractor"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _sync(self, m) -> dict:
        wanted = self._wanted(m)
        ids, metas = self._stored()
        held = {meta["file"]: meta["hash"] for meta in metas}
        todo = [k for k in wanted if held.get(k) != wanted[k]]
        stale = {i for i, meta in zip(ids, metas) if meta["file"] not in wanted or held[meta["file"]] != wanted[meta["file"]]}
        new: list[tuple] = []  # (record, text for ranking, file key, hash, the cited lines)
        done: list[str] = []  # files read: each gets a marker row, so a file without records is not re-read
        for key in todo:
            corpus, source = key.split(":", 1)
            spec = m.corpora.get(corpus, {})
            try:
                if spec.get("uploads"):
                    text = self.store.read_upload(corpus, source)
                else:
                    root = Path(spec.get("root", ""))
                    text = read_text(root if root.is_file() else root / source)
            except (OSError, UnsupportedFile):
                text = None
            if text is None:
                continue
            done.append(key)
            lines = text.splitlines()
            try:
                found = extract(text, source, corpus)
            except (RecursionError, ValueError):  # a file the rules cannot read has no records; the rest go on
                found = []
            for rec in found:
                d = rec.as_dict()
                excerpt = "\n".join(lines[rec.start_line - 1:rec.end_line])
                context = " / ".join(getattr(rec, "_path", None) or [])
                new.append((d, record_text(d, excerpt, context), key, wanted[key], excerpt))
        col = self.collection
        if new:
            texts = [t for _, t, *_ in new]
            vectors, _ = self.vectors.encode(texts, lambda todo: self.embedder.encode([texts[i] for i in todo]))
            for i in range(0, len(new), _PAGE):
                part = new[i:i + _PAGE]
                col.upsert(ids=[d["id"] for d, *_ in part], embeddings=vectors[i:i + _PAGE],
                           documents=[t for _, t, *_ in part],
                           metadatas=[{"record": json.dumps(d), "file": k, "hash": h, "excerpt": x}
                                      for d, _, k, h, x in part])
        if done:
            unit = np.zeros(m.dim or self.embedder.dim, dtype=np.float32)
            unit[0] = 1.0
            for i in range(0, len(done), _PAGE):
                part = done[i:i + _PAGE]
                col.upsert(ids=[_marker(k) for k in part], embeddings=[unit] * len(part), documents=part,
                           metadatas=[{"file": k, "hash": wanted[k], "marker": True} for k in part])
        gone = sorted(stale - {d["id"] for d, *_ in new} - {_marker(k) for k in done})
        for i in range(0, len(gone), _PAGE):
            col.delete(ids=gone[i:i + _PAGE])
        if new or gone or self._synced() != (m.generation, VERSION):
            self._loaded = None
            loaded = self.load(check=False)
            atomic_write(self.relations_path, json.dumps({"generation": m.generation, "extractor": VERSION,
                                                           "records": [
                {k: r.get(k) for k in ("id", "corpus", "source", "start_line", "end_line", "superseded_by",
                                       "conflicts_with", "title", "verdict", "figure")} for r in loaded.records]}))
            loaded.key = self._key()  # the file just written is part of this state
        return {"files": len(todo), "added": len(new), "removed": len(gone)}

    def behind(self) -> bool:
        """Do the stored records lag the manifest (a write path that did not sync, an older index)?"""
        wanted = self._wanted(self.store.load_manifest())
        _, metas = self._stored()
        held = {meta["file"]: meta["hash"] for meta in metas}
        return held != wanted

    # ---- reads --------------------------------------------------------------------------------
    def _key(self) -> tuple:
        gen = self.store.generation()
        try:
            stamp = os.stat(self.relations_path).st_mtime_ns
        except OSError:
            stamp = 0
        return gen, stamp

    def load(self, check: bool = True) -> Loaded:
        key = self._key()
        loaded = self._loaded
        if loaded is not None and loaded.key == key:
            return loaded
        if check and self.behind():
            try:
                self.sync(wait=2.0)  # a reader catches the records up, unless a writer holds the lease
            except Unavailable:
                pass
            return self.load(check=False)
        with self._lock:
            if self._loaded is not None and self._loaded.key == key:
                return self._loaded
            live = set(self.store.load_manifest().files)
            records, texts, vecs, passages = [], [], [], {}
            for page in self.store.pages("attempts", ["metadatas", "documents", "embeddings"],
                                         "read attempt records"):
                for meta, doc, vec in zip(page["metadatas"], page["documents"], page["embeddings"]):
                    if meta["file"] in live and not meta.get("marker"):
                        r = json.loads(meta["record"])
                        records.append(r)
                        texts.append(doc)
                        vecs.append(np.asarray(vec, dtype=np.float32))
                        passages[r["id"]] = meta.get("excerpt", "")  # the cited lines (relations read them)
            order = sorted(range(len(records)), key=lambda i: (records[i]["corpus"], records[i]["source"],
                                                               records[i]["start_line"]))
            records = [records[i] for i in order]
            texts = [texts[i] for i in order]
            vectors = np.stack([vecs[i] for i in order]) if vecs else np.zeros((0, 1), dtype=np.float32)
            successor = supersession(records, passages)
            found = conflicts(records, successor, passages)
            predecessors: dict[str, list[str]] = {}
            for old, new in successor.items():
                predecessors.setdefault(new, []).append(old)
            against: dict[str, list[str]] = {}
            for c in found:
                against.setdefault(c["a"]["id"], []).append(c["b"]["id"])
                against.setdefault(c["b"]["id"], []).append(c["a"]["id"])
            for r in records:
                r["status"] = "superseded" if r["id"] in successor else "active"
                r["superseded_by"] = successor.get(r["id"])
                r["supersedes"] = sorted(set(predecessors.get(r["id"], [])) | ({r["supersedes"]} if r.get("supersedes") else set()))
                r["conflicts_with"] = sorted(set(against.get(r["id"], [])))
            lexical = LexicalIndex.build([r["id"] for r in records],
                                         [lexical_text(t, passages[r["id"]]) for r, t in zip(records, texts)])
            self._loaded = Loaded(key, records, texts, vectors, lexical, found)
            return self._loaded

    def relations(self) -> tuple[dict[tuple, list[dict]], dict[str, dict]]:
        """Each record's lines and relations from attempts.json, by (corpus, source) and by id; cached by the
        file's mtime, so a search pays one stat. Empty before the first sync."""
        try:
            stamp = os.stat(self.relations_path).st_mtime_ns
        except OSError:
            return {}, {}
        cached = self._relations
        if cached and cached[0] == stamp:
            return cached[1]
        try:
            rows = json.loads(self.relations_path.read_text())["records"]
        except (OSError, ValueError, KeyError):
            return {}, {}
        by_file: dict[tuple, list[dict]] = {}
        for r in rows:
            by_file.setdefault((r["corpus"], r["source"]), []).append(r)
        self._relations = (stamp, (by_file, {r["id"]: r for r in rows}))
        return self._relations[1]
