"""One `k` limit (brain.MAX_K) on every surface: HTTP and MCP say what the CLI says (tests/test_cli_grammar.py)."""
from brain import MAX_K


def test_one_k_limit_over_http_and_mcp(client):
    """Every `k` the HTTP API and the MCP tools take has the same maximum, brain.MAX_K."""
    spec = client.get("/openapi.json").json()
    ks = []
    for path, methods in spec["paths"].items():
        for op in methods.values():
            ks += [(path, p["schema"]["maximum"]) for p in op.get("parameters", []) if p["name"] == "k"]
    for name, schema in spec["components"]["schemas"].items():
        if "k" in schema.get("properties", {}):
            ks.append((name, schema["properties"]["k"]["maximum"]))
    assert {"/search", "/pitfalls", "/snippets", "/context", "/attempts", "SearchRequest", "PitfallRequest"} <= \
        {where for where, _ in ks}
    assert {m for _, m in ks} == {MAX_K}
    assert client.get("/search", params={"q": "tmem", "k": MAX_K + 1}).status_code == 422
    assert client.get("/attempts", params={"k": MAX_K}).status_code == 200

    import anyio

    from api.mcp_server import build_mcp
    tools = anyio.run(build_mcp(lambda: None).list_tools)
    maxima = {t.name: t.input_schema["properties"]["k"]["maximum"] for t in tools if "k" in t.input_schema["properties"]}
    assert {"search", "pitfalls", "snippets", "attempts"} <= set(maxima) and set(maxima.values()) == {MAX_K}
