"""Thin routers: parse the request, call the Brain (or the kernels runner), return its JSON."""
