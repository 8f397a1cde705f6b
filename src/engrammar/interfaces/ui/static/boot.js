// Loaded before the page is parsed: starts the first memory-list request at once, so it runs
// while the stylesheet and app.js download. app.js takes the answer if it asks the same query.
"use strict";

function memoryListQuery(scope, offset, filters) {
  const toEpoch = (local) => {
    const t = local ? Date.parse(local) : NaN;
    return Number.isNaN(t) ? null : t / 1000;
  };
  return {
    ...scope, limit: 50, offset, order: filters.order || "newest",
    kind: filters.kind, role: filters.role, text: filters.text,
    since: toEpoch(filters.since), until: toEpoch(filters.until),
  };
}

function memoryListUrl(query) {
  const url = new URL("/v1/memories", location.origin);
  for (const [k, v] of Object.entries(query)) {
    if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, v);
  }
  return url.toString();
}

window.earlyMemoryList = (() => {
  const key = sessionStorage.getItem("engrammar.key");
  if (!key || !(location.hash === "" || location.hash.startsWith("#/memories"))) return null;
  let scope = {};
  try { scope = JSON.parse(sessionStorage.getItem("engrammar.scope")) || {}; } catch { scope = {}; }
  const url = memoryListUrl(memoryListQuery(scope, 0, {}));
  return { url, response: fetch(url, { headers: { Authorization: `Bearer ${key}` } }) };
})();
