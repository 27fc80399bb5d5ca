"""The local backend: an embedded Chroma under $BRAIN_HOME, the manifest a JSON file beside it (replaced
atomically), the write lease an flock on a file in the home, uploaded files in `$BRAIN_HOME/uploads/<corpus>`
and written records in `$BRAIN_HOME/records`. Stored files are never read or written through a symbolic link:
a link planted among them is refused, not followed out of the folder. Embedded Chroma is one process's store:
opening it takes the home's owner lock for the process (brain/owner.py)."""
from __future__ import annotations

import contextlib
import shutil
import threading
import time
from pathlib import Path

from brain import BrainError, owner
from brain.store.base import RECORDS_CORPUS, Manifest, Store, atomic_write
from brain.store.lease import local_lease


class LocalStore(Store):
    def __init__(self, settings):
        super().__init__(settings)
        self.manifest_path = self.home / "manifest.json"
        self._local_lock = threading.Lock()  # writers of this process, before the flock
        self._lease_thread: int | None = None  # the thread holding the lease (a reopen inside it must not wait)
        self._claimed = False

    def claim(self, role: str | None = None) -> None:
        """Hold the home's owner lock (another live process holding it: Owned, one line saying what to do)."""
        if not self._claimed:
            owner.claim(self.home, role)
            self._claimed = True

    def owned_here(self) -> bool:
        """True unless another live process holds the home's owner lock."""
        return self._claimed or owner.holds(self.home) or owner.holder(self.home) is None

    def close(self) -> None:
        super().close()
        if self._claimed:
            self._claimed = False
            owner.release(self.home)

    def reopen(self) -> None:
        """Under the lease, so no write of this process is cut off midway."""
        if self._lease_thread == threading.get_ident():
            return super().reopen()
        with self.lease():
            super().reopen()

    def _open_client(self):
        self.claim()  # before chromadb is even imported: a refused process loads nothing
        import chromadb
        from chromadb.config import Settings as ChromaSettings
        self.home.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(self.home / "chroma"),
                                         settings=ChromaSettings(anonymized_telemetry=False))

    def where(self) -> str:
        return str(self.home / "chroma")

    def where_manifest(self) -> str:
        return str(self.manifest_path)

    def _manifest_text(self) -> str | None:
        return self.manifest_path.read_text() if self.manifest_path.exists() else None

    def save_manifest(self, m: Manifest) -> None:
        m.index = self.index
        atomic_write(self.manifest_path, m.to_json())
        self._generation = None

    def generation(self, max_age: float = 1.0) -> int:
        """Re-reads the manifest only when its file changed."""
        try:
            st = self.manifest_path.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            return 0
        cached = self._generation
        if cached and cached[1] == stamp:
            return cached[2]
        gen = self.load_manifest().generation
        self._generation = (time.monotonic(), stamp, gen)
        return gen

    def reset(self) -> None:
        with self.lease():
            try:
                self.delete(list(self.stored_ids()))
            except BrainError:
                shutil.rmtree(self.home / "chroma", ignore_errors=True)
                self._client = self._collection = None
            self.manifest_path.unlink(missing_ok=True)
            shutil.rmtree(self.home / "uploads", ignore_errors=True)
            self._generation = None

    @contextlib.contextmanager
    def lease(self, wait: float | None = None):
        with self._local_lock, local_lease(self.home) as lease:
            self._lease_thread = threading.get_ident()
            try:
                yield lease
            finally:
                self._lease_thread = None

    # ---- uploaded files -----------------------------------------------------------------------
    def uploads_dir(self, corpus: str) -> Path:
        return self.home / RECORDS_CORPUS if corpus == RECORDS_CORPUS else self.home / "uploads" / corpus

    def _stored_file(self, corpus: str, name: str) -> Path:
        folder = self.uploads_dir(corpus)
        path = folder / name
        if path.is_symlink() or not path.resolve().is_relative_to(folder.resolve()):
            raise BrainError(f"'{corpus}/{name}' is a link: stored files are never read or written through one")
        return path

    def is_upload_corpus(self, name: str, spec: dict | None) -> bool:
        """Older local manifests mark an upload corpus only by its root: the home's upload folder."""
        return super().is_upload_corpus(name, spec) or \
            (bool(spec) and Path(spec.get("root") or "/") == self.uploads_dir(name))

    def save_upload(self, corpus: str, name: str, text: str) -> None:
        atomic_write(self._stored_file(corpus, name), text)

    def read_upload(self, corpus: str, name: str) -> str | None:
        path = self._stored_file(corpus, name)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def list_uploads(self, corpus: str) -> list[str]:
        folder = self.uploads_dir(corpus)
        return sorted(p.name for p in folder.glob("*") if p.is_file() and not p.is_symlink()
                      and not p.name.startswith(".")) if folder.is_dir() else []

    def delete_upload(self, corpus: str, name: str) -> None:
        self._stored_file(corpus, name).unlink(missing_ok=True)
