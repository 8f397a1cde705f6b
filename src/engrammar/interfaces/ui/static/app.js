// engrammar inspector: vanilla JavaScript over the public REST API (no library, no build step).
// Every value from the server is put on the page with textContent, never as HTML.
"use strict";

const KEY_STORE = "engrammar.key";
const SCOPE_STORE = "engrammar.scope";
const PAGE_SIZE = 50; // as memoryListQuery (boot.js) asks
const $ = (sel, root = document) => root.querySelector(sel);

// -- the API ---------------------------------------------------------------------------------
class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(`${status} ${err.type || "error"}: ${err.message || "request failed"}`);
    this.status = status;
  }
}

async function api(method, path, { query, body } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(query || {})) {
    if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, v);
  }
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(KEY_STORE) || ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const early = window.earlyMemoryList;
  let res;
  if (early && method === "GET" && early.url === url.toString()) {
    window.earlyMemoryList = null; // started by boot.js before the page was parsed; once
    res = await early.response;
  } else {
    res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  }
  const data = await res.json().catch(() => null);
  if (res.status === 401) { logout("The key was refused (401). Log in again."); }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

// -- small DOM helpers -----------------------------------------------------------------------
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v); else el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
const fmtTime = (t) => (t ? new Date(t * 1000).toISOString().replace("T", " ").slice(0, 19) : "");
const short = (text, n = 80) => (text && text.length > n ? text.slice(0, n - 1) + "…" : text || "");
const num = (x, d = 3) => (x === null || x === undefined ? "—" : Number(x).toFixed(d));

function status(text, error = false) {
  const el = $("#status");
  el.textContent = text;
  el.classList.toggle("error", error);
}
async function guarded(fn) {
  try { return await fn(); } catch (e) { status(e.message, true); console.error(e); return null; }
}

// -- the scope every page works in -----------------------------------------------------------
function getScope() {
  try { return JSON.parse(sessionStorage.getItem(SCOPE_STORE)) || {}; } catch { return {}; }
}
// What memories say, for ids a view names but was not sent (nodes of graph paths, the memories
// of ratings and reply signals): read through the API, at most `limit`; an id that cannot be
// read is left out, and the view shows a short id for it.
async function contentsOf(ids, known = new Map(), limit = 60) {
  const missing = [...new Set(ids)].filter((id) => id && !known.has(id)).slice(0, limit);
  const found = await Promise.all(missing.map((id) =>
    api("GET", `/v1/memories/${encodeURIComponent(id)}`).then((m) => [id, m.content]).catch(() => null)));
  for (const f of found) if (f) known.set(f[0], f[1]);
  return known;
}
// A note naming memories by id ("superseded by <id>") names them by what they say instead.
function readable(note, contents) {
  return note.replace(/\b[0-9a-f]{32}\b/g, (id) => (contents.has(id) ? `“${short(contents.get(id), 50)}”` : "a memory not shown"));
}
function setScope(scope) {
  const clean = {};
  for (const k of ["user_id", "agent_id", "session_id"]) if (scope[k]) clean[k] = scope[k];
  sessionStorage.setItem(SCOPE_STORE, JSON.stringify(clean));
  $("#scope-user").value = clean.user_id || "";
  $("#scope-agent").value = clean.agent_id || "";
  $("#scope-session").value = clean.session_id || "";
}
const scopeLabel = (sc) =>
  ["user_id", "agent_id", "session_id"].filter((k) => sc[k]).map((k) => `${k}=${sc[k]}`).join(" ") || "whole workspace";
function needScope() {
  const sc = getScope();
  if (sc.user_id || sc.agent_id || sc.session_id) return sc;
  return null;
}
function scopeHint() {
  return h("p", { class: "card" }, "Choose a scope first: a user, agent or session in the scope bar above, or on the ",
    h("a", { href: "#/memories" }, "Memories"), " page.");
}

// -- dialog ----------------------------------------------------------------------------------
function openDialog(title, body, actions) {
  const dlg = $("#dialog");
  $("#dialog-title").textContent = title;
  $("#dialog-body").replaceChildren(body);
  $("#dialog-actions").replaceChildren(...actions);
  dlg.showModal();
  return dlg;
}
function confirmDialog(title, body, okLabel, danger = false) {
  return new Promise((resolve) => {
    const dlg = openDialog(title, body, [
      h("button", { type: "submit", value: "cancel", class: "secondary" }, "Cancel"),
      h("button", { type: "submit", value: "ok", class: danger ? "danger" : "" }, okLabel),
    ]);
    dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
  });
}

// -- pages -----------------------------------------------------------------------------------
const pages = { memories: memoriesPage, recall: recallPage, graph: graphPage, learning: learningPage, tensions: tensionsPage };

function route() {
  if (!sessionStorage.getItem(KEY_STORE)) { showLogin(); return; }
  const [, name = "memories", arg] = location.hash.replace(/^#/, "").split("/");
  const page = pages[name] ? name : "memories";
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.page === page) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  document.title = `${page[0].toUpperCase()}${page.slice(1)} · engrammar inspector`;
  status("");
  const root = $("#page");
  root.replaceChildren();
  pages[page](root, arg ? decodeURIComponent(arg) : null);
  if (page !== "memories" && !$("#workspace-label").textContent) {
    // The memories page learns the workspace from its scope tree; other pages ask for it.
    api("GET", "/v1/scopes", { query: { limit: 1 } }).then((d) => { $("#workspace-label").textContent = `workspace: ${d.workspace}`; }, () => {});
  }
}

// 1. Scopes and memories ---------------------------------------------------------------------
const listState = { offset: 0, filters: {} };

function memoriesPage(root) {
  const treeBox = h("div", { class: "tree", id: "scope-tree" }, h("p", { class: "muted" }, "Loading scopes…"));
  const listBox = h("div", { id: "memory-list" });
  const filters = h("form", { class: "filters", id: "filters", "aria-label": "Filter memories" },
    h("label", {}, "Text", h("input", { name: "text", type: "search", value: listState.filters.text || "" })),
    h("label", {}, "Kind", select("kind", ["", "message", "fact", "decision", "preference", "event"], listState.filters.kind)),
    h("label", {}, "Role", select("role", ["", "user", "assistant", "system", "tool"], listState.filters.role)),
    h("label", {}, "From", h("input", { name: "since", type: "datetime-local", value: listState.filters.since || "" })),
    h("label", {}, "Until", h("input", { name: "until", type: "datetime-local", value: listState.filters.until || "" })),
    h("label", {}, "Order", select("order", ["newest", "oldest"], listState.filters.order || "newest")),
    h("button", { type: "submit" }, "Filter"));
  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    listState.filters = Object.fromEntries(new FormData(filters).entries());
    listState.offset = 0;
    loadMemories(listBox);
  });
  root.append(h("div", { class: "cols" },
    h("section", { class: "card", "aria-labelledby": "scopes-h" }, h("h2", { id: "scopes-h" }, "Scopes"), treeBox),
    h("section", { class: "card", "aria-labelledby": "mem-h" }, h("h2", { id: "mem-h" }, "Memories"), filters, listBox)));
  // The list first: it is what the page is for; the scope tree fills in beside it once the
  // list is on screen (on a busy server the two requests would otherwise compete).
  loadMemories(listBox).then(() => loadScopes(treeBox, listBox));
}

function select(name, options, value) {
  return h("select", { name }, options.map((o) => h("option", { value: o, selected: o === (value || "") }, o || "any")));
}

async function loadScopes(box, listBox) {
  await guarded(async () => {
    const data = await api("GET", "/v1/scopes");
    $("#workspace-label").textContent = `workspace: ${data.workspace}`;
    const users = new Map();
    for (const row of data.scopes) {
      const u = users.get(row.user_id) || { count: 0, agents: new Map() };
      u.count += row.memories;
      const a = u.agents.get(row.agent_id) || { count: 0, sessions: [] };
      a.count += row.memories;
      a.sessions.push(row);
      u.agents.set(row.agent_id, a);
      users.set(row.user_id, u);
    }
    const current = getScope();
    const pick = (sc) => { setScope(sc); listState.offset = 0; loadMemories(listBox); markPressed(box); };
    // A missing key cannot be asked for (the API filters only on given keys): such a level
    // is a label, not a button.
    const item = (label, count, sc) => h("li", {},
      sc === null
        ? h("span", { class: "muted" }, label)
        : h("button", { type: "button", "data-scope": JSON.stringify(sc), "aria-pressed": String(sameScope(sc, current)), onclick: () => pick(sc) }, label),
      h("span", { class: "count" }, `${count.toLocaleString()} ${count === 1 ? "memory" : "memories"}`));
    const tree = h("ul", {}, item(`workspace ${data.workspace}`, data.scopes.reduce((n, r) => n + r.memories, 0), {}));
    for (const [user, u] of users) {
      const uli = item(user === null ? "(no user)" : `user ${user}`, u.count, user === null ? null : { user_id: user });
      const agents = h("ul");
      for (const [agent, a] of u.agents) {
        const base = user === null ? {} : { user_id: user };
        const ali = item(agent === null ? "(no agent)" : `agent ${agent}`, a.count, agent === null ? null : { ...base, agent_id: agent });
        const sessions = h("ul");
        for (const row of a.sessions) {
          if (row.session_id === null) continue;
          sessions.append(item(`session ${row.session_id}`, row.memories,
            { ...(user === null ? {} : { user_id: user }), ...(agent === null ? {} : { agent_id: agent }), session_id: row.session_id }));
        }
        if (sessions.childElementCount) ali.append(sessions);
        agents.append(ali);
      }
      uli.append(agents);
      tree.firstChild.after(uli);
    }
    box.replaceChildren(tree, data.truncated ? h("p", { class: "muted" }, "More scopes than shown.") : "");
  });
}
function sameScope(a, b) {
  return ["user_id", "agent_id", "session_id"].every((k) => (a[k] || null) === (b[k] || null));
}
function markPressed(box) {
  const current = getScope();
  for (const b of box.querySelectorAll("button[data-scope]")) b.setAttribute("aria-pressed", String(sameScope(JSON.parse(b.dataset.scope), current)));
}

async function loadMemories(box) {
  const query = memoryListQuery(getScope(), listState.offset, listState.filters);
  await guarded(async () => {
    const data = await api("GET", "/v1/memories", { query });
    performance.mark("memory-list-data");
    const rows = data.memories.map((m) => h("tr", {},
      h("td", { class: "mono" }, fmtTime(m.created_at)),
      h("td", {}, m.role, " ", h("span", { class: "badge" }, m.kind), m.status !== "active" ? h("span", { class: "badge warn" }, m.status) : null),
      h("td", { class: "content" }, m.content),
      h("td", { class: "muted" }, [m.user_id, m.agent_id, m.session_id].filter(Boolean).join(" / ")),
      h("td", {}, h("div", { class: "actions" },
        h("button", { type: "button", class: "small secondary", onclick: () => showHistory(m) }, "History"),
        h("button", { type: "button", class: "small secondary", onclick: () => editMemory(m, box) }, "Edit"),
        h("button", { type: "button", class: "small danger", onclick: () => forgetMemory(m, box) }, "Forget"),
        h("a", { href: `#/graph/${encodeURIComponent(m.id)}`, class: "small" }, "Graph")))));
    const first = data.total ? listState.offset + 1 : 0;
    const last = listState.offset + data.memories.length;
    box.replaceChildren(
      h("p", { class: "muted", id: "memory-count", elementtiming: "memory-list" }, `${scopeLabel(getScope())}: ${first.toLocaleString()}–${last.toLocaleString()} of ${data.total.toLocaleString()}`),
      h("div", { class: "table-wrap" }, h("table", { id: "memory-table", class: "stack", "aria-labelledby": "mem-h" },
        h("thead", {}, h("tr", {}, h("th", {}, "Created (UTC)"), h("th", {}, "Role / kind"), h("th", {}, "Content"), h("th", {}, "Scope"), h("th", {}, "Actions"))),
        h("tbody", {}, rows))),
      h("div", { class: "pager" },
        h("button", { type: "button", disabled: listState.offset === 0, onclick: () => { listState.offset = Math.max(0, listState.offset - PAGE_SIZE); loadMemories(box); } }, "← Previous"),
        h("button", { type: "button", disabled: last >= data.total, onclick: () => { listState.offset += PAGE_SIZE; loadMemories(box); } }, "Next →")));
    performance.mark("memory-list-dom");
  });
}

async function showHistory(m) {
  await guarded(async () => {
    const data = await api("GET", `/v1/memories/${encodeURIComponent(m.id)}/history`);
    const body = h("div", {}, h("p", { class: "mono muted" }, m.id),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "When (UTC)"), h("th", {}, "Change"), h("th", {}, "Before → after"), h("th", {}, "Reason"))),
        h("tbody", {}, data.history.map((c) => h("tr", {},
          h("td", { class: "mono" }, fmtTime(c.at)), h("td", {}, c.op),
          h("td", { class: "content" }, c.before ? `${short(c.before, 120)} → ` : "", short(c.after || "", 120)),
          h("td", {}, c.reason || ""))))));
    openDialog("History", body, [h("button", { type: "submit", value: "close" }, "Close")]);
  });
}

async function editMemory(m, box) {
  const area = h("textarea", { id: "edit-content", name: "content" }, m.content);
  const reason = h("input", { id: "edit-reason", name: "reason", placeholder: "why (kept in the history)" });
  const body = h("div", {}, h("label", { for: "edit-content" }, "Content"), area,
    h("label", { for: "edit-reason" }, "Reason"), reason);
  if (!(await confirmDialog("Edit memory", body, "Save"))) return;
  await guarded(async () => {
    await api("PATCH", `/v1/memories/${encodeURIComponent(m.id)}`, { body: { content: area.value, reason: reason.value || null } });
    status("Saved.");
    loadMemories(box);
  });
}

async function forgetMemory(m, box) {
  const body = h("div", {}, h("p", {}, "Forget this memory and its graph links? This cannot be undone."), h("blockquote", {}, m.content));
  if (!(await confirmDialog("Forget memory", body, "Forget", true))) return;
  await guarded(async () => {
    await api("DELETE", `/v1/memories/${encodeURIComponent(m.id)}`);
    status("Forgotten.");
    loadMemories(box);
  });
}

// 2. Recall playground -----------------------------------------------------------------------
const recallState = { query: "", limit: 10, previous: null, last: null };

function recallPage(root) {
  const sc = needScope();
  if (!sc) { root.append(scopeHint()); return; }
  const out = h("div", { id: "recall-out" });
  const form = h("form", { class: "filters", id: "recall-form", "aria-label": "Recall" },
    h("label", { style: null }, "Query", h("input", { name: "query", id: "recall-query", size: 48, required: true, value: recallState.query })),
    h("label", {}, "Limit", h("input", { name: "limit", type: "number", min: 1, max: 100, value: recallState.limit })),
    h("button", { type: "submit" }, "Recall"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    recallState.query = form.query.value;
    recallState.limit = Number(form.limit.value) || 10;
    runRecall(out);
  });
  root.append(h("section", { class: "card" }, h("h2", {}, `Recall playground · ${scopeLabel(sc)}`), form, legend()), out);
  if (recallState.last) renderRecall(out, recallState.last);
}

function legend() {
  return h("div", { class: "legend", "aria-hidden": "true" },
    ...[["relevance", "relevance"], ["graph", "graph (graph_weight × graph)"], ["learned", "learned from feedback"],
      ["other", "other (e.g. prior decision lift)"], ["neg", "removed by negative feedback"]]
      .map(([c, t]) => h("span", {}, h("i", { class: `seg-${c}` }), t)));
}

async function runRecall(out) {
  await guarded(async () => {
    const data = await api("POST", "/v1/recall", { body: { query: recallState.query, limit: recallState.limit, ...getScope() } });
    recallState.previous = recallState.last && recallState.last.query === data.query ? recallState.last : null;
    recallState.last = data;
    recallState.runs = (recallState.runs || 0) + 1;
    const shown = new Map(data.memories.map((r) => [r.memory.id, r.memory.content]));
    const noted = data.memories.flatMap((r) => (r.note || "").match(/\b[0-9a-f]{32}\b/g) || []);
    const named = [...data.paths.flatMap((p) => p.nodes), ...data.tensions.flatMap((t) => [t.a, t.b]), ...noted];
    data.contents = await contentsOf(named, shown);
    renderRecall(out, data);
    out.dataset.run = String(recallState.runs);
    status(`Recalled ${data.memories.length} memories (recall_id ${data.recall_id}).`);
  });
}

// Splits a score into additive parts: score = (relevance + graph_weight·graph) × (1 + learned),
// so each learned source adds base × its share; whatever the formula leaves (a prior decision
// ranked first, rounding) is "other", and negative parts are drawn as a removed stretch.
function scoreParts(r) {
  const c = r.components || {};
  const relevance = c.relevance || 0;
  const graph = (c.graph_weight || 0) * (c.graph || 0);
  const base = relevance + graph;
  const parts = [["relevance", relevance], ["graph", graph]];
  for (const [k, v] of Object.entries(c)) {
    if (k.startsWith("learned_") && k !== "learned_evidence" && typeof v === "number") parts.push([k, base * v]);
  }
  const sum = parts.reduce((n, [, v]) => n + v, 0);
  const rest = r.score - sum;
  if (Math.abs(rest) > 1e-6) parts.push(["other", rest]);
  return parts;
}

function scoreBar(r, scale) {
  const parts = scoreParts(r);
  const pos = parts.filter(([, v]) => v > 0);
  const neg = parts.filter(([, v]) => v < 0);
  const negTotal = -neg.reduce((n, [, v]) => n + v, 0);
  const posTotal = pos.reduce((n, [, v]) => n + v, 0);
  const bar = h("div", { class: "bar", role: "img", "aria-label": `score ${num(r.score)} = ` + parts.map(([k, v]) => `${k} ${num(v)}`).join(" + ") });
  let drawn = 0;
  for (const [k, v] of pos) {
    // Negative parts take their length off the end of the positive stack.
    const keep = Math.max(0, Math.min(v, posTotal - negTotal - drawn));
    if (keep > 0) bar.append(h("span", { class: `seg-${k.startsWith("learned") ? "learned" : k}`, style: null, title: `${k}: ${num(v, 4)}`, "data-w": keep / scale }));
    drawn += keep;
  }
  if (negTotal > 0) bar.append(h("span", { class: "seg-neg", title: neg.map(([k, v]) => `${k}: ${num(v, 4)}`).join(", "), "data-w": Math.min(negTotal, posTotal) / scale }));
  for (const seg of bar.children) seg.style.width = `${(Number(seg.dataset.w) * 100).toFixed(2)}%`;
  const table = h("span", { class: "muted mono" }, parts.map(([k, v]) => `${k} ${v >= 0 ? "+" : ""}${num(v)}`).join("  "), ` = ${num(r.score)}`);
  return [bar, table];
}

function renderRecall(out, data) {
  const contents = data.contents || new Map(data.memories.map((r) => [r.memory.id, r.memory.content]));
  const prevRank = new Map((recallState.previous ? recallState.previous.memories : []).map((r, i) => [r.memory.id, i + 1]));
  const scale = Math.max(1e-9, ...data.memories.map((r) => scoreParts(r).filter(([, v]) => v > 0).reduce((n, [, v]) => n + v, 0)));
  const tensionIds = new Set(data.tensions.flatMap((t) => [t.a, t.b]));
  const list = h("ol", { class: "results", id: "recall-results" }, data.memories.map((r, i) => {
    const rank = i + 1;
    const before = prevRank.get(r.memory.id);
    let move = null;
    if (recallState.previous) {
      if (before === undefined) move = h("span", { class: "move-up" }, "new");
      else if (before > rank) move = h("span", { class: "move-up", "aria-label": `up from ${before}` }, `▲ from ${before}`);
      else if (before < rank) move = h("span", { class: "move-down", "aria-label": `down from ${before}` }, `▼ from ${before}`);
    }
    return h("li", { class: "result", "data-id": r.memory.id },
      h("div", { class: "result-head" },
        h("span", { class: "rank" }, `#${rank}`), move,
        h("span", { class: "content" }, r.memory.content),
        h("span", { class: "badge" }, r.via),
        r.note ? h("span", { class: "badge good" }, readable(r.note, contents)) : null,
        tensionIds.has(r.memory.id) ? h("span", { class: "badge bad" }, "in tension") : null),
      ...scoreBar(r, scale),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "small secondary", "aria-label": `Explain #${rank}`, onclick: () => explain(r.memory.id) }, "Explain"),
        h("button", { type: "button", class: "small", "aria-label": `Helped: #${rank}`, onclick: () => rate(r.memory.id, "accepted", data.recall_id, out) }, "Helped"),
        h("button", { type: "button", class: "small danger", "aria-label": `Wrong: #${rank}`, onclick: () => rate(r.memory.id, "rejected", data.recall_id, out) }, "Wrong"),
        h("a", { href: `#/graph/${encodeURIComponent(r.memory.id)}` }, "Graph")));
  }));
  const label = (id) => short(contents.get(id) || `memory ${id.slice(0, 8)}`, 50);
  const PATHS_SHOWN = 8;
  const paths = data.paths.length
    ? data.paths.slice(0, PATHS_SHOWN).map((p) => h("p", { class: "path" }, p.nodes.flatMap((n, i) => [
        i ? h("span", { class: "arrow" }, `—${p.kinds[i - 1]} ${num(p.weights[i - 1], 2)}→`) : null, label(n)]),
      h("span", { class: "muted" }, `  (score ${num(p.score)})`)))
      .concat(data.paths.length > PATHS_SHOWN ? [h("p", { class: "muted" }, `and ${data.paths.length - PATHS_SHOWN} more, weaker`)] : [])
    : [h("p", { class: "muted" }, "No graph paths.")];
  const tensions = data.tensions.length
    ? data.tensions.map((t) => h("p", {}, h("span", { class: "badge bad" }, t.kind), ` ${label(t.a)}  ⟷  ${label(t.b)}`,
        t.newer ? h("span", { class: "muted" }, ` — current: ${label(t.newer)}`) : null))
    : [h("p", { class: "muted" }, "No tensions among the results.")];
  const reply = h("textarea", { id: "reply-text", required: true });
  const replyForm = h("form", { id: "reply-form" },
    h("label", { for: "reply-text" }, "The agent's reply (learn from it: MemWire alignment feedback)"), reply,
    h("button", { type: "submit" }, "Send reply feedback"));
  replyForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    await guarded(async () => {
      const res = await api("POST", "/v1/feedback", { body: { response: reply.value, recall_id: data.recall_id, ...getScope() } });
      status(`Feedback: ${res.strengthened} edges strengthened, ${res.weakened} weakened. Recall again to see the new ranking.`);
    });
  });
  out.replaceChildren(
    h("div", { class: "cols2" },
      h("section", { class: "card", "aria-labelledby": "res-h" }, h("h2", { id: "res-h" }, `Results for “${data.query}”`),
        h("button", { type: "button", id: "recall-again", class: "secondary", onclick: () => runRecall(out) }, "Recall again"), list),
      h("div", {},
        h("section", { class: "card" }, h("h2", {}, "Graph paths"), ...paths),
        h("section", { class: "card" }, h("h2", {}, "Tensions"), ...tensions),
        h("section", { class: "card" }, h("h2", {}, "What the agent gets (formatted)"), h("pre", { class: "formatted", id: "formatted" }, data.formatted)),
        h("section", { class: "card" }, replyForm))));
}

async function rate(memoryId, verdict, recallId, out) {
  await guarded(async () => {
    await api("POST", "/v1/ratings", { body: { memory_id: memoryId, verdict, recall_id: recallId, ...getScope() } });
    status(`Rated ${verdict}. Re-running the recall…`);
    await runRecall(out);
  });
}

async function explain(memoryId) {
  await guarded(async () => {
    const data = await api("POST", "/v1/explain", { body: { query: recallState.query, memory_id: memoryId, limit: recallState.limit, ...getScope() } });
    const rows = Object.entries(data.components || {}).map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", { class: "num mono" }, typeof v === "number" ? num(v, 4) : JSON.stringify(v))));
    const body = h("div", {},
      h("dl", { class: "kv" }, h("dt", {}, "rank"), h("dd", {}, String(data.rank ?? "—")), h("dt", {}, "score"), h("dd", {}, num(data.score, 4)),
        data.rank_before_learning ? [h("dt", {}, "rank before learning"), h("dd", {}, String(data.rank_before_learning))] : null,
        data.formula ? [h("dt", {}, "formula"), h("dd", {}, data.formula)] : null,
        data.note ? [h("dt", {}, "note"), h("dd", {}, readable(data.note, (recallState.last && recallState.last.contents) || new Map()))] : null),
      h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "component"), h("th", { class: "num" }, "value"))), h("tbody", {}, rows)));
    openDialog("Explain", body, [h("button", { type: "submit", value: "close" }, "Close")]);
  });
}

// 3. Graph -----------------------------------------------------------------------------------
const KIND_COLOURS = ["#2f6db5", "#6a4fb3", "#1d7f45", "#b35a00", "#a61b1b", "#00788a", "#6b6b00"];
function kindColour(kind, kinds) { return KIND_COLOURS[kinds.indexOf(kind) % KIND_COLOURS.length]; }

function graphPage(root, memoryId) {
  const form = h("form", { class: "filters", id: "graph-form" },
    h("label", {}, "Memory id", h("input", { name: "id", size: 36, value: memoryId || "", required: true })),
    h("label", {}, "Depth", select("depth", ["1", "2"], "1")),
    h("button", { type: "submit" }, "Show"));
  const out = h("div", { id: "graph-out" });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = form.id.value.trim();
    if (location.hash !== `#/graph/${encodeURIComponent(id)}`) history.replaceState(null, "", `#/graph/${encodeURIComponent(id)}`);
    loadGraph(out, id, form.depth.value);
  });
  root.append(h("section", { class: "card" }, h("h2", {}, "Graph neighbourhood"), form), out);
  if (memoryId) loadGraph(out, memoryId, "1");
  else out.append(h("p", { class: "card muted" }, "Open a memory's graph from the Memories or Recall page, or paste its id."));
}

async function loadGraph(out, id, depth) {
  await guarded(async () => {
    const data = await api("GET", `/v1/memories/${encodeURIComponent(id)}/edges`, { query: { depth } });
    const kinds = [...new Set(data.edges.map((e) => e.kind))].sort();
    const nodes = data.nodes;
    const W = chartWidth(760), H = Math.round(W * 0.6), cx = W / 2, cy = H / 2;
    const pos = new Map();
    pos.set(data.memory_id, [cx, cy]);
    const others = nodes.filter((n) => n.id !== data.memory_id);
    others.forEach((n, i) => {
      const ring = others.length > 14 && i % 2 ? 0.62 : 0.9;
      // Spread around the centre, starting at the right (two neighbours sit left and right).
      const a = (2 * Math.PI * i) / Math.max(1, others.length);
      pos.set(n.id, [cx + Math.cos(a) * (W / 2 - Math.min(110, W * 0.15)) * ring, cy + Math.sin(a) * (H / 2 - 40) * ring]);
    });
    const content = new Map(nodes.map((n) => [n.id, n.content]));
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Graph of ${nodes.length} memories and ${data.edges.length} edges`, id: "graph-svg" });
    const seen = new Map();
    for (const e of data.edges) {
      const [x1, y1] = pos.get(e.src), [x2, y2] = pos.get(e.dst);
      // Each edge between the same two memories (either direction, any kind) bends its own
      // way, so a link and its reverse are both visible.
      const pair = [e.src, e.dst].sort().join("|");
      const nth = seen.get(pair) || 0;
      seen.set(pair, nth + 1);
      // Offsets alternate sides of the pair's line; the perpendicular flips with direction.
      const bend = (nth % 2 ? -1 : 1) * (12 + 14 * Math.floor(nth / 2)) * (e.src < e.dst ? 1 : -1);
      const len = Math.hypot(x2 - x1, y2 - y1) || 1;
      const qx = (x1 + x2) / 2 - ((y2 - y1) / len) * bend, qy = (y1 + y2) / 2 + ((x2 - x1) / len) * bend;
      svg.append(s("path", { d: `M ${x1} ${y1} Q ${qx} ${qy} ${x2} ${y2}`, fill: "none", stroke: kindColour(e.kind, kinds),
        "stroke-width": 1 + 7 * Math.max(0, Math.min(1, e.weight)), "stroke-opacity": 0.75, class: "edge" },
        s("title", {}, `${e.kind} ${num(e.weight)}: ${short(content.get(e.src), 40)} → ${short(content.get(e.dst), 40)}`)));
    }
    for (const n of nodes) {
      const [x, y] = pos.get(n.id);
      const g = s("g", { class: `node${n.id === data.memory_id ? " center" : ""}`, tabindex: 0, role: "link", "aria-label": `Memory: ${short(n.content, 60)}`,
        onclick: () => { location.hash = `#/graph/${encodeURIComponent(n.id)}`; },
        onkeydown: (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); location.hash = `#/graph/${encodeURIComponent(n.id)}`; } } },
        s("circle", { cx: x, cy: y, r: n.id === data.memory_id ? 11 : 8 }),
        // On a narrow screen: shorter labels, the centre's above it, so neighbours' fit.
        s("text", { x, y: n.id === data.memory_id && W < 500 ? y - 18 : y + 24, "text-anchor": "middle", "font-size": 11 }, short(n.content, W < 500 ? 16 : 28)),
        s("title", {}, n.content));
      svg.append(g);
    }
    const changesByEdge = new Map();
    for (const c of data.changes) {
      const k = `${c.src}|${c.dst}|${c.kind}`;
      if (!changesByEdge.has(k)) changesByEdge.set(k, []);
      changesByEdge.get(k).push(c);
    }
    const rows = data.edges.map((e) => {
      const ch = changesByEdge.get(`${e.src}|${e.dst}|${e.kind}`) || [];
      return h("tr", {},
        h("td", {}, h("span", { class: "badge", style: null }, e.kind)),
        h("td", { class: "content" }, short(content.get(e.src), 60)), h("td", { class: "content" }, short(content.get(e.dst), 60)),
        h("td", { class: "num mono" }, num(e.weight)),
        h("td", {}, ch.length ? sparkline(ch, e.weight) : h("span", { class: "muted" }, "no feedback yet")));
    });
    out.replaceChildren(
      h("section", { class: "card" }, h("h2", {}, `Around “${short(content.get(data.memory_id), 70)}”`),
        h("div", { class: "legend" }, kinds.map((k) => h("span", {}, h("i", { style: null, "data-colour": kindColour(k, kinds) }), k)), h("span", {}, "line thickness = weight")),
        svg),
      h("section", { class: "card" }, h("h2", {}, "Edges and their weight over time (changes by feedback)"),
        h("div", { class: "table-wrap" }, h("table", { id: "edge-table", class: "stack" },
          h("thead", {}, h("tr", {}, h("th", {}, "kind"), h("th", {}, "from"), h("th", {}, "to"), h("th", { class: "num" }, "weight"), h("th", {}, "weight over time"))),
          h("tbody", {}, rows)))));
    for (const i of out.querySelectorAll("i[data-colour]")) i.style.background = i.dataset.colour;
  });
}

// The weight before the first change (after minus the delta asked, as far as clamping allows),
// then after each change: one step per feedback, its time in the tooltip.
function sparkline(changes, current) {
  const first = changes[0];
  const start = Math.max(0, first.weight - first.delta);
  const points = [[first.at, start, "before feedback"], ...changes.map((c) => [c.at, c.weight, `${c.delta >= 0 ? "+" : ""}${num(c.delta, 3)}`])];
  const W = 180, H = 40;
  const ys = points.map((p) => p[1]);
  const lo = Math.min(0, ...ys), hi = Math.max(1, ...ys);
  const x = (i) => 6 + (i / Math.max(1, points.length - 1)) * (W - 12);
  const y = (w) => H - 5 - ((w - lo) / (hi - lo)) * (H - 10);
  let d = `M ${x(0)} ${y(points[0][1])}`;
  points.slice(1).forEach((p, i) => { d += ` H ${x(i + 1)} V ${y(p[1])}`; });
  return s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": `weight ${ys.map((w) => num(w, 2)).join(" → ")}, now ${num(current, 2)}` },
    s("line", { x1: 0, x2: W, y1: y(hi), y2: y(hi), class: "chart-axis", "stroke-dasharray": "2 3" }),
    s("line", { x1: 0, x2: W, y1: y(lo), y2: y(lo), class: "chart-axis" }),
    s("path", { d, fill: "none", stroke: "#0b5cad", "stroke-width": 2 }),
    ...points.map(([t, w, what], i) => s("circle", { cx: x(i), cy: y(w), r: 3, fill: i ? "#0b5cad" : "#fff", stroke: "#0b5cad" },
      s("title", {}, `${fmtTime(t)} ${what}: ${num(w)}`))));
}

// 4. Learning --------------------------------------------------------------------------------
const TYPE_COLOURS = { feedback_event: "#2f6db5", decision_review: "#6a4fb3", preference_pair: "#b35a00", memory_rating: "#1d7f45", logged_event: "#6b6b00", reply_signal: "#a61b1b" };
// A timeline dot says what the feedback said (its row says what kind it is): green helped,
// red wrong, amber corrected, blue neither.
const POLARITY_COLOURS = { helped: "#1d7f45", wrong: "#a61b1b", corrected: "#b35a00", neutral: "#2f6db5" };

function polarity(item) {
  const r = item.record;
  switch (item.type) {
    case "feedback_event": return { adopted: "helped", rejected: "wrong", corrected: "corrected" }[r.state] || "neutral";
    case "decision_review": return { success: "helped", failure: "wrong" }[r.outcome] || "neutral";
    case "memory_rating": return { accepted: "helped", rejected: "wrong", corrected: "corrected" }[r.verdict] || "neutral";
    case "reply_signal": return r.value > 0 ? "helped" : r.value < 0 ? "wrong" : "neutral";
    default: return "neutral";
  }
}

function learningPage(root, memoryId) {
  const sc = getScope();
  const out = h("div", { id: "learning-out" });
  root.append(h("section", { class: "card" }, h("h2", {}, `Learning · ${scopeLabel(sc)}`),
    h("p", { class: "muted" }, "Feedback events, reviews, preference pairs, ratings, logged events and implicit reply signals, newest first.")), out);
  loadLearning(out, memoryId);
}

function summary(item, contents = new Map()) {
  const r = item.record;
  const said = (id) => (contents.has(id) ? `“${short(contents.get(id), 50)}”` : `memory ${id.slice(0, 8)}`);
  switch (item.type) {
    case "feedback_event": return `${r.state}: ${short(r.input_context, 60)}`;
    case "decision_review": return `${r.final_decision}, ${r.outcome}${r.reversed ? " (reversed)" : ""}`;
    case "preference_pair": return `prefer “${short(r.accepted_output, 40)}” over “${short(r.rejected_output, 40)}”`;
    case "memory_rating": return `${r.verdict} ${said(r.memory_id)}`;
    case "logged_event": return `${r.kind}`;
    case "reply_signal": return `${r.value > 0 ? "drawn on" : "left out"} ${said(r.memory_id)} (alignment ${num(r.alignment, 2)})`;
    default: return "";
  }
}

async function loadLearning(out, memoryId) {
  await guarded(async () => {
    const sc = getScope();
    const [tl, shifts] = await Promise.all([
      api("GET", "/v1/timeline", { query: { ...sc, limit: 300 } }),
      api("GET", "/v1/rank-shifts", { query: { ...sc, limit: 10 } }),
    ]);
    const memoryIds = [...new Set(tl.items.map((i) => i.record.memory_id).filter(Boolean))];
    const contents = await contentsOf(memoryIds);
    const chosen = memoryId || memoryIds[0] || null;
    const pickForm = h("form", { class: "filters", id: "multiplier-form" },
      h("label", {}, "Memory id", h("input", { name: "id", size: 36, value: chosen || "", list: "touched-memories" })),
      h("datalist", { id: "touched-memories" }, memoryIds.map((id) => h("option", { value: id }))),
      h("button", { type: "submit" }, "Show multiplier"));
    const multBox = h("div", { id: "multiplier" });
    pickForm.addEventListener("submit", (ev) => { ev.preventDefault(); loadMultiplier(multBox, pickForm.id.value.trim()); });
    out.replaceChildren(
      h("section", { class: "card" }, h("h2", {}, "Timeline"), timelineChart(tl.items, contents),
        tl.items.length === 0 ? null : h("div", { class: "table-wrap" }, h("table", { id: "timeline-table", class: "stack" },
          h("thead", {}, h("tr", {}, h("th", {}, "When (UTC)"), h("th", {}, "Type"), h("th", {}, "What"), h("th", {}, "Scope"))),
          h("tbody", {}, tl.items.slice(0, 100).map((i) => h("tr", {},
            h("td", { class: "mono" }, fmtTime(i.at)), h("td", {}, h("span", { class: "badge" }, i.type)), h("td", { class: "content" }, summary(i, contents)),
            h("td", { class: "muted" }, [i.user_id, i.agent_id, i.session_id].filter(Boolean).join(" / ")))))))),
      h("div", { class: "cols2" },
        h("section", { class: "card" }, h("h2", {}, "Learned multiplier of one memory over time"), pickForm, multBox),
        h("section", { class: "card" }, h("h2", {}, "How rankings shifted (rank when feedback was given → rank now)"),
          rankCurve(shifts.shifts))));
    if (chosen) loadMultiplier(multBox, chosen);
  });
}

// A chart's width in its own units: the width it will be drawn at, so that its text keeps
// its size on a narrow screen instead of shrinking with the whole drawing.
function chartWidth(widest) {
  return Math.round(Math.max(300, Math.min(widest, document.documentElement.clientWidth - 48)));
}

function timelineChart(items, contents = new Map()) {
  const W = chartWidth(760), H = 150, types = Object.keys(TYPE_COLOURS);
  if (!items.length) return h("p", { class: "muted" }, "No feedback in this scope yet.");
  const left = W < 500 ? 96 : 130;
  const ts = items.map((i) => i.at);
  const t0 = Math.min(...ts), t1 = Math.max(...ts);
  const x = (t) => (t1 === t0 ? (left + W - 10) / 2 : left + ((t - t0) / (t1 - t0)) * (W - left - 20));
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, width: W, role: "img", "aria-label": `Timeline of ${items.length} feedback items`, id: "timeline-svg" });
  types.forEach((t, row) => {
    const y = 14 + row * 22;
    svg.append(s("text", { x: 4, y: y + 4, "font-size": 11 }, t.replace("_", " ")), s("line", { x1: left, x2: W - 10, y1: y, y2: y, class: "chart-axis", "stroke-dasharray": "2 3" }));
    for (const i of items.filter((i) => i.type === t)) {
      const said = polarity(i);
      svg.append(s("circle", { cx: x(i.at), cy: y, r: 4.5, fill: POLARITY_COLOURS[said], "data-polarity": said }, s("title", {}, `${fmtTime(i.at)} ${summary(i, contents)}`)));
    }
  });
  svg.append(s("text", { x: left, y: H - 2, "font-size": 10 }, fmtTime(t0)), s("text", { x: W - 10, y: H - 2, "font-size": 10, "text-anchor": "end" }, fmtTime(t1)));
  const legend = h("div", { class: "legend" }, Object.entries(POLARITY_COLOURS).map(([k, c]) => h("span", {}, h("i", { "data-colour": c }), k)));
  const box = h("div", {}, svg, legend);
  for (const i of legend.querySelectorAll("i[data-colour]")) i.style.background = i.dataset.colour;
  return box;
}

async function loadMultiplier(box, id) {
  if (!id) return;
  await guarded(async () => {
    const data = await api("GET", `/v1/memories/${encodeURIComponent(id)}/learning`);
    const mem = await api("GET", `/v1/memories/${encodeURIComponent(id)}`);
    if (!data.signals.length) { box.replaceChildren(h("p", {}, short(mem.content, 100)), h("p", { class: "muted" }, "No feedback on this memory yet: multiplier 1.")); return; }
    const W = 360, H = 170, pts = data.signals;
    const ts = pts.map((p) => p.at), ms = pts.map((p) => p.multiplier);
    const t0 = Math.min(...ts), t1 = Math.max(...ts);
    const lo = Math.min(0.8, ...ms), hi = Math.max(1.2, ...ms);
    const x = (t) => (t1 === t0 ? W / 2 : 40 + ((t - t0) / (t1 - t0)) * (W - 55));
    const y = (m) => H - 20 - ((m - lo) / (hi - lo)) * (H - 35);
    let d = `M ${x(ts[0])} ${y(1)}`;
    for (const p of pts) d += ` V ${y(p.multiplier)} H ${x(p.at)}`;
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "multiplier-svg", "aria-label": `multiplier ${ms.map((m) => num(m, 3)).join(" → ")}` },
      s("line", { x1: 40, x2: W - 10, y1: y(1), y2: y(1), class: "chart-axis", "stroke-dasharray": "4 3" }),
      s("text", { x: 2, y: y(1) + 4, "font-size": 10 }, "× 1.00"),
      s("text", { x: 2, y: y(hi) + 10, "font-size": 10 }, `× ${num(hi, 2)}`),
      s("text", { x: 2, y: y(lo), "font-size": 10 }, `× ${num(lo, 2)}`),
      s("path", { d, fill: "none", stroke: "#1d7f45", "stroke-width": 2 }),
      ...pts.map((p) => s("circle", { cx: x(p.at), cy: y(p.multiplier), r: 4, fill: p.value > 0 ? "#1d7f45" : "#a61b1b" },
        s("title", {}, `${fmtTime(p.at)} ${p.source} ${p.verdict}: × ${num(p.multiplier, 3)}`))));
    box.replaceChildren(h("p", {}, short(mem.content, 100)), svg,
      h("p", { class: "muted" }, `Now × ${num(ms[ms.length - 1], 3)} after ${pts.length} signals (for a query matching their context).`));
  });
}

function rankCurve(shifts) {
  if (!shifts.length) return h("p", { class: "muted" }, "No recall in this scope has had feedback yet.");
  const W = 360, H = 220, maxRank = Math.max(...shifts.flatMap((s) => [s.rank_before, s.rank_after || 0])) || 1;
  const y = (r) => 20 + ((r - 1) / Math.max(1, maxRank - 1)) * (H - 40);
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", id: "rank-svg", "aria-label": `${shifts.length} memories: rank before and after feedback` },
    s("text", { x: 60, y: 12, "font-size": 11, "text-anchor": "middle" }, "when rated"),
    s("text", { x: W - 60, y: 12, "font-size": 11, "text-anchor": "middle" }, "now"),
    s("line", { x1: 60, x2: 60, y1: 18, y2: H - 18, class: "chart-axis" }),
    s("line", { x1: W - 60, x2: W - 60, y1: 18, y2: H - 18, class: "chart-axis" }));
  for (let r = 1; r <= maxRank; r++) svg.append(s("text", { x: 40, y: y(r) + 4, "font-size": 10, "text-anchor": "end" }, `#${r}`));
  for (const sh of shifts) {
    if (!sh.rank_after) continue;
    const colour = sh.signal > 0 ? "#1d7f45" : sh.signal < 0 ? "#a61b1b" : "#8b8f94";
    svg.append(s("line", { x1: 60, y1: y(sh.rank_before), x2: W - 60, y2: y(sh.rank_after), stroke: colour, "stroke-width": 2.5, "stroke-opacity": 0.8 },
      s("title", {}, `“${short(sh.query, 40)}”: #${sh.rank_before} → #${sh.rank_after} (signal ${sh.signal > 0 ? "+" : ""}${sh.signal})`)));
  }
  const up = shifts.filter((x) => x.signal > 0), down = shifts.filter((x) => x.signal < 0);
  const avg = (xs, k) => (xs.length ? xs.reduce((n, x) => n + (x[k] || 0), 0) / xs.length : null);
  return h("div", {}, svg,
    h("p", { class: "muted" }, `green: feedback said helped (mean rank ${num(avg(up, "rank_before"), 1)} → ${num(avg(up, "rank_after"), 1)}); red: said wrong (${num(avg(down, "rank_before"), 1)} → ${num(avg(down, "rank_after"), 1)}).`));
}

// 5. Tensions --------------------------------------------------------------------------------
function tensionsPage(root) {
  const out = h("div", { id: "tensions-out" });
  root.append(h("section", { class: "card" }, h("h2", {}, `Tensions · ${scopeLabel(getScope())}`),
    h("p", { class: "muted" }, "Contradictions found between memories. Resolving one by hand records ratings (a feedback record): the side you keep is rated accepted, the other rejected — nothing is edited silently.")), out);
  loadTensions(out);
}

async function loadTensions(out) {
  await guarded(async () => {
    const data = await api("GET", "/v1/tensions", { query: { ...getScope(), limit: 100 } });
    if (!data.tensions.length) { out.replaceChildren(h("p", { class: "card muted" }, "No tensions in this scope.")); return; }
    out.replaceChildren(...data.tensions.map((t) => {
      const side = (m) => {
        const ratings = t.ratings[m.id] || [];
        const last = ratings[ratings.length - 1];
        return h("div", { class: `side${t.newer === m.id ? " current" : ""}` },
          t.newer === m.id ? h("span", { class: "badge good" }, "newer: current") : h("span", { class: "badge" }, "older"),
          last ? h("span", { class: `badge ${last.verdict === "accepted" ? "good" : "bad"}` }, `rated ${last.verdict}`) : null,
          h("p", {}, m.content), h("p", { class: "muted mono" }, fmtTime(m.created_at)),
          h("button", { type: "button", class: "small", onclick: () => resolveTension(t, m, out) }, "Keep this one"));
      };
      return h("article", { class: "card tension-card" }, h("h3", {}, h("span", { class: "badge bad" }, t.kind), " ", t.reason || ""),
        h("div", { class: "tension" }, side(t.a), side(t.b)));
    }));
  });
}

async function resolveTension(t, keep, out) {
  const drop = keep.id === t.a.id ? t.b : t.a;
  const body = h("div", {}, h("p", {}, "Keep:"), h("blockquote", {}, keep.content), h("p", {}, "and mark as no longer true:"), h("blockquote", {}, drop.content),
    h("p", { class: "muted" }, "Records two ratings: accepted for the kept memory, rejected for the other."));
  if (!(await confirmDialog("Resolve tension", body, "Resolve"))) return;
  await guarded(async () => {
    const sc = { user_id: keep.user_id || undefined };
    await api("POST", "/v1/ratings", { body: { memory_id: keep.id, verdict: "accepted", ...sc } });
    await api("POST", "/v1/ratings", { body: { memory_id: drop.id, verdict: "rejected", ...sc } });
    status("Resolved: two ratings recorded.");
    loadTensions(out);
  });
}

// -- login and start -------------------------------------------------------------------------
function showLogin() {
  $("#login").hidden = false;
  $("#nav").hidden = true; $("#who").hidden = true; $("#scope-bar").hidden = true;
  $("#page").replaceChildren();
  $("#api-key").focus();
}
function logout(message) {
  sessionStorage.removeItem(KEY_STORE);
  sessionStorage.removeItem(SCOPE_STORE);
  showLogin();
  if (message) status(message, true);
}

document.addEventListener("DOMContentLoaded", () => {
  $("#login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(KEY_STORE, $("#api-key").value.trim());
    $("#api-key").value = "";
    const ok = await guarded(() => api("GET", "/v1/scopes", { query: { limit: 1 } }));
    if (!ok) return;
    start();
  });
  $("#logout").addEventListener("click", () => logout("Logged out."));
  $("#scope-bar").addEventListener("submit", (ev) => {
    ev.preventDefault();
    setScope({ user_id: $("#scope-user").value.trim(), agent_id: $("#scope-agent").value.trim(), session_id: $("#scope-session").value.trim() });
    listState.offset = 0;
    route();
  });
  window.addEventListener("hashchange", route);
  if (sessionStorage.getItem(KEY_STORE)) start(); else showLogin();
});

function start() {
  $("#login").hidden = true;
  $("#nav").hidden = false; $("#who").hidden = false; $("#scope-bar").hidden = false;
  setScope(getScope());
  if (!location.hash) location.hash = "#/memories";
  route();
}
