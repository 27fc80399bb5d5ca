"""The `brain` command line: the one place that ties the retrieval core (brain/), the kernels (kernels/) and
the HTTP/MCP server (api/). main.py is the entry point; each module registers one family of commands."""
