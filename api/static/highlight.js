// A small syntax highlighter for the search page (no dependencies): Python, and markdown whose fenced code
// blocks are highlighted as Python-like code. Output is HTML lines; every piece of text is escaped.
"use strict";

const HL = (() => {
  const KEYWORDS = new Set(("False None True and as assert async await break class continue def del elif else " +
    "except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield " +
    "match case").split(" "));
  const BUILTINS = new Set(("print len range int float str bool list dict set tuple min max sum abs enumerate zip " +
    "isinstance getattr setattr hasattr super type object self cls").split(" "));
  const PY = /(#[^\n]*)|([rRbBuUfF]{0,2}(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)))|([rRbBuUfF]{0,2}(?:"(?:\\.|[^"\\\n])*"?|'(?:\\.|[^'\\\n])*'?))|(@[A-Za-z_][\w.]*)|(\b(?:0[xX][\da-fA-F_]+|\d[\d_]*(?:\.\d*)?(?:[eE][+-]?\d+)?)\b)|([A-Za-z_]\w*)|(\s+)|([\s\S])/gy;

  const escape = (s) => s.replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));

  // -> [[cssClass or "", text], ...]
  function python(src) {
    const out = [];
    let prev = "";
    PY.lastIndex = 0;
    let m;
    while (PY.lastIndex < src.length && (m = PY.exec(src)) !== null) {
      const [text, comment, triple, str, deco, num, ident] = m;
      let cls = "";
      if (comment) cls = "hl-com";
      else if (triple || str) cls = "hl-str";
      else if (deco) cls = "hl-deco";
      else if (num) cls = "hl-num";
      else if (ident) {
        if (KEYWORDS.has(ident)) cls = "hl-kw";
        else if (prev === "def" || prev === "class") cls = "hl-fn";
        else if (BUILTINS.has(ident)) cls = "hl-bi";
      }
      out.push([cls, text]);
      if (text.trim()) prev = text;
    }
    return out;
  }

  const FENCE = /^\s*(```|~~~)/;
  function markdown(src) {
    const out = [];
    let code = null;  // lines of the open fenced block
    const flush = () => { if (code) { out.push(...python(code.join("\n") + "\n")); code = []; } };
    for (const line of src.split("\n")) {
      if (FENCE.test(line)) {
        if (code === null) { out.push(["hl-fence", line + "\n"]); code = []; }
        else { flush(); code = null; out.push(["hl-fence", line + "\n"]); }
      } else if (code !== null) code.push(line);
      else if (/^\s*#{1,6}\s/.test(line)) out.push(["hl-head", line + "\n"]);
      else {
        // inline `code` and **bold** in prose
        const re = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)/g;
        let last = 0, m;
        while ((m = re.exec(line)) !== null) {
          if (m.index > last) out.push(["", line.slice(last, m.index)]);
          out.push([m[1] ? "hl-code" : "hl-bold", m[0]]);
          last = m.index + m[0].length;
        }
        out.push(["", line.slice(last) + "\n"]);
      }
    }
    if (code !== null && code.length) out.push(...python(code.join("\n") + "\n"));
    // drop the newline added after the last line
    const lastTok = out[out.length - 1];
    if (lastTok && lastTok[1].endsWith("\n") && !src.endsWith("\n")) lastTok[1] = lastTok[1].slice(0, -1);
    return out;
  }

  // tokens -> one HTML string per source line (spans never cross a line, so lines can be numbered)
  function lines(tokens) {
    const result = [""];
    for (const [cls, text] of tokens) {
      text.split("\n").forEach((piece, i) => {
        if (i > 0) result.push("");
        if (piece) result[result.length - 1] += cls ? `<span class="${cls}">${escape(piece)}</span>` : escape(piece);
      });
    }
    return result;
  }

  function language(path, lang) {
    if (lang === "python" || /\.py$/.test(path || "")) return "python";
    return "markdown";
  }

  function highlight(src, lang) {
    return lines(lang === "python" ? python(src) : markdown(src));
  }

  return {highlight, language, escape};
})();
