// The passage view: lines start..end of an ingested file with CONTEXT lines around them, the cited lines
// marked, from GET /sources/{path}?start=&end=.
"use strict";

const CONTEXT = 15;
const $ = (id) => document.getElementById(id);

async function show() {
  const url = new URLSearchParams(location.search);
  const path = url.get("path") || "";
  const start = parseInt(url.get("start") || "1", 10);
  const end = parseInt(url.get("end") || String(start), 10);
  const whole = url.get("whole") === "1";
  $("title").textContent = `${path}:${start}-${end}`;
  $("whole").href = `/passage?${new URLSearchParams({path, start, end, whole: 1})}`;
  const from = whole ? 1 : Math.max(1, start - CONTEXT);
  const q = whole ? "" : `?start=${from}&end=${end + CONTEXT}`;
  const r = await fetch(`/sources/${path.split("/").map(encodeURIComponent).join("/")}${q}`);
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    $("status").textContent = body.error || r.statusText;
    $("status").className = "error";
    return;
  }
  $("status").textContent = `lines ${body.start_line}-${body.end_line} of ${body.total_lines}`;
  const pre = document.createElement("pre");
  pre.className = "code";
  pre.id = "passage-code";
  // HL.highlight escapes all text
  pre.innerHTML = HL.highlight(body.text, HL.language(path)).map((html, i) => {
    const n = body.start_line + i;
    const cls = n >= start && n <= end ? "line hit-line" : "line";
    return `<span class="${cls}" data-line="${n}"><span class="ln">${n}</span>${html}</span>`;
  }).join("");
  pre.style.maxHeight = "none";
  $("passage").replaceChildren(pre);
  const first = pre.querySelector(".hit-line");
  if (first) first.scrollIntoView({block: "center"});
}

document.addEventListener("DOMContentLoaded", show);
