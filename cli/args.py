"""The one argument grammar of the read commands: text as unquoted words or `-` for stdin, one `k` limit
(brain.MAX_K), the same filters, and `--full` for whole passages. Imports nothing heavy: a command that goes
through a running server never loads the index's modules."""
from __future__ import annotations

import argparse
import sys

from brain import MAX_K

FILTERS = ("kind", "tag", "source", "language", "corpus")


def add_text(p: argparse.ArgumentParser, name: str, help: str, required: bool = True) -> None:
    """Text as words (quoted or not); a lone `-` reads it from stdin."""
    p.add_argument(name, nargs="+" if required else "*", metavar=name.upper(),
                   help=f"{help}: unquoted words, or '-' to read it from stdin")


def text_of(words: list[str] | None) -> str | None:
    """The words of add_text as one string (None when optional and absent); `-` alone: stdin."""
    if not words:
        return None
    if words == ["-"]:
        return sys.stdin.read()
    return " ".join(words)


def add_k(p: argparse.ArgumentParser, default: int, what: str = "results") -> None:
    p.add_argument("-k", "-n", "--k", type=int, default=default, dest="k",
                   help=f"how many {what} (default {default}, at most {MAX_K})")


def add_filter_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kind", help="lesson, failed-attempt, constraint, result, how-to, reference, code")
    p.add_argument("--tag", help="a tag or alias (tcgen05/UMMA, tma, tmem, s2t, pipeline, ...)")
    p.add_argument("--source", help="only sources whose path contains this text")
    p.add_argument("--language", help="markdown, python, rst")
    p.add_argument("--corpus", help="only this corpus")


def filter_values(args) -> dict:
    """The filters given, by name (query parameters of the HTTP API, fields of brain.search.Filters)."""
    return {name: getattr(args, name) for name in FILTERS if getattr(args, name, None)}


def filters_from(args):
    from brain.search import Filters
    return Filters(**filter_values(args))


def add_output_args(p: argparse.ArgumentParser, full: bool = True) -> None:
    p.add_argument("--json", action="store_true", help="the API's JSON (whole passages)")
    if full:
        p.add_argument("--full", action="store_true", help="print whole passages (plain output cuts them)")
