// The search page: fills the filters from /stats, /tags and /patterns, runs GET /search, renders hits.
// State lives in the URL (?q=&kind=&tag=&pattern=&k=) so a search can be shared, reloaded and gone back to.
"use strict";

const $ = (id) => document.getElementById(id);
const FIELDS = ["q", "kind", "tag", "pattern", "k"];

async function getJSON(url) {
  const r = await fetch(url, {headers: {Accept: "application/json"}});
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    // our errors are {"error": "..."}; FastAPI validation errors are {"detail": [{msg, loc}]}
    const msg = body.error || (Array.isArray(body.detail) ? body.detail.map((d) => `${d.loc.slice(-1)}: ${d.msg}`).join("; ") : r.statusText);
    throw new Error(msg);
  }
  return body;
}

function option(select, value, label) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = label;
  select.appendChild(o);
}

async function loadFilters() {
  try {
    const [stats, tags, patterns] = await Promise.all([getJSON("/stats"), getJSON("/tags"), getJSON("/patterns")]);
    for (const [kind, n] of Object.entries(stats.kinds)) option($("kind"), kind, `${kind} (${n})`);
    for (const t of tags) option($("tag-list"), t.tag, `${t.chunks} chunks`);
    for (const p of patterns) if (p.snippets) option($("pattern"), p.pattern, `${p.pattern} (${p.snippets})`);
  } catch (e) {
    setStatus(`could not load the filters: ${e.message}`, true);
  }
}

function setStatus(text, isError = false) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function codeBlock(text, lang, firstLine) {
  const pre = el("pre", "code");
  // highlight() escapes every piece of text, so its HTML is safe to insert; firstLine null: no line numbers
  pre.innerHTML = HL.highlight(text, lang).map((html, i) =>
    `<span class="line"><span class="ln">${firstLine === null ? "" : firstLine + i}</span>${html}</span>`).join("");
  return pre;
}

function passageHref(r) {
  const params = new URLSearchParams({path: `${r.corpus}/${r.source}`, start: r.start_line, end: r.end_line});
  return `/passage?${params}`;
}

function renderHit(r) {
  const art = el("article", "hit");
  art.dataset.source = `${r.corpus}/${r.source}`;
  const meta = el("div", "meta");
  meta.appendChild(el("span", "rank", `${r.rank}.`));
  meta.appendChild(el("span", "section", r.section || "(no heading)"));
  meta.appendChild(el("span", "badge kind", r.kind));
  for (const t of r.tags) meta.appendChild(el("span", "badge tag", t));
  for (const p of r.patterns) meta.appendChild(el("span", "badge pattern", p));
  if (r.superseded_by) meta.appendChild(el("span", "badge superseded", "superseded by a later attempt"));
  if (r.conflicts_with && r.conflicts_with.length) {
    meta.appendChild(el("span", "badge conflict", `${r.conflicts_with.length} disagreeing record${r.conflicts_with.length === 1 ? "" : "s"}`));
  }
  const a = el("a", "cite", `${r.corpus}/${r.source}:${r.start_line}-${r.end_line}`);
  a.href = passageHref(r);
  meta.appendChild(a);
  art.appendChild(meta);
  // number the lines only where the text is exactly the cited lines (a notebook chunk's cells sit between JSON lines)
  const exact = r.text.split("\n").length === r.end_line - r.start_line + 1;
  art.appendChild(codeBlock(r.text, HL.language(r.source, r.language), exact ? r.start_line : null));
  return art;
}

function renderAttempt(r) {
  // one attempt record as a card: verdict, title, problem and techniques, before -> after, citation link
  const card = el("article", `attempt ${r.verdict}`);
  const head = el("div", "meta");
  head.appendChild(el("span", `badge verdict ${r.verdict}`, r.verdict));
  head.appendChild(el("span", "section", r.title));
  if (r.problem !== "none") head.appendChild(el("span", "badge kind", r.problem));
  for (const t of r.techniques) head.appendChild(el("span", "badge tag", t));
  if (r.status === "superseded") head.appendChild(el("span", "badge superseded", "superseded"));
  if (r.conflicts_with.length) head.appendChild(el("span", "badge conflict", `${r.conflicts_with.length} disagree`));
  const a = el("a", "cite", `${r.corpus}/${r.source}:${r.start_line}-${r.end_line}`);
  a.href = passageHref(r);
  head.appendChild(a);
  card.appendChild(head);
  for (const f of r.figures.slice(0, 4)) {
    card.appendChild(el("div", "figure", `${f.label ? f.label + ": " : ""}${f.before} → ${f.after} ${f.unit}`));
  }
  for (const key of ["hypothesis", "change", "lesson"]) {
    if (r[key]) card.appendChild(el("div", "field", `${key}: ${r[key]}`));
  }
  return card;
}

async function showAttempts(q) {
  $("attempts").replaceChildren();
  try {
    const data = await getJSON(`/attempts?${new URLSearchParams({q, k: 3})}`);
    if (!data.results.length) return;
    $("attempts").appendChild(el("h2", "attempts-title", "Attempt records"));
    for (const r of data.results) $("attempts").appendChild(renderAttempt(r));
  } catch (e) {
    /* records are extra: a failure here must not hide the search results */
  }
}

async function runSearch() {
  const params = new URLSearchParams();
  for (const f of FIELDS) if ($(f).value.trim()) params.set(f, $(f).value.trim());
  if (!params.get("q")) return;
  history.replaceState(null, "", `/?${params}`);
  setStatus("searching ...");
  $("results").replaceChildren();
  try {
    const data = await getJSON(`/search?${params}`);
    setStatus(`${data.results.length} result${data.results.length === 1 ? "" : "s"} in ${data.took_ms} ms`);
    if (data.match) {  // how sure the search is that it found something: strong | weak | none
      $("status").appendChild(el("span", `badge match ${data.match}`, `${data.match} match`));
    }
    if (!data.results.length) $("results").appendChild(el("p", "empty", data.match === "none"
      ? "Nothing in the index matches these words or their meaning." : "Nothing matched: try other words or fewer filters."));
    for (const r of data.results) $("results").appendChild(renderHit(r));
    showAttempts(params.get("q"));
  } catch (e) {
    setStatus(e.message, true);
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  $("search-form").addEventListener("submit", (ev) => { ev.preventDefault(); runSearch(); });
  await loadFilters();
  const url = new URLSearchParams(location.search);
  for (const f of FIELDS) if (url.get(f)) $(f).value = url.get(f);
  if (url.get("q")) runSearch();
});
