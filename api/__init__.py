"""HTTP API, MCP server and search page of the kernel brain (FastAPI). `create_app` in api.app builds it."""
