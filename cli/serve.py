"""`brain serve` (HTTP + MCP + the search page) and `brain mcp` (MCP on stdio)."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("serve", help="ingest the default corpora, then serve HTTP + MCP + the search page")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--no-ingest", action="store_true", help="serve the index as it is")
    p.add_argument("--watch", action="store_true", help="re-ingest changed, added and deleted files as they change")
    p.set_defaults(handler=cmd_serve)

    p = sub.add_parser("mcp", help="MCP server on stdio, for coding agents")
    p.set_defaults(handler=cmd_mcp)


def cmd_serve(args, settings) -> int:
    from api.server import serve
    return serve(settings, host=args.host, port=args.port, ingest_first=not args.no_ingest, watch=args.watch)


def cmd_mcp(args, settings) -> int:
    from api.mcp_server import run_stdio
    return run_stdio(settings)
