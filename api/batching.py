"""Query embeddings for a server: concurrent requests share one forward pass.

On a CPU a forward pass over 8-16 short queries costs little more than over one, and torch already uses all
cores for one pass; so when several searches arrive together, one worker thread embeds every query waiting
at that moment in one batch. A lone query goes straight through (nothing waits for a batch to fill), and
only one forward pass runs at a time instead of 16 threads fighting over 2 cores.

The worker runs torch on ONE intra-op thread (the setting is per OS thread, so ingest keeps its own). On
a 2-core machine whose other core is busy (the HTTP side of this server, or anything else) two OpenMP
threads stall on each other: a 16-query pass measured 47 ms on one thread and 170-340 ms on two.
"""
from __future__ import annotations

import functools
import queue
import threading
from concurrent.futures import Future

import numpy as np

from brain.embed import Embedder

MAX_BATCH = 32
TORCH_THREADS = 1


WRITE_NICE = 5  # how much lower than searches a write's embedding runs (Linux thread priority)


class BatchingEmbedder(Embedder):
    """An Embedder whose `encode_query` batches concurrent callers. Once `background_writes` is set (the
    server, after its start-up ingest), `encode` (uploads, re-ingest) runs on one low-priority thread with
    one torch thread, so a write's embedding takes the CPU searches leave idle instead of competing with
    them (on 2 cores a write's two OpenMP threads otherwise stall every query embedding behind them)."""

    def __init__(self, model: str, device: str | None = None, max_batch: int = MAX_BATCH):
        super().__init__(model, device)
        self.max_batch = max_batch
        self.background_writes = False
        self._writes = None
        self._pending: queue.SimpleQueue[tuple[str, Future]] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.batches = 0  # forward passes run, and queries embedded: for tests and curiosity
        self.queries = 0

    def encode_query(self, text: str) -> np.ndarray:
        return self._cached(text).copy()

    def encode(self, texts: list[str], *args, **kwargs) -> np.ndarray:
        if not self.background_writes:
            return super().encode(texts, *args, **kwargs)
        if self._writes is None:
            with self._start_lock:
                if self._writes is None:
                    from concurrent.futures import ThreadPoolExecutor
                    self._writes = ThreadPoolExecutor(1, thread_name_prefix="write-embedder",
                                                      initializer=_low_priority)
        return self._writes.submit(super().encode, texts, *args, **kwargs).result()

    @functools.lru_cache(maxsize=1024)  # repeated queries (the page, agents retrying) skip the model
    def _cached(self, text: str) -> np.ndarray:
        self._ensure_worker()
        done: Future = Future()
        self._pending.put((text, done))
        return done.result()

    def _ensure_worker(self) -> None:
        if self._worker is None:
            with self._start_lock:
                if self._worker is None:
                    self._worker = threading.Thread(target=self._run, name="query-embedder", daemon=True)
                    self._worker.start()

    def _run(self) -> None:
        import torch
        torch.set_num_threads(TORCH_THREADS)
        while True:
            batch = [self._pending.get()]
            while len(batch) < self.max_batch:
                try:
                    batch.append(self._pending.get_nowait())
                except queue.Empty:
                    break
            texts = list(dict.fromkeys(t for t, _ in batch))
            try:
                vectors = dict(zip(texts, self._forward(texts)))
            except BaseException as e:  # every waiter gets the error; the worker lives on
                for _, done in batch:
                    done.set_exception(e)
                continue
            self.batches += 1
            self.queries += len(batch)
            for t, done in batch:
                done.set_result(vectors[t])

    def _forward(self, texts: list[str]) -> np.ndarray:
        """One padded forward pass in inference mode with the model's own pooling, L2-normalised (as encode)."""
        import torch
        model = self.model
        with torch.inference_mode():
            features = model.preprocess(texts)
            features = {k: v.to(model.device) for k, v in features.items() if hasattr(v, "to")}
            out = torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)
        return out.float().cpu().numpy()


def _low_priority() -> None:
    """The write-embedding thread: one torch thread (per OS thread), and a lower scheduling priority."""
    import os

    import torch
    torch.set_num_threads(TORCH_THREADS)
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WRITE_NICE)  # Linux: this thread only
    except (AttributeError, OSError):
        pass
