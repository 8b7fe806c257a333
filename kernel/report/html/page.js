"use strict";
(function () {
  const body = document.body;
  const live = body.dataset.live === "true";
  const run = body.dataset.run;
  let idx = JSON.parse(document.getElementById("hl-index").textContent);
  let N = idx.id.length;
  const PAGE = 100;
  const $ = (id) => document.getElementById(id);
  const el = (tag, text, cls) => {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  };
  const uniq = (xs) => Array.from(new Set(xs));
  const fill = (sel, values, label) => {
    for (const v of values) {
      const o = el("option", label ? label(v) : v);
      o.value = String(v);
      sel.appendChild(o);
    }
  };
  const fields = ["eval", "model", "retriever", "scorer", "min", "max", "error", "length", "depth", "id"];
  const state = new URLSearchParams(location.hash.slice(1));
  let page = Number(state.get("page") || 0);
  let selected = state.has("sample") ? Number(state.get("sample")) : -1;
  let matches = [];

  function filter() {
    const v = {};
    for (const f of fields) v[f] = $("f-" + f).value;
    const sc = idx.scores[v.scorer] || [];
    const inv = idx.invalid[v.scorer] || [];
    const lo = v.min === "" ? -Infinity : Number(v.min);
    const hi = v.max === "" ? Infinity : Number(v.max);
    const len = v.length === "" ? null : Number(v.length);
    const dep = v.depth === "" ? null : Number(v.depth);
    const out = [];
    for (let k = 0; k < N; k++) {
      const ev = idx.evals[idx.e[k]];
      if (v.eval && ev.base !== v.eval) continue;
      if (v.model && ev.model !== v.model) continue;
      if (v.retriever && ev.retriever !== v.retriever) continue;
      if (v.error === "1" && !idx.failed[k]) continue;
      if (v.error === "0" && idx.failed[k]) continue;
      if (v.error === "invalid" && !inv[k]) continue;
      if (len !== null && idx.len[k] !== len) continue;
      if (dep !== null && idx.depth[k] !== dep) continue;
      if (v.id && idx.id[k].indexOf(v.id) < 0) continue;
      if (v.min !== "" || v.max !== "") {
        const s = sc[k];
        if (s === null || s === undefined || s < lo || s > hi) continue;
      }
      out.push(k);
    }
    return out;
  }

  function save() {
    const s = new URLSearchParams();
    for (const f of fields) if ($("f-" + f).value !== "") s.set(f, $("f-" + f).value);
    if (page) s.set("page", page);
    if (selected >= 0) s.set("sample", selected);
    history.replaceState(null, "", "#" + s.toString());
  }

  function render() {
    // A partial index (the live view's first page) holds the list's first
    // samples of idx.total: its matches are those, unfiltered.
    const total = idx.partial ? idx.total : N;
    const shown = idx.partial ? total : matches.length;
    const pages = Math.max(1, Math.ceil(shown / PAGE));
    page = Math.min(page, pages - 1);
    $("count").textContent = shown + " of " + total + " samples";
    $("page").textContent = "page " + (page + 1) + " of " + pages;
    const tb = $("list").tBodies[0];
    tb.replaceChildren();
    const scorer = $("f-scorer").value;
    for (const k of matches.slice(page * PAGE, (page + 1) * PAGE)) {
      const ev = idx.evals[idx.e[k]];
      const tr = el("tr");
      tr.dataset.k = k;
      if (k === selected) tr.className = "sel";
      const s = (idx.scores[scorer] || [])[k];
      const status = idx.failed[k] ? "failed" : (idx.invalid[scorer] || [])[k] ? "invalid" : idx.truncated[k] ? "truncated" : "ok";
      for (const c of [ev.base, ev.model, ev.retriever, idx.id[k], idx.len[k] || "", idx.depth[k] === null ? "" : Math.round(idx.depth[k] * 1000) / 10 + "%",
        s === null || s === undefined ? "–" : s.toFixed(3), status]) tr.appendChild(el("td", c));
      tr.addEventListener("click", () => show(k));
      tb.appendChild(tr);
    }
    save();
  }

  function update() {
    page = 0;
    matches = filter();
    render();
  }

  const chunks = new Map();
  async function detail(k) {
    if (live) {
      const ev = idx.evals[idx.e[k]];
      const u = "/api/sample?run=" + encodeURIComponent(run) + "&eval=" + encodeURIComponent(ev.name) + "&id=" + encodeURIComponent(idx.id[k]);
      const r = await fetch(u);
      if (!r.ok) throw new Error(await r.text());
      return r.json();
    }
    const c = Math.floor(k / idx.chunk);
    if (!chunks.has(c)) chunks.set(c, loadChunk(c));
    return (await chunks.get(c))[k % idx.chunk];
  }

  // A block of sample details is gzipped JSON in base64; it is decoded the
  // first time one of its samples is opened.
  async function loadChunk(c) {
    const text = atob(document.getElementById("hl-d-" + c).textContent);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function section(box, title, node) {
    box.appendChild(el("h4", title));
    box.appendChild(node);
  }

  async function show(k) {
    selected = k;
    for (const tr of $("list").tBodies[0].rows) tr.className = Number(tr.dataset.k) === k ? "sel" : "";
    save();
    const box = $("detail");
    box.hidden = false;
    box.replaceChildren(el("p", "loading…"));
    let d;
    try {
      d = await detail(k);
    } catch (e) {
      box.replaceChildren(el("p", "could not load the sample: " + e.message, "fail"));
      return;
    }
    box.replaceChildren();
    const ev = idx.evals[idx.e[k]];
    box.appendChild(el("h3", idx.id[k] + " · " + ev.name));
    if (!d) {
      box.appendChild(el("p", "No detail journaled for this sample."));
      return;
    }
    const facts = [];
    if (d.length && d.length.tokens) facts.push("length " + d.length.tokens + (d.length.tokenizer ? " (" + d.length.tokenizer + ")" : ""));
    if (d.depth >= 0) facts.push("depth " + d.depth);
    if (d.sent_tokens) facts.push("sent " + d.sent_tokens + " tokens");
    if (d.truncated) facts.push("context truncated to fit");
    if (d.tokens && (d.tokens[0] || d.tokens[1])) facts.push("usage " + d.tokens[0] + " in / " + d.tokens[1] + " out");
    if (d.latency_ms) facts.push(Math.round(d.latency_ms) + " ms");
    box.appendChild(el("p", facts.join(" · ")));
    if (d.failure) box.appendChild(el("p", "failed: " + d.failure.code + ": " + d.failure.message, "fail"));
    const msgs = el("div", null, "messages");
    for (const m of d.messages || []) {
      msgs.appendChild(el("div", m.role, "msg-role"));
      msgs.appendChild(el("pre", m.content, "msg"));
    }
    if (d.elided_chars) msgs.appendChild(el("p", d.elided_chars + " characters of long messages are left out of this file; `hayloft view` shows them whole.", "note"));
    section(box, "messages sent", msgs);
    if (d.params) section(box, "parameters", el("pre", JSON.stringify(d.params)));
    section(box, "response", el("pre", d.response === undefined ? "(no response)" : d.response, "response"));
    if (d.targets) section(box, "targets", el("pre", JSON.stringify(d.targets, null, 1)));
    for (const s of d.scores || []) {
      section(box, "score: " + s.scorer, el("pre", s.value + (s.invalid ? " (invalid)" : "") + (s.details ? "\n" + JSON.stringify(s.details, null, 1) : "")));
    }
    if (d.attempts && d.attempts.length) {
      const t = el("table");
      t.appendChild(el("tr")).append(el("th", "attempt"), el("th", "status"), el("th", "ms"), el("th", "error"));
      for (const a of d.attempts) t.appendChild(el("tr")).append(el("td", a.n), el("td", a.status), el("td", Math.round(a.latency_ms)), el("td", a.error || ""));
      section(box, "attempts", t);
    }
    if (d.metadata) section(box, "metadata", el("pre", JSON.stringify(d.metadata, null, 1)));
  }

  // start fills the filters from the whole index and shows the list.
  function start() {
    fill($("f-eval"), uniq(idx.evals.map((e) => e.base)));
    fill($("f-model"), uniq(idx.evals.map((e) => e.model)));
    fill($("f-retriever"), uniq(idx.evals.map((e) => e.retriever)));
    fill($("f-scorer"), idx.scorers);
    fill($("f-length"), uniq(idx.len.filter((l) => l > 0)).sort((a, b) => a - b));
    fill($("f-depth"), uniq(idx.depth.filter((d) => d !== null)).sort((a, b) => a - b), (d) => Math.round(d * 1000) / 10 + "%");
    for (const f of fields) if (state.has(f)) $("f-" + f).value = state.get(f);
    for (const f of fields) $("f-" + f).addEventListener(f === "id" || f === "min" || f === "max" ? "input" : "change", update);
    $("prev").addEventListener("click", () => { if (page > 0) { page--; render(); } });
    $("next").addEventListener("click", () => { page++; render(); });
    matches = filter();
    render();
    if (selected >= 0 && selected < N) show(selected);
    body.dataset.ready = "1";
  }

  if (!idx.partial) {
    start();
  } else {
    // The live view sent the list's first page and the run's counts; the
    // whole index and the figures drawn from every sample follow. The
    // first page shows meanwhile unless the address asks for more.
    // (The scorer only picks the score column: a reload keeps it.)
    if (page === 0 && selected < 0 && fields.every((f) => f === "scorer" || !state.has(f))) {
      matches = idx.id.map((_, k) => k);
      fill($("f-scorer"), idx.scorers);
      if (state.has("scorer")) $("f-scorer").value = state.get("scorer");
      render();
    }
    body.dataset.first = "1";
    (async () => {
      let rest;
      try {
        const r = await fetch("/api/rest?run=" + encodeURIComponent(run));
        if (!r.ok) throw new Error(await r.text());
        rest = await r.json();
      } catch (e) {
        $("count").textContent = "could not load the sample index: " + e.message;
        return;
      }
      // The server drew these from the journal with every model output
      // escaped, as it draws the rest of the page.
      for (const [id, h] of Object.entries(rest.later)) {
        const place = $(id);
        if (place) place.innerHTML = h;
      }
      idx = rest.index;
      N = idx.id.length;
      $("f-scorer").replaceChildren();
      start();
    })();
  }

  // The live view redraws while the run is in progress.
  if (live && body.dataset.status === "running") {
    const drawn = body.dataset.progress;
    setInterval(async () => {
      try {
        const r = await fetch("/api/progress?run=" + encodeURIComponent(run));
        if (r.ok && (await r.text()) !== drawn) location.reload();
      } catch (e) { /* the server stopped; keep the page */ }
    }, 2000);
  }
})();
