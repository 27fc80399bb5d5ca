"""The server backend (BRAIN_CHROMA_URL): everything readers and writers share lives in one Chroma server, so
processes on several hosts with nothing else in common serve one index. The manifest is the document of the
record `manifest` in `<index>-meta` (its generation in the record's metadata, cheap to poll), uploads are
records of `<index>-uploads` (written attempt records of `<index>-records`, which a reset keeps), and the write lease is a chain of collections `<index>-lease-<n>` (ServerLease)."""
from __future__ import annotations

import contextlib
import time
from urllib.parse import urlparse

from brain import BrainError, Unavailable
from brain.store.base import RECORDS_CORPUS, Manifest, Store
from brain.store.lease import LEASE_WAIT, ServerLease

POLL_SECONDS = 1.0  # how stale a reader's view of the generation may be


class ServerStore(Store):
    server = True

    def __init__(self, settings):
        super().__init__(settings)
        self._meta = None

    def _open_client(self):
        import chromadb
        from chromadb.config import Settings as ChromaSettings
        url = urlparse(self.settings.chroma_url)
        return chromadb.HttpClient(host=url.hostname or "127.0.0.1", port=url.port or 8000,
                                   ssl=url.scheme == "https", settings=ChromaSettings(anonymized_telemetry=False))

    def where(self) -> str:
        return self.settings.chroma_url

    def _forget_collections(self) -> None:
        self._collection = self._meta = None

    # ---- manifest -----------------------------------------------------------------------------
    @property
    def meta(self):
        """`<index>-meta`, whose record `manifest` holds the manifest (document) and generation; None while it
        does not exist (a read never creates an index on the server)."""
        if self._meta is None:
            try:
                self._meta = self.client.get_collection(self.collection_name("meta"), embedding_function=None)
            except BrainError:
                raise
            except Exception as e:
                if "does not exist" not in str(e):
                    raise Unavailable(f"cannot open '{self.collection_name('meta')}' at {self.where()}: {e}") \
                        from None
        return self._meta

    def _manifest_record(self, include: list[str]) -> dict | None:
        meta = self.meta
        if meta is None:
            return None
        got = self.call("read the manifest", meta.get, ids=["manifest"], include=include)
        return got if got["ids"] else None

    def where_manifest(self) -> str:
        return f"{self.collection_name('meta')} at {self.where()}"

    def _manifest_text(self) -> str | None:
        got = self._manifest_record(["documents"])
        return None if got is None else got["documents"][0]

    def save_manifest(self, m: Manifest) -> None:
        m.index = self.index
        # one record upsert: readers see the old manifest or the new one, never a mix
        self._meta = self._meta or self.named_collection("meta")
        self.call("save the manifest", self._meta.upsert, ids=["manifest"], embeddings=[[1.0]],
                  documents=[m.to_json()], metadatas=[{"generation": m.generation}])
        self._generation = None

    def generation(self, max_age: float = POLL_SECONDS) -> int:
        """Asks the server at most every `max_age` seconds (0: now)."""
        now = time.monotonic()
        cached = self._generation
        if cached and now - cached[0] < max_age:
            return cached[2]
        got = self._manifest_record(["metadatas"])
        gen = int(got["metadatas"][0]["generation"]) if got else 0
        self._generation = (now, None, gen)
        return gen

    def reset(self) -> None:
        with self.lease():
            for suffix in ("", "meta", "uploads"):
                with contextlib.suppress(Exception):  # absent already
                    self.client.delete_collection(self.collection_name(suffix))
            self._collection = self._meta = None
            self._generation = None

    @contextlib.contextmanager
    def lease(self, wait: float | None = None):
        lease = ServerLease(self, wait=LEASE_WAIT if wait is None else wait)
        lease.acquire()
        try:
            yield lease
        finally:
            lease.release()

    # ---- uploaded files -----------------------------------------------------------------------
    def _files(self, corpus: str):
        return self.named_collection("records" if corpus == RECORDS_CORPUS else "uploads")

    def save_upload(self, corpus: str, name: str, text: str) -> None:
        self.call("store the upload", self._files(corpus).upsert, ids=[f"{corpus}/{name}"], embeddings=[[1.0]],
                  documents=[text], metadatas=[{"corpus": corpus}])

    def read_upload(self, corpus: str, name: str) -> str | None:
        got = self.call("read the upload", self._files(corpus).get, ids=[f"{corpus}/{name}"], include=["documents"])
        return got["documents"][0] if got["ids"] else None

    def list_uploads(self, corpus: str) -> list[str]:
        got = self.call("list the uploads", self._files(corpus).get, where={"corpus": corpus}, include=[])
        return sorted(i.split("/", 1)[1] for i in got["ids"])

    def delete_upload(self, corpus: str, name: str) -> None:
        self.call("delete the upload", self._files(corpus).delete, ids=[f"{corpus}/{name}"])
