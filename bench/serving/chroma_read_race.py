"""Reads of an embedded Chroma collection while another thread writes it: how many fail, read raw and read
through Store.pages (which reads a failing page again).

Usage: python bench/serving/chroma_read_race.py [--writes 600] [--readers 3]
One writer upserts and deletes small batches of random vectors; readers read the whole collection in a loop
until it is done, first with collection.get(), then again (fresh collection) with Store.pages().
"""
from __future__ import annotations

import argparse
import random
import tempfile
import threading
from pathlib import Path

import numpy as np

from brain.config import Settings
from brain.store import open_store


def race(read, collection, writes: int, readers: int) -> tuple[int, list[str]]:
    stop, errors, reads = threading.Event(), [], [0]

    def writer() -> None:
        rng = random.Random(1)
        for _ in range(writes):
            f = rng.randrange(20)
            if rng.random() < 0.6:
                ids = [f"{f}-{j}" for j in range(rng.randrange(1, 6))]
                collection.upsert(ids=ids, embeddings=np.random.rand(len(ids), 384).astype(np.float32),
                                  documents=["text"] * len(ids), metadatas=[{"n": 1}] * len(ids))
            else:
                collection.delete(ids=[f"{f}-{j}" for j in range(6)])
        stop.set()

    def reader() -> None:
        while not stop.is_set():
            try:
                read(collection)
                reads[0] += 1
            except Exception as e:  # counted, not raised: the figure is how often this happens
                errors.append(str(e))

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(readers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return reads[0] + len(errors), errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=600)
    ap.add_argument("--readers", type=int, default=3)
    args = ap.parse_args()
    include = ["documents", "metadatas", "embeddings"]
    for label, suffix, read in [
        ("collection.get()", "raw", lambda c: c.get(include=include, limit=2000, offset=0)),
        ("store.pages()", "pages", None),
    ]:
        store = open_store(Settings(home=Path(tempfile.mkdtemp(prefix="race."))))
        collection = store.named_collection(suffix)
        read = read or (lambda c, store=store, suffix=suffix: list(store.pages(suffix, include)))
        total, errors = race(read, collection, args.writes, args.readers)
        print(f"{label:18} {len(errors):3} of {total:5} reads failed  {sorted(set(errors))[:2]}")


if __name__ == "__main__":
    main()
