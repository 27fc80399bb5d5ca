"""Where an index lives: its Chroma collections, its manifest, its write lease and its uploaded files.

`open_store(settings)` picks the backend: local (an embedded Chroma in $BRAIN_HOME, local.py) or server
(BRAIN_CHROMA_URL, server.py), over one interface (base.py); leases in lease.py.
"""
from brain.store.base import Manifest, Store, atomic_write, chunk_metadata, file_key  # noqa: F401


def open_store(settings) -> Store:
    if settings.chroma_url:
        from brain.store.server import ServerStore
        return ServerStore(settings)
    from brain.store.local import LocalStore
    return LocalStore(settings)
