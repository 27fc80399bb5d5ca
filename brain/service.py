"""`Brain`: the one object the CLI, the HTTP API and the MCP server call.

It owns the store, the searcher and the ingester for one Settings. Writes (ingest, upload, delete) chunk and
embed first, then commit under the index's write lease (one writer at a time across processes and hosts);
searches never take it and run meanwhile on the last complete snapshot.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path

from brain import BrainError, NotFound, check_k, runs
from brain.attempts import Attempts
from brain.attempts.writeback import write_record
from brain.chunking import SUPPORTED_SUFFIXES, UnsupportedFile, chunk_text
from brain.config import CorpusSpec, Settings, default_corpora
from brain.embed import Embedder
from brain.ingest import Ingester, Summary
from brain.patterns import PATTERNS
from brain.sanitize import check_text
from brain.search import Filters, Hit, Searcher, Snapshot
from brain.search import queries
from brain.store import Manifest, open_store
from brain.store.base import RECORDS_CORPUS

MAX_UPLOAD_BYTES = 1_000_000
UPLOAD_CORPUS = "uploads"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def hit_dicts(hits: list[Hit]) -> list[dict]:
    return [h.as_dict(r) for r, h in enumerate(hits, 1)]


def search_payload(query: str, hits: list[Hit], took_ms: float, load_ms: float = 0.0,
                   match: str | None = None) -> dict:
    """The one JSON shape of a search answer (CLI --json, HTTP, MCP). Field names are a public contract.
    `match` ("strong" | "weak" | "none") says how sure the search is that it found something (docs/retrieval.md).
    `took_ms` is the search itself; `load_ms` what loading the index snapshot and the query encoder cost
    first (a fresh CLI process; about 0 in a warm server)."""
    match = match or getattr(hits, "match", "weak" if hits else "none")
    return {"query": query, "took_ms": round(took_ms, 2), "load_ms": round(load_ms, 2), "match": match,
            "results": hit_dicts(hits)}


def _split(csv: str) -> list[str]:
    return [x for x in csv.split(",") if x]


class Brain:
    def __init__(self, settings: Settings | None = None, embedder: Embedder | None = None):
        self.settings = settings or Settings()
        self.store = open_store(self.settings)
        self.embedder = embedder or Embedder(self.settings.model, self.settings.device)
        self.searcher = Searcher(self.settings, self.store, self.embedder)
        self.ingester = Ingester(self.settings, self.store, self.embedder, current=self.searcher.snapshots.held)
        self.attempts = Attempts(self.store, self.embedder)  # attempt records: synced after every write

    # ---- the index ----------------------------------------------------------------------------
    def snapshot(self) -> Snapshot:
        """The index as of now (loaded once per generation; a CLI ingest saves it for the next process)."""
        return self.searcher.snapshot()

    def manifest(self) -> Manifest:
        return self.store.load_manifest()

    def generation(self) -> int:
        """The stored generation, read now (0: no index)."""
        return self.store.generation(max_age=0)

    def claim(self, role: str | None = None) -> None:
        """Become the index's one owner now (`brain serve`, `brain watch`): a second one is refused at start,
        with one line, rather than at its first write (brain/owner.py)."""
        self.store.claim(role)

    def close(self) -> None:
        """Let go of the index (its Chroma client and owner lock); the next use opens it again."""
        self.store.close()

    def warm_writer(self) -> None:
        """Load the embedding model now, so the first write does not wait for torch."""
        self.embedder.model

    def rebuild(self) -> None:
        """Drop the index (`brain ingest --rebuild`): chunks, manifest, uploads and cached bm25 index. Written
        attempt records are kept and indexed again."""
        self.store.reset()
        self.searcher.snapshots.clear_caches()
        for name in self.store.list_uploads(RECORDS_CORPUS):
            text = self.store.read_upload(RECORDS_CORPUS, name)
            if text is not None:
                self._put(RECORDS_CORPUS, name, text)

    # ---- reads --------------------------------------------------------------------------------
    def _load(self, dense: bool) -> float:
        """Load the snapshot (and the query encoder when the search embeds the query) before the clock for
        the search starts: milliseconds this took, reported as `load_ms`."""
        t0 = time.perf_counter()
        self.snapshot()
        if dense:
            self.embedder.load_query_encoder()
        return (time.perf_counter() - t0) * 1000

    def search(self, query: str, k: int = 5, filters: Filters | None = None, mode: str = "hybrid",
               expand: bool = False) -> dict:
        check_k(k)
        load_ms = self._load(mode != "bm25" and bool((query or "").strip()))
        t0 = time.perf_counter()
        hits = self.searcher.search(query, k, filters, mode, expand=expand)
        ranked = self.attempts.rank(hits)  # superseded_by, conflicts_with; a superseded passage moves down
        return search_payload(query, ranked, (time.perf_counter() - t0) * 1000, load_ms, hits.match)

    def pitfall(self, error_text: str, k: int = 3, filters: Filters | None = None) -> dict:
        check_k(k)
        load_ms = self._load(bool((error_text or "").strip()))
        t0 = time.perf_counter()
        hits = queries.pitfall(self.searcher, error_text, k, filters)
        return search_payload(error_text, hits, (time.perf_counter() - t0) * 1000, load_ms)

    def snippets(self, pattern: str, query: str | None = None, k: int = 5, filters: Filters | None = None) -> dict:
        check_k(k)
        load_ms = self._load(bool((query or "").strip()))
        t0 = time.perf_counter()
        hits = queries.snippets(self.searcher, pattern, query, k, filters)
        payload = search_payload(query or "", hits, (time.perf_counter() - t0) * 1000, load_ms)
        return {"pattern": pattern, **payload}

    def tags(self) -> list[dict]:
        counts = Counter(t for m in self.snapshot().metas for t in m["tags"].split(",") if t)
        return [{"tag": t, "chunks": n} for t, n in sorted(counts.items())]

    def chunks(self, source: str | None = None, corpus: str | None = None) -> list[dict]:
        snap = self.snapshot()
        out = []
        for i, text, m in zip(snap.ids, snap.texts, snap.metas):
            if (source and source not in m["source"]) or (corpus and m["corpus"] != corpus):
                continue
            row = Hit(i, 0.0, text, m).as_dict(0)
            del row["rank"], row["score"]
            out.append({"id": i, **row})
        return out

    def stats(self, paths: bool = False) -> dict:
        """What the index holds. Corpus roots and the index location are shown only with `paths` (the local
        CLI): an anonymous HTTP reader sees corpus names, counts and the index name, never server paths."""
        m = self.store.load_manifest()
        snap = self.snapshot()
        corpora = {}
        for name, spec in sorted(m.corpora.items()):
            keys = [k for k in m.files if k.split(":", 1)[0] == name]
            corpora[name] = {"files": len(keys), "chunks": sum(len(m.files[k]["ids"]) for k in keys),
                             "uploads": self.store.is_upload_corpus(name, spec)}
            if paths:
                corpora[name]["root"] = spec["root"] or "(uploaded documents)"

        patterns = Counter(p for meta in snap.metas for p in _split(meta["patterns"]))
        return {"documents": len(m.files), "chunks": len(snap.ids), "corpora": corpora,
                "kinds": dict(Counter(meta["kind"] for meta in snap.metas).most_common()),
                "patterns": dict(sorted(patterns.items())), "model": m.model or self.settings.model,
                "index": self.settings.index, "generation": m.generation,
                **({"location": self.settings.chroma_url or str(self.store.home)} if paths else {}),
                "last_ingest": (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(m.last_ingest))
                                if m.last_ingest else None)}

    def patterns(self) -> list[dict]:
        counts = Counter(p for meta in self.snapshot().metas for p in _split(meta["patterns"]))
        rows = [{"pattern": name, "description": p.description, "rule": p.rule, "c_rule": p.c_rule,
                 "snippets": counts.get(name, 0)} for name, p in PATTERNS.items()]
        rows += [{"pattern": name, "description": "(not a known pattern: check the marker's spelling)", "rule": "",
                  "c_rule": "", "snippets": n} for name, n in sorted(counts.items()) if name not in PATTERNS]
        return rows

    # ---- sources ------------------------------------------------------------------------------
    def sources(self) -> list[dict]:
        m = self.store.load_manifest()
        return [{"corpus": k.split(":", 1)[0], "source": k.split(":", 1)[1], "path": self._display(k),
                 "chunks": len(e["ids"])} for k, e in sorted(m.files.items())]

    @staticmethod
    def _display(key: str) -> str:
        corpus, source = key.split(":", 1)
        return f"{corpus}/{source}"

    def resolve_source(self, path: str) -> Path | str:
        """`corpus/source` (or a bare source, if unambiguous) -> the file on disk, only inside an ingested corpus
        (an uploaded document: its text, kept by the store)."""
        m = self.store.load_manifest()
        path = path.strip().lstrip("/")
        matches = [k for k in m.files if self._display(k) == path] or \
                  [k for k in m.files if k.split(":", 1)[1] == path]
        if not matches:
            raise NotFound(f"no ingested source '{path}' (GET /sources lists them)")
        if len(matches) > 1:
            raise BrainError(f"'{path}' is in several corpora: ask for one of "
                             + ", ".join(self._display(k) for k in matches))
        corpus, source = matches[0].split(":", 1)
        if self.store.is_upload_corpus(corpus, m.corpora[corpus]):
            text = self.store.read_upload(corpus, source)
            if text is None:
                raise NotFound(f"'{path}' was removed meanwhile")
            return text
        root = Path(m.corpora[corpus]["root"]).resolve()
        file = (root / source).resolve() if root.is_dir() else root
        if root.is_dir() and not file.is_relative_to(root):  # a symlink pointing out of the corpus
            raise BrainError(f"'{path}' resolves outside its corpus")
        if not file.is_file():
            raise NotFound(f"'{path}' was ingested but is no longer on disk; run `brain ingest`")
        return file

    def read_source(self, path: str, start: int | None = None, end: int | None = None) -> dict:
        file = self.resolve_source(path)
        text = file if isinstance(file, str) else file.read_text(encoding="utf-8", errors="replace")
        lines = text.splitlines()
        start = 1 if start is None else start
        end = len(lines) if end is None else end
        if start < 1 or end < start:
            raise BrainError(f"bad line range {start}-{end}: lines are 1-based and start <= end")
        if start > len(lines):
            raise BrainError(f"'{path}' has {len(lines)} lines; start {start} is past the end")
        end = min(end, len(lines))
        return {"path": path, "start_line": start, "end_line": end, "total_lines": len(lines),
                "text": "\n".join(lines[start - 1:end])}

    # ---- attempt records ----------------------------------------------------------------------
    def find_attempts(self, query: str | None = None, technique: str | None = None, verdict: str | None = None,
                      problem: str | None = None, include_superseded: bool = False, k: int = 10,
                      corpus: str | None = None) -> dict:
        return self.attempts.find(query, technique, verdict, problem, include_superseded, k, corpus)

    def attempt_conflicts(self, technique: str | None = None) -> dict:
        return self.attempts.conflicts(technique)

    def record(self, obj, file: str | None = None) -> dict:
        """Write an attempt record into the records corpus and index it (`brain record`, POST /attempts)."""
        return write_record(obj, file, known_ids=lambda: {r["id"] for r in self.attempts.store.load().records},
                            read=lambda name: self.store.read_upload(RECORDS_CORPUS, name),
                            put=lambda name, text, base: self._put(RECORDS_CORPUS, name, text, base))

    # ---- kernel runs: the log `brain kernels run --record` writes (read only here) -------------------------
    def kernel_history(self, problem: str, device: str | None = None, order: str = "time", k: int = 20,
                       paths: bool = False) -> dict:
        """Recorded runs of `problem` (brain/runs.py). A kernel file's path on this host is shown only with
        `paths` (the local CLI); others see its name and hash."""
        h = runs.history(runs.RunLog(self.settings.home), problem, device, order, k)
        return h if paths else {**h, "runs": [runs.without_paths(r) for r in h["runs"]]}

    def compare_kernel_runs(self, problem: str, a: str, b: str, device: str | None = None) -> dict:
        return runs.compare_refs(runs.RunLog(self.settings.home), problem, a, b, device)

    # ---- writes -------------------------------------------------------------------------------
    def ingest(self, specs: list[CorpusSpec] | None = None, progress: bool = False) -> Summary:
        """Bring the index in line with `specs` (None: its own corpora, or the default ones for a new index)."""
        return self._installed(self.ingester.run(self.known_corpora() if specs is None else specs,
                                                 progress=progress))

    def remove_corpus(self, name: str) -> Summary:
        return self._installed(self.ingester.remove_corpus(name))

    def _installed(self, summary: Summary) -> Summary:
        """Hand the generation this process just wrote to its own searcher (read-your-writes, no re-read)."""
        if summary.committed:
            self.searcher.snapshots.install(summary.committed)
        self.attempts.sync()  # re-extract attempt records of changed files, drop those of removed ones
        return summary

    def known_corpora(self) -> list[CorpusSpec]:
        """What a re-scan covers (POST /ingest, `brain serve` at start): the index's own corpora, or the default
        ones while it holds none."""
        m = self.store.load_manifest()
        return self.indexed_corpora(m) if m.corpora else default_corpora()

    def indexed_corpora(self, m: Manifest | None = None) -> list[CorpusSpec]:
        """The folders the index holds, as they were declared (what `serve --watch` watches): never a corpus
        nobody asked for; uploads and another host's folders are not scanned here."""
        m = m or self.store.load_manifest()
        return [CorpusSpec(name, Path(c["root"]), tuple(c["include"]), tuple(c["exclude"]))
                for name, c in sorted(m.corpora.items())
                if not self.store.is_upload_corpus(name, c) and Path(c["root"]).exists()]

    def upload(self, filename: str, data: bytes, corpus: str = UPLOAD_CORPUS) -> Summary:
        """Validate, chunk and embed (no lock held), then store and index one file under the write lease; a
        rejected upload changes nothing. A name with a path in it is refused, never silently renamed."""
        name = filename or ""
        check_text(name, "file name")
        if "/" in name or "\\" in name or name in (".", "..") or Path(name).is_absolute():
            raise BrainError(f"file name '{filename}' must be a plain name, without a folder or '..'")
        if not _NAME.match(name) or Path(name).suffix.lower() not in SUPPORTED_SUFFIXES:
            raise BrainError(f"file name '{filename}' must be letters, digits, '.', '_' or '-' and end in "
                             + ", ".join(SUPPORTED_SUFFIXES))
        check_text(corpus, "corpus")
        if not _NAME.match(corpus):
            raise BrainError(f"corpus name '{corpus}' must be letters, digits, '.', '_' or '-'")
        if corpus == RECORDS_CORPUS:
            raise BrainError(f"corpus '{corpus}' holds the attempt records `brain record` writes; choose another name")
        if corpus in {s.name for s in default_corpora()}:
            raise BrainError(f"corpus '{corpus}' is a folder corpus on the server; choose another name")
        if len(data) > MAX_UPLOAD_BYTES:
            raise BrainError(f"upload is {len(data)} bytes; the limit is {MAX_UPLOAD_BYTES}")
        if not data.strip():
            raise BrainError("upload is empty")
        if b"\0" in data:
            raise BrainError("upload is binary; send markdown or Python source")
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise BrainError("upload is not UTF-8 text") from None
        try:
            chunks = chunk_text(text, name, Path(name).suffix)
        except UnsupportedFile as e:
            raise BrainError(str(e)) from None
        if not chunks:
            raise BrainError("upload has no content to index")
        known = self.store.load_manifest()
        self.ingester.check_writable(known)  # refuse before paying for the embedding
        if known.corpora.get(corpus) and not self.store.is_upload_corpus(corpus, known.corpora[corpus]):
            raise BrainError(f"corpus '{corpus}' is a folder on disk, not an upload corpus")
        return self._put(corpus, name, text, chunks=chunks)

    def _put(self, corpus: str, name: str, text: str, base: str | None = None, chunks=None) -> Summary:
        """Chunk (unless given) and embed one stored document, then store and index it under the write lease
        (refused with Changed when `base` is given and the stored text is no longer it)."""
        chunks = chunk_text(text, name, Path(name).suffix) if chunks is None else chunks
        for c in chunks:
            c.corpus = corpus
        prepared = self.ingester.prepare(chunks)
        return self._installed(self.ingester.put_document(corpus, name, text, prepared, base))

    def delete_document(self, path: str) -> Summary:
        """Remove an uploaded document (`corpus/file`) and its chunks."""
        corpus, _, name = path.strip("/").partition("/")
        return self._installed(self.ingester.drop_document(corpus, name))
