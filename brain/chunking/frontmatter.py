"""YAML front matter: split it off a markdown page and map its fields onto the project's vocabulary.

Front matter is metadata, not prose: it is never indexed as text. Its title names the document, its
type/kind becomes a document kind, and its tags, keywords and architectures become tags. Line numbers stay
exact because the caller learns how many lines the front matter took.
"""
from __future__ import annotations

import re

import yaml

from brain.chunking import UnsupportedFile
from brain.taxonomy import KINDS, resolve_kind, resolve_tag

_OPEN = "---"
_CLOSE = ("---", "...")
# an architecture as wikis write it (sm_100a, SM90, 90a) -> its family tag; names (Blackwell, H100) go
# through the tag aliases instead
_ARCH_FAMILY = re.compile(r"^(?:sm_?)?(\d{2,3})[a-z]?$")
_ARCH_TAGS = {"100": "sm100", "101": "sm100", "103": "sm100", "90": "sm90"}

TAG_FIELDS = ("tags", "keywords")
ARCH_FIELDS = ("arch", "architecture", "architectures", "gpu", "gpus", "hardware")
KIND_FIELDS = ("type", "kind", "category")
MAX_VALUES = 10_000  # values front matter may hold once its YAML aliases are expanded


def expanded_size(value, memo: dict | None = None) -> int:
    """How many values `value` holds with every shared reference (a YAML alias) counted each time it is used:
    computed once per distinct object, so a 429-byte alias bomb costs microseconds, not its 34 M characters."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    memo[id(value)] = 1  # a self-referencing alias counts once rather than forever
    children = [x for pair in value.items() for x in pair] if isinstance(value, dict) else \
        list(value) if isinstance(value, (list, tuple)) else []
    total = 1 + sum(expanded_size(x, memo) for x in children)
    memo[id(value)] = total
    return total


def split_front_matter(text: str, source: str = "page") -> tuple[dict, str, int]:
    """(metadata, body, lines consumed). Front matter is YAML between a first line `---` and the next line
    `---` or `...`. No front matter, an unclosed block, or YAML that does not parse to a mapping all give
    ({}, text, 0): the page is then indexed whole, as written. YAML whose aliases expand to more than
    MAX_VALUES values (an alias bomb) is refused: UnsupportedFile, and an ingest skips the file by name."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != _OPEN:
        return {}, text, 0
    for end in range(1, len(lines)):
        if lines[end].rstrip("\r\n").rstrip() in _CLOSE:
            break
    else:
        return {}, text, 0
    try:
        meta = yaml.safe_load("".join(lines[1:end]))
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: a date like 2024-13-45
        return {}, text, 0
    if meta is None:
        meta = {}  # `---\n---`: an empty block is still front matter
    if not isinstance(meta, dict):
        return {}, text, 0  # `---` opening a page of prose, or a YAML scalar: not metadata
    if expanded_size(meta) > MAX_VALUES:
        raise UnsupportedFile(f"{source}: front matter expands to more than {MAX_VALUES} values (YAML aliases)")
    return meta, "".join(lines[end + 1:]), end + 1


def _as_list(value) -> list[str]:
    """A YAML list, or a comma-separated string, as a list of non-empty strings."""
    if value is None:
        return []
    if isinstance(value, dict):
        items = list(value)
    elif isinstance(value, (list, tuple, set)):
        items = value
    else:
        items = str(value).split(",")
    return [str(x).strip() for x in items if x is not None and str(x).strip()]


def arch_tag(name: str) -> str:
    """`sm_100a` -> sm100, `SM90` -> sm90, `Blackwell` -> sm100; an architecture with no project tag
    (sm80, sm120) becomes its family name, like the tags the project has."""
    low = name.strip().lower()
    if m := _ARCH_FAMILY.match(low):
        return _ARCH_TAGS.get(m.group(1), f"sm{m.group(1)}")
    return resolve_tag(low)


def front_matter_fields(meta: dict) -> dict:
    """Chunk metadata from front matter: {"title": str, "kind": project kind or "", "doc_type": the type as
    written when it is not a project kind, "tags": [canonical tags, unknown ones as written], "aliases":
    [other names of the page's subject]}. The kind is "" when the page states none, and "reference" when it
    states one the project does not know."""
    if not isinstance(meta, dict):
        raise TypeError(f"front matter must be a mapping, not {type(meta).__name__}")
    title = meta.get("title") or meta.get("name")  # `name`: agent-skill pages carry no title
    title = " ".join(str(title).split()) if title else ""

    kind, doc_type = "", ""
    raw_kind = next((meta[f] for f in KIND_FIELDS if meta.get(f)), None)
    if raw_kind is not None:
        doc_type = str(raw_kind[0] if isinstance(raw_kind, list) and raw_kind else raw_kind).strip()
        kind = resolve_kind(doc_type)
        if kind not in KINDS:
            kind = "reference"
        else:
            doc_type = ""

    tags: list[str] = []
    for f in TAG_FIELDS:
        tags += [resolve_tag(t) for t in _as_list(meta.get(f))]
    for f in ARCH_FIELDS:
        tags += [arch_tag(a) for a in _as_list(meta.get(f))]
    return {"title": title, "kind": kind, "doc_type": doc_type, "tags": list(dict.fromkeys(tags)),
            "aliases": _as_list(meta.get("aliases"))}


def apply_front_matter(chunks: list, fields: dict) -> list:
    """Give every chunk of a page its front-matter tags, and the page's kind where the text alone decided
    nothing (`reference`): a kind the classifier found in a chunk's own heading or text is more specific.
    The page's aliases join each chunk's context (what is embedded and matched with the text, never shown):
    they are the names people search by (LDGSTS, 2CTA, cta_group::2) and the text may not repeat them."""
    also = f"\nalso called: {', '.join(fields['aliases'])}" if fields.get("aliases") else ""
    for c in chunks:
        c.tags = list(dict.fromkeys(c.tags + fields["tags"]))
        if fields["kind"] and c.kind == "reference":
            c.kind = fields["kind"]
        c.context += also
    return chunks
