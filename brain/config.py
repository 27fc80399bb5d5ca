"""Settings, read from the environment once per process (dependency-injected into the API)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = "kernel-minilm"  # all-MiniLM-L6-v2 adapted to kernel material (brain/models/, docs/embedder.md)
# A bigger file is skipped by name at ingest (a 15 MB markdown file is 12,000 chunks, most of an hour of embedding
# on a 2-core machine). The largest shipped file is 0.1 MB.
DEFAULT_MAX_FILE_MB = 2.0
DEFAULT_MAX_FILE_BYTES = int(DEFAULT_MAX_FILE_MB * 1_000_000)


@dataclass(frozen=True)
class CorpusSpec:
    """A folder to ingest: `name` keys its chunks, `root` is what sources are relative to."""
    name: str
    root: Path
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


def default_corpora() -> list[CorpusSpec]:
    """What `brain ingest` and `brain serve` index when given no path: the shipped worklogs and kernels."""
    return [
        CorpusSpec("docs_corpus", PROJECT_ROOT / "docs_corpus"),
        CorpusSpec("kernels", PROJECT_ROOT / "kernels", include=("**/*.py",)),
    ]


def find_home(cwd: Path | None = None) -> Path:
    """The index folder: $BRAIN_HOME if set, else the nearest `.brain` in the current folder or a parent (as git
    finds its repository), else the project's own `.brain` (where `make run` builds it)."""
    if os.environ.get("BRAIN_HOME"):
        return Path(os.environ["BRAIN_HOME"]).resolve()
    here = (cwd or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".brain").is_dir():
            return folder / ".brain"
    return PROJECT_ROOT / ".brain"


@dataclass(frozen=True)
class Settings:
    home: Path = field(default_factory=lambda: find_home())
    chroma_url: str | None = field(default_factory=lambda: os.environ.get("BRAIN_CHROMA_URL") or None)
    model: str = field(default_factory=lambda: os.environ.get("BRAIN_MODEL", DEFAULT_MODEL))
    device: str | None = field(default_factory=lambda: os.environ.get("BRAIN_DEVICE") or None)
    api_key: str | None = field(default_factory=lambda: os.environ.get("BRAIN_API_KEY") or None)
    # the index's name: its Chroma collections (chunks, "<index>-meta", "<index>-attempts", ...) all derive from it
    index: str = field(default_factory=lambda: os.environ.get("BRAIN_INDEX") or "")
    max_file_bytes: int = field(default_factory=lambda: max_file_bytes(os.environ.get("BRAIN_MAX_FILE_MB")))

    def __post_init__(self):
        if not self.index:  # a frozen dataclass: fill the derived default in place
            object.__setattr__(self, "index", default_index(self.home, self.chroma_url))


def max_file_bytes(megabytes: str | None) -> int:
    """BRAIN_MAX_FILE_MB (default DEFAULT_MAX_FILE_MB) in bytes; a value that is no positive number is an error."""
    if not megabytes:
        return DEFAULT_MAX_FILE_BYTES
    try:
        value = float(megabytes)
    except ValueError:
        value = 0.0
    if not 0 < value < 1e6:
        from brain import BrainError
        raise BrainError(f"BRAIN_MAX_FILE_MB must be a positive number of megabytes, not '{megabytes}'")
    return int(value * 1_000_000)


def default_index(home: Path, chroma_url: str | None) -> str:
    """`brain` in a local home (the home holds only its own index); on a Chroma server `brain-` plus 10 hex of
    the home's path, so two homes pointed at one server never share (or clean up) each other's chunks."""
    if not chroma_url:
        return "brain"
    import hashlib
    return "brain-" + hashlib.sha256(str(Path(home).resolve()).encode()).hexdigest()[:10]


def machine() -> str:
    """What a timing was measured under: `load 1.2 0.9 0.7 (1/5/15 min) on 2 cores` (Unix load averages)."""
    try:
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        load = "?"
    return f"load {load} (1/5/15 min) on {os.cpu_count()} cores"

