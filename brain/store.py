"""Where an index lives: its Chroma collections (vectors, text, metadata), its manifest, its write lease, its
uploaded files, and the bm25 index.

An index has a name (Settings.index, from BRAIN_INDEX) and every Chroma collection it owns derives from it:
`<index>` holds the chunks, `<index>-<suffix>` its side collections (`-meta`, `-uploads`, `-lease-<n>`, and
others' such as `-attempts`). Nothing here ever touches another index's collections.

Two modes, one interface (load_manifest / save_manifest / generation / lease / uploads):
- local (no BRAIN_CHROMA_URL): an embedded Chroma under $BRAIN_HOME, the manifest a JSON file beside it
  (replaced atomically), the write lease an flock on a file in the home, uploads files in the home.
- server (BRAIN_CHROMA_URL): everything readers and writers share lives in the server, so processes on
  several hosts with nothing else in common serve one index: the manifest is the document of the record
  `manifest` in `<index>-meta` (its generation in the record's metadata, cheap to poll), uploads are records of
  `<index>-uploads`, and the write lease is a chain of collections `<index>-lease-<n>` (see ServerLease).

Chroma is the source of truth for chunks. The manifest (content hash and chunk ids per file) makes ingest
incremental and says which stored chunks are visible: anything the manifest does not list (left by a writer
killed midway) is deleted by the next writer, under the lease. The lexical index is cached under the home with
the generation it was built for (per index name in server mode); a reader finding it older rebuilds it.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from brain import BrainError, Unavailable
from brain.chunking import Chunk
from brain.config import Settings
from brain.lexical import LexicalIndex

MANIFEST_VERSION = 1
_PAGE = 2000  # Chroma get() page size
READ_TRIES = 4  # tries of one page read that races a write
LEGACY_INDEX = "brain"  # what a manifest written before index names were recorded was built as
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,100}[A-Za-z0-9]$")
POLL_SECONDS = 1.0  # server mode: how stale a reader's view of the generation may be
LEASE_TTL = float(os.environ.get("BRAIN_LEASE_TTL") or 30)  # a holder that stops renewing loses it after this
LEASE_WAIT = float(os.environ.get("BRAIN_LEASE_WAIT") or 120)  # how long a writer waits for a busy lease


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
    def __init__(self, settings: Settings):
        self.settings = settings
        self.home = settings.home
        self.index = settings.index
        if not _NAME.match(self.index) or ".." in self.index:
            raise BrainError(f"index name '{self.index}' (BRAIN_INDEX) must be 3-102 letters, digits, '.', '_' "
                             "or '-', starting and ending with a letter or digit")
        self.server = bool(settings.chroma_url)
        self.manifest_path = self.home / "manifest.json"
        self.lexical_path = self.home / "cache" / self.index / "lexical" if self.server else self.home / "lexical"
        self._client = None
        self._collection = None
        self._meta = None
        self._client_lock = threading.Lock()
        self._generation: tuple[float, object, int] | None = None  # (checked at, file stat or None, generation)
        self._local_lock = threading.Lock()  # local mode: writers of this process, before the flock

    # ---- Chroma -------------------------------------------------------------------------------
    @property
    def client(self):
        """The Chroma client: an HttpClient when BRAIN_CHROMA_URL is set, else a PersistentClient in the home."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = self._open_client()
        return self._client

    def _open_client(self):
        import chromadb
        from chromadb.config import Settings as ChromaSettings
        chroma_settings = ChromaSettings(anonymized_telemetry=False)
        try:
            if self.settings.chroma_url:
                from urllib.parse import urlparse
                url = urlparse(self.settings.chroma_url)
                return chromadb.HttpClient(host=url.hostname or "127.0.0.1", port=url.port or 8000,
                                           ssl=url.scheme == "https", settings=chroma_settings)
            self.home.mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(path=str(self.home / "chroma"), settings=chroma_settings)
        except Exception as e:  # connection refused, corrupt folder, ...
            raise Unavailable(f"cannot open the Chroma store at {self._where()}: {e}") from None

    def _where(self) -> str:
        return self.settings.chroma_url or str(self.home / "chroma")

    def collection_name(self, suffix: str = "") -> str:
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
            raise Unavailable(f"cannot open the Chroma collection '{name}' at {self._where()}: {e}") from None

    @property
    def collection(self):
        if self._collection is None:
            self._collection = self.named_collection()
        return self._collection

    def _call(self, what: str, fn, *args, **kwargs):
        """A Chroma call whose failure (server gone, ...) is one clear line, not a traceback."""
        try:
            return fn(*args, **kwargs)
        except BrainError:
            raise
        except Exception as e:
            if "does not exist" in str(e):  # dropped by another process's --rebuild: re-open on the next call
                self._collection = self._meta = None
            raise Unavailable(f"Chroma at {self._where()} failed to {what}: {e}") from None

    def upsert(self, chunks: list[Chunk], vectors: np.ndarray) -> None:
        for i in range(0, len(chunks), _PAGE):
            part = chunks[i:i + _PAGE]
            self._call("store chunks", self.collection.upsert, ids=[c.id for c in part],
                       embeddings=vectors[i:i + _PAGE], documents=[c.text for c in part],
                       metadatas=[chunk_metadata(c) for c in part])

    def delete(self, ids: list[str]) -> None:
        for i in range(0, len(ids), _PAGE):
            self._call("delete chunks", self.collection.delete, ids=ids[i:i + _PAGE])

    def pages(self, collection, include: list[str], what: str = "read chunks"):
        """Every record of `collection` (this index's, or a side collection), one get() page at a time."""
        offset = 0
        while True:
            for attempt in range(READ_TRIES):
                try:
                    page = self._call(what, collection.get, include=include, limit=_PAGE, offset=offset)
                    break
                except Unavailable as e:
                    # an embedded Chroma read racing a write fails now and then ("Error finding id") with the
                    # index intact: read the page again; readers that need one generation check it afterwards
                    if attempt == READ_TRIES - 1 or "Internal error" not in str(e):
                        raise
                    time.sleep(0.02 * (attempt + 1))
            yield page
            if len(page["ids"]) < _PAGE:
                return
            offset += _PAGE

    def stored_ids(self) -> set[str]:
        return {i for page in self.pages(self.collection, [], "list chunks") for i in page["ids"]}

    def records(self, only: set[str] | None = None) -> tuple[list[str], list[str], list[dict]]:
        """Stored chunks (those in `only`, if given): (ids, texts, metadatas), ordered by source and line."""
        return self._records(only, False)[:3]

    def records_with_vectors(self, only: set[str] | None = None
                             ) -> tuple[list[str], list[str], list[dict], np.ndarray]:
        """As records(), plus the vectors (float32, row i is ids[i]) read in the same pages."""
        return self._records(only, True)

    def _records(self, only: set[str] | None, vectors: bool):
        ids, docs, metas, vecs = [], [], [], []
        for page in self.pages(self.collection, ["documents", "metadatas"] + (["embeddings"] if vectors else [])):
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
    @property
    def meta(self):
        """Server mode: `<index>-meta`, whose record `manifest` holds the manifest (document) and generation;
        None while it does not exist (a read never creates an index on the server)."""
        if self._meta is None:
            try:
                self._meta = self.client.get_collection(self.collection_name("meta"), embedding_function=None)
            except BrainError:
                raise
            except Exception as e:
                if "does not exist" not in str(e):
                    raise Unavailable(f"cannot open '{self.collection_name('meta')}' at {self._where()}: {e}") \
                        from None
        return self._meta

    def _manifest_record(self, include: list[str]) -> dict | None:
        meta = self.meta
        if meta is None:
            return None
        got = self._call("read the manifest", meta.get, ids=["manifest"], include=include)
        return got if got["ids"] else None

    def _where_manifest(self) -> str:
        return f"{self.collection_name('meta')} at {self._where()}" if self.server else str(self.manifest_path)

    def load_manifest(self) -> Manifest:
        """The manifest as stored now; one built for another index name or embedding model is refused."""
        try:
            if self.server:
                got = self._manifest_record(["documents"])
                if got is None:
                    return Manifest(index=self.index)
                m = Manifest.from_json(got["documents"][0])
            else:
                if not self.manifest_path.exists():
                    return Manifest(index=self.index)
                m = Manifest.from_json(self.manifest_path.read_text())
        except (ValueError, KeyError, TypeError) as e:
            raise Unavailable(f"the ingest manifest {self._where_manifest()} is corrupt ({e}); "
                              f"run `brain ingest --rebuild` to re-create the index") from None
        if m.index != self.index:
            raise Unavailable(f"the index in {self._where()} was built as '{m.index}', not '{self.index}'; set "
                              f"BRAIN_INDEX={m.index} to use it, or run `brain ingest --rebuild`")
        if m.model and m.model != self.settings.model:
            raise Unavailable(f"index '{self.index}' was embedded with model '{m.model}', not "
                              f"'{self.settings.model}'; set BRAIN_MODEL={m.model}, use another BRAIN_INDEX, "
                              "or run `brain ingest --rebuild`")
        return m

    def save_manifest(self, m: Manifest) -> None:
        m.index = self.index
        if self.server:
            # one record upsert: readers see the old manifest or the new one, never a mix
            self._meta = self._meta or self.named_collection("meta")
            self._call("save the manifest", self._meta.upsert, ids=["manifest"], embeddings=[[1.0]],
                       documents=[m.to_json()], metadatas=[{"generation": m.generation}])
        else:
            _atomic_write(self.manifest_path, m.to_json())
        self._generation = None

    def generation(self, max_age: float = POLL_SECONDS) -> int:
        """The stored manifest's generation, cheaply: server mode asks the server at most every `max_age`
        seconds (0: now); local mode re-reads the manifest only when its file changed."""
        now = time.monotonic()
        if self.server:
            cached = self._generation
            if cached and now - cached[0] < max_age:
                return cached[2]
            got = self._manifest_record(["metadatas"])
            gen = int(got["metadatas"][0]["generation"]) if got else 0
            self._generation = (now, None, gen)
            return gen
        try:
            st = self.manifest_path.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            return 0
        cached = self._generation
        if cached and cached[1] == stamp:
            return cached[2]
        gen = self.load_manifest().generation
        self._generation = (now, stamp, gen)
        return gen

    def reset(self) -> None:
        """Forget this index (`brain ingest --rebuild`): its chunks, manifest and uploads; side collections of
        other features (attempt records, ...) and other indexes are left alone. Takes the write lease."""
        with self.lease():
            if self.server:
                for suffix in ("", "meta", "uploads"):
                    with contextlib.suppress(Exception):  # absent already
                        self.client.delete_collection(self.collection_name(suffix))
                self._collection = self._meta = None
            else:
                try:
                    self.delete(list(self.stored_ids()))
                except BrainError:
                    shutil.rmtree(self.home / "chroma", ignore_errors=True)
                    self._client = self._collection = None
                self.manifest_path.unlink(missing_ok=True)
                shutil.rmtree(self.home / "uploads", ignore_errors=True)
            self._generation = None
            shutil.rmtree(self.lexical_path, ignore_errors=True)

    # ---- write lease --------------------------------------------------------------------------
    @contextlib.contextmanager
    def lease(self, wait: float | None = None):
        """One writer at a time for this index, across threads, processes and (server mode) hosts. Yields an
        object whose `check()` raises if the lease was lost (a writer must call it before committing)."""
        if self.server:
            lease = ServerLease(self, wait=LEASE_WAIT if wait is None else wait)
            lease.acquire()
            try:
                yield lease
            finally:
                lease.release()
            return
        with self._local_lock:
            self.home.mkdir(parents=True, exist_ok=True)
            with open(self.home / "write.lock", "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX)  # released by the OS if this process dies
                try:
                    yield _LocalLease()
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)

    # ---- uploaded files -----------------------------------------------------------------------
    def uploads_dir(self, corpus: str) -> Path:
        return self.home / "uploads" / corpus

    def is_upload_corpus(self, name: str, spec: dict | None) -> bool:
        """Whether a manifest's corpus holds uploaded documents (older local manifests: its root is the
        home's upload folder)."""
        return bool(spec) and (bool(spec.get("uploads")) or
                               (not self.server and Path(spec.get("root") or "/") == self.uploads_dir(name)))

    def save_upload(self, corpus: str, name: str, text: str) -> None:
        if self.server:
            col = self.named_collection("uploads")
            self._call("store the upload", col.upsert, ids=[f"{corpus}/{name}"], embeddings=[[1.0]],
                       documents=[text], metadatas=[{"corpus": corpus}])
        else:
            _atomic_write(self.uploads_dir(corpus) / name, text)

    def read_upload(self, corpus: str, name: str) -> str | None:
        if self.server:
            got = self._call("read the upload", self.named_collection("uploads").get, ids=[f"{corpus}/{name}"],
                             include=["documents"])
            return got["documents"][0] if got["ids"] else None
        path = self.uploads_dir(corpus) / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def delete_upload(self, corpus: str, name: str) -> None:
        if self.server:
            self._call("delete the upload", self.named_collection("uploads").delete, ids=[f"{corpus}/{name}"])
        else:
            (self.uploads_dir(corpus) / name).unlink(missing_ok=True)

    # ---- lexical ------------------------------------------------------------------------------
    def save_lexical(self, lex: LexicalIndex, generation: int) -> None:
        """Keep the bm25 index for the next process. Best effort, like the snapshot file: a failure only costs
        that process a rebuild. Writers and readers (threads or processes) of one home may save at the same
        moment, and renaming a folder onto one that exists fails, so the swap is done under an flock."""
        parent = self.lexical_path.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(dir=parent, prefix="lexical.tmp"))
            old = parent / f"lexical.old.{uuid.uuid4().hex}"
            try:
                lex.save(tmp)
                (tmp / "generation").write_text(str(generation))
                with open(parent / "lexical.lock", "a") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)
                    if self.lexical_path.exists():
                        os.replace(self.lexical_path, old)
                    os.replace(tmp, self.lexical_path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # gone already unless something failed
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass

    def load_lexical(self, generation: int) -> LexicalIndex | None:
        """The cached bm25 index if it was built for `generation` (the snapshot also checks its ids match)."""
        try:
            if int((self.lexical_path / "generation").read_text()) != generation:
                return None
            return LexicalIndex.load(self.lexical_path)
        except (OSError, ValueError):
            return None


class _LocalLease:
    def check(self) -> None:
        """An flock cannot be taken away while the process lives."""


class ServerLease:
    """The write lease of an index on a Chroma server, built on the one atomic primitive Chroma offers:
    `create_collection` fails if the name exists.

    Leases form a chain of collections `<index>-lease-1`, `-2`, ...; the valid one is the highest, and its
    metadata holds the holder and an expiry the holder keeps pushing forward (a heartbeat every ttl/3). A
    writer that finds the highest released, or expired (its holder died or hangs), creates the next number:
    of several racing, exactly one creation succeeds; the winner then re-lists the chain to verify nothing
    higher appeared. Released leases are marked, not deleted, so numbers only grow and a holder that slept past
    its expiry finds a higher number and knows it lost (check() before every commit); older links are deleted.
    Expiry compares wall clocks of different hosts: keep them in sync (NTP) and the ttl well above any skew.
    """

    PREFIX_SEP = "-lease-"

    def __init__(self, store: Store, wait: float = LEASE_WAIT, ttl: float | None = None):
        self.store, self.wait, self.ttl = store, wait, ttl or LEASE_TTL
        self.prefix = store.collection_name("lease-")
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.number = 0
        self.expires = 0.0
        self._stop = threading.Event()
        self._lost: str | None = None
        self._beat: threading.Thread | None = None

    def _chain(self) -> dict[int, dict]:
        out, offset = {}, 0
        while True:  # every page: a server may hold many indexes' collections
            page = self.store._call("list collections", self.store.client.list_collections, limit=1000,
                                    offset=offset)
            for col in page:
                tail = col.name[len(self.prefix):] if col.name.startswith(self.prefix) else ""
                if tail.isdigit():
                    out[int(tail)] = dict(col.metadata or {})
            if len(page) < 1000:
                return out
            offset += 1000

    def _create(self, number: int) -> bool:
        self.expires = time.time() + self.ttl
        try:
            self.store.client.create_collection(f"{self.prefix}{number}", embedding_function=None, metadata={
                "holder": self.holder, "expires": self.expires, "released": False})
            return True
        except Exception as e:
            if "already exists" in str(e):
                return False
            raise Unavailable(f"Chroma at {self.store._where()} failed to create a lease: {e}") from None

    def acquire(self) -> None:
        deadline = time.monotonic() + self.wait
        while True:
            chain = self._chain()
            top = max(chain, default=0)
            meta = chain.get(top, {})
            free = top == 0 or meta.get("released") or float(meta.get("expires", 0)) < time.time()
            if free and self._create(top + 1):
                now = self._chain()
                if max(now) == top + 1 and now[top + 1].get("holder") == self.holder:
                    self.number = top + 1
                    for old in (n for n in now if n < top):  # keep the one below: a late loser must see it
                        with contextlib.suppress(Exception):
                            self.store.client.delete_collection(f"{self.prefix}{old}")
                    self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="lease-heartbeat")
                    self._beat.start()
                    return
            if time.monotonic() > deadline:
                until = time.strftime("%H:%M:%S", time.localtime(float(meta.get("expires", 0))))
                raise Unavailable(f"index '{self.store.index}' is being written by {meta.get('holder', '?')} "
                                  f"(lease until {until}); try again later")
            time.sleep(0.1 + 0.2 * (uuid.uuid4().int % 100) / 100)  # jitter: racing writers spread out

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                chain = self._chain()
                if max(chain, default=0) != self.number:
                    self._lost = f"another writer took the lease (number {max(chain, default=0)})"
                    return
                expires = time.time() + self.ttl
                self.store.client.get_collection(f"{self.prefix}{self.number}").modify(
                    metadata={"holder": self.holder, "expires": expires, "released": False})
                self.expires = expires
            except Exception:  # the server is away for a moment: check() fails once the expiry passes
                continue

    def check(self) -> None:
        """Raise if this writer may no longer commit: lost to a taker, or expired without renewal."""
        if self._lost:
            raise Unavailable(f"write to index '{self.store.index}' abandoned: {self._lost}")
        if time.time() > self.expires - 1.0:
            raise Unavailable(f"write to index '{self.store.index}' abandoned: its lease expired")
        if max(self._chain(), default=0) != self.number:
            raise Unavailable(f"write to index '{self.store.index}' abandoned: another writer took the lease")

    def release(self) -> None:
        self._stop.set()
        if self._beat:
            self._beat.join(5)
        if self._lost:
            return
        with contextlib.suppress(Exception):  # unreachable server: the lease simply expires
            self.store.client.get_collection(f"{self.prefix}{self.number}").modify(
                metadata={"holder": self.holder, "expires": 0.0, "released": True})
