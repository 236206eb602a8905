// Sextant's web console: a client of the public REST + SSE API (see /docs), nothing else.
// Plain JavaScript, no dependencies. Pages are routed by the URL's fragment
// (#/repos, #/repo/NAME, #/search, #/symbol, #/scout, #/server, #/signin).
"use strict";

const TOKEN_KEY = "sextant.token";
const API = new URL("api/v1", document.baseURI).pathname;
const state = { me: null, streams: [], timers: [] };

// ---------- small helpers ----------

/** An element: `h("a", {href: "#"}, "text", child)`. */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** An SVG element. */
function s(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function toast(message) {
  const t = document.getElementById("toast");
  t.textContent = message;
  t.classList.add("show");
  toast.shown = Date.now();
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => t.classList.remove("show"), 4000);
}

/** Hides a toast left from an earlier page (one just shown stays through its navigation). */
function staleToast() {
  if (Date.now() - (toast.shown || 0) > 1500) document.getElementById("toast").classList.remove("show");
}

function badge(status) {
  return h("span", { class: `badge s-${status}` }, status);
}

function when(ms) {
  return ms ? new Date(ms).toLocaleString() : "—";
}

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function headers(extra) {
  const out = Object.assign({}, extra || {});
  const t = token();
  if (t) out.Authorization = `Bearer ${t}`;
  return out;
}

/** An API error with the server's message. */
class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function failure(response) {
  let code = "error";
  let message = `${response.status} ${response.statusText}`;
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code;
      message = body.error.message;
    }
  } catch (_) { /* not JSON */ }
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    location.hash = "#/signin";
  }
  return new ApiError(response.status, code, message);
}

/** Calls the API: `api("GET", "/repositories")`; JSON in, JSON out. */
async function api(method, path, body) {
  const init = { method, headers: headers({ Accept: "application/json" }) };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(API + path, init);
  if (!response.ok) throw await failure(response);
  return response.json();
}

/**
 * Reads a server-sent event stream with the token (EventSource cannot send one):
 * `onEvent(name, data)` per event; returns when the stream ends or `signal` aborts.
 */
async function stream(url, init, onEvent, signal) {
  const response = await fetch(url, Object.assign({ signal }, init));
  if (!response.ok) throw await failure(response);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      let name = "message";
      const data = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) {
        let parsed = data.join("\n");
        try { parsed = JSON.parse(parsed); } catch (_) { /* text */ }
        onEvent(name, parsed);
      }
    }
  }
}

/** Follows progress events (all, or one repository's) until the page changes. */
function follow(path, onEvent) {
  const controller = new AbortController();
  state.streams.push(controller);
  stream(API + path, { headers: headers({ Accept: "text/event-stream" }) }, onEvent, controller.signal)
    .catch((e) => { if (e.name !== "AbortError") console.warn("progress stream:", e.message); });
}

function stopStreams() {
  for (const c of state.streams) c.abort();
  state.streams = [];
  for (const t of state.timers) clearInterval(t);
  state.timers = [];
}

/** Runs `work` every `ms` until the page changes. */
function every(ms, work) {
  state.timers.push(setInterval(work, ms));
}

/** Whether a repository or one of its jobs is still on its way. */
function busy(status) {
  return ["registered", "indexing", "queued", "running"].includes(status);
}

function main() {
  return document.getElementById("main");
}

function show(...nodes) {
  const m = main();
  m.replaceChildren(...nodes);
}

function errorBox(e) {
  return h("p", { class: "error", role: "alert" }, e.message || String(e));
}

/** Runs `work`, showing its error in `where` (or as the page). */
async function guarded(work, where) {
  try {
    return await work();
  } catch (e) {
    if (where) where.replaceChildren(errorBox(e));
    else show(errorBox(e));
    return undefined;
  }
}

function isAdmin() {
  return state.me && state.me.scope === "admin";
}

// ---------- syntax colouring (a small lexer: comments, strings, numbers, keywords) ----------

const KEYWORDS = new Set(("abstract async await break case catch class const continue def default defer " +
  "delete do elif else enum except export extends final finally fn for from func function go if impl " +
  "implements import in instanceof interface is lambda let match mod module mut new nil none not null " +
  "or package private protected pub public raise return self static struct super switch this throw throws " +
  "trait try type typeof use var void where while with yield true false True False None").split(" "));

function highlight(code) {
  const out = document.createDocumentFragment();
  const re = /(\/\/[^\n]*|#[^\n]*|\/\*[\s\S]*?\*\/)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`)|(\b\d[\d_.xXa-fA-F]*\b)|([A-Za-z_$][\w$]*)/g;
  let last = 0;
  let m;
  while ((m = re.exec(code))) {
    if (m.index > last) out.append(code.slice(last, m.index));
    const [text, comment, string, number, word] = m;
    if (comment) out.append(h("span", { class: "tok-com" }, text));
    else if (string) out.append(h("span", { class: "tok-str" }, text));
    else if (number) out.append(h("span", { class: "tok-num" }, text));
    else if (word && KEYWORDS.has(word)) out.append(h("span", { class: "tok-kw" }, text));
    else out.append(text);
    last = m.index + text.length;
  }
  out.append(code.slice(last));
  return out;
}

function codeBlock(code) {
  return h("pre", { tabindex: 0 }, h("code", {}, highlight(code || "")));
}

// ---------- sign-in and the header ----------

async function loadMe() {
  state.me = await api("GET", "/me");
  const who = document.getElementById("who");
  const limited = state.me.repositories ? `only ${state.me.repositories.join(", ")}` : "all repositories";
  who.replaceChildren(
    h("span", { id: "whoami" }, `${state.me.name} · ${state.me.scope} · ${limited}`),
    state.me.token ? h("button", { class: "secondary", type: "button", onclick: signOut }, "Sign out") : null,
  );
  document.getElementById("nav").hidden = false;
  document.getElementById("nav-server").hidden = !state.me.managesServer;
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  state.me = null;
  document.getElementById("who").replaceChildren();
  document.getElementById("nav").hidden = true;
  location.hash = "#/signin";
}

function signInPage() {
  const input = h("input", { type: "password", id: "token", name: "token", autocomplete: "off", required: true });
  const status = h("div");
  const form = h("form", { class: "row", onsubmit: async (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    try {
      await loadMe();
      location.hash = "#/repos";
    } catch (err) {
      sessionStorage.removeItem(TOKEN_KEY);
      status.replaceChildren(errorBox(err));
    }
  } },
  h("label", { class: "grow" }, "API token", input),
  h("button", { type: "submit", id: "sign-in" }, "Sign in"));
  show(
    h("h1", {}, "Sign in"),
    h("div", { class: "panel" },
      h("p", {}, "Paste a token (", h("code", {}, "sextant token create"), "). It is kept in this tab only."),
      form, status),
  );
  input.focus();
}

// ---------- repositories ----------

function progressView() {
  const bar = h("progress", { max: 1, value: 0 });
  const line = h("div", { class: "progress-line" });
  const wrap = h("div", { class: "progress", hidden: true }, bar, line);
  return {
    node: wrap,
    update(e) {
      wrap.hidden = false;
      if (e.total > 0) {
        bar.max = e.total;
        bar.value = Math.min(e.done, e.total);
      } else {
        bar.removeAttribute("value");
      }
      const parts = [e.phase];
      if (e.total > 0) parts.push(`${e.done} / ${e.total}`);
      if (e.rate > 0) parts.push(`${e.rate.toFixed(1)}/s`);
      if (e.etaSecs !== null && e.etaSecs !== undefined) parts.push(`ETA ${Math.round(e.etaSecs)} s`);
      if (e.message) parts.push(e.message);
      line.textContent = parts.join(" · ");
      if (e.phase === "done") {
        bar.max = 1;
        bar.value = 1;
      }
    },
  };
}

async function reposPage() {
  const list = h("div", { class: "table-wrap" }, h("p", { class: "muted" }, "Loading…"));
  const parts = [h("h1", {}, "Repositories"), list];
  if (isAdmin()) parts.push(registerForm());
  show(...parts);
  const bars = new Map();
  const render = async () => {
    const { repositories } = await api("GET", "/repositories");
    if (!repositories.length) {
      list.replaceChildren(h("p", { class: "muted" }, "No repository is registered yet."));
      return;
    }
    const rows = repositories.map((r) => {
      const p = progressView();
      bars.set(r.id, p);
      return h("tr", { "data-repo": r.name },
        h("td", {}, h("a", { href: `#/repo/${encodeURIComponent(r.name)}` }, r.name)),
        h("td", {}, `${r.source.type}: `, h("code", {}, r.source.location), r.trackedRef ? ` @ ${r.trackedRef}` : ""),
        h("td", { class: "status" }, badge(r.status), r.lastError ? h("div", { class: "error" }, r.lastError) : null, p.node),
        h("td", {}, when(r.updatedAt)));
    });
    list.replaceChildren(h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Source"), h("th", {}, "Status"), h("th", {}, "Updated"))),
      h("tbody", {}, rows)));
  };
  await guarded(render, list);
  // Progress events say how far a sync is; a poll catches an end the stream missed.
  every(2000, async () => {
    if ([...list.querySelectorAll(".badge")].some((b) => busy(b.textContent))) await guarded(render, list);
  });
  follow("/events", (name, e) => {
    if (!e || !e.repoId) return;
    const bar = bars.get(e.repoId);
    if (bar) bar.update(e);
    if (e.phase === "done") guarded(render, list);
  });
}

function registerForm() {
  const kind = h("select", { id: "source-kind", name: "kind" }, h("option", { value: "path" }, "Directory on the server"), h("option", { value: "git" }, "Git URL"));
  const location_ = h("input", { type: "text", id: "source", name: "source", required: true, placeholder: "/srv/code/app or https://github.com/org/app" });
  const name = h("input", { type: "text", id: "repo-name", name: "name", placeholder: "default: its folder" });
  const status = h("div");
  const form = h("form", { class: "row", onsubmit: async (e) => {
    e.preventDefault();
    const body = { [kind.value]: location_.value.trim() };
    if (name.value.trim()) body.name = name.value.trim();
    await guarded(async () => {
      const created = await api("POST", "/repositories", body);
      toast(`Registered ${created.repository.name}; indexing is queued`);
      location.hash = `#/repo/${encodeURIComponent(created.repository.name)}`;
    }, status);
  } },
  h("label", {}, "Kind", kind), h("label", { class: "grow" }, "Location", location_), h("label", {}, "Name", name),
  h("button", { type: "submit", id: "register" }, "Register"));
  return h("section", { class: "panel", "aria-labelledby": "register-title" }, h("h2", { id: "register-title" }, "Register a repository"), form, status);
}

async function repoPage(name) {
  const head = h("div");
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  show(h("h1", {}, name), head, body);
  const progress = progressView();
  const render = async () => {
    const detail = await api("GET", `/repositories/${encodeURIComponent(name)}`);
    const repo = detail.repository;
    const counts = detail.files || {};
    const actions = isAdmin() ? h("div", { class: "row" },
      h("button", { type: "button", id: "sync", onclick: () => guarded(async () => {
        const job = await api("POST", `/repositories/${encodeURIComponent(name)}/sync`);
        toast(`Sync queued (job ${job.id || (job.job && job.job.id) || ""})`);
      }, head) }, "Sync now"),
      h("button", { type: "button", class: "danger", id: "remove", onclick: () => {
        if (!confirm(`Remove ${name} and everything indexed for it?`)) return;
        guarded(async () => {
          await api("DELETE", `/repositories/${encodeURIComponent(name)}`);
          toast(`Removed ${name}`);
          location.hash = "#/repos";
        }, head);
      } }, "Remove…")) : null;
    head.replaceChildren(h("div", { class: "panel" },
      h("div", { class: "row" }, badge(repo.status), h("span", {}, `${repo.source.type}: `, h("code", {}, repo.source.location)),
        repo.indexedCommit ? h("span", { class: "muted" }, `commit ${repo.indexedCommit.slice(0, 10)}`) : null),
      repo.lastError ? h("p", { class: "error" }, repo.lastError) : null,
      progress.node, actions));
    const all = await api("GET", `/repositories/${encodeURIComponent(name)}/files`);
    const byLanguage = new Map();
    for (const f of all.files) {
      if (f.skipReason) continue;
      const key = f.language || "other";
      const row = byLanguage.get(key) || { files: 0, symbols: 0, lines: 0 };
      row.files += 1;
      row.symbols += f.symbolCount || 0;
      row.lines += f.lineCount || 0;
      byLanguage.set(key, row);
    }
    const countRows = [
      h("tr", {}, h("th", {}, "Files indexed"), h("td", {}, counts.indexed)),
      h("tr", {}, h("th", {}, "Files skipped"), h("td", {}, counts.skipped)),
      h("tr", {}, h("th", {}, "Symbols"), h("td", {}, detail.symbols)),
    ];
    const languageRows = [...byLanguage.entries()].sort((a, b) => b[1].files - a[1].files)
      .map(([lang, c]) => h("tr", {}, h("td", {}, lang), h("td", {}, c.files), h("td", {}, c.symbols), h("td", {}, c.lines)));
    const jobs = (detail.recentJobs || []).map((j) => h("tr", {}, h("td", {}, h("code", {}, j.id)), h("td", {}, badge(j.state)), h("td", {}, when(j.createdAt)), h("td", {}, j.error || "")));
    const refPath = (r) => `/repositories/${encodeURIComponent(name)}/refs/${encodeURIComponent(r)}`;
    const refs = (detail.refs || []).map((r) => h("tr", { "data-ref": r.trackedRef },
      h("td", {}, r.trackedRef), h("td", {}, badge(r.status), r.lastError ? h("div", { class: "error" }, r.lastError) : null),
      h("td", {}, r.indexedCommit ? r.indexedCommit.slice(0, 10) : "—"),
      h("td", {}, h("a", { href: `#/compare?${new URLSearchParams({ repo: name, head: r.trackedRef })}` }, "Compare with the default ref")),
      h("td", {}, isAdmin() ? h("button", { type: "button", class: "danger", onclick: () => {
        if (!confirm(`Stop tracking ${r.trackedRef}? What only it holds is deleted.`)) return;
        guarded(async () => { await api("DELETE", refPath(r.trackedRef)); toast(`Dropped ${r.trackedRef}`); await render(); }, body);
      } }, "Drop…") : null)));
    const skipped = { files: all.files.filter((f) => f.skipReason) };
    body.replaceChildren(
      h("div", { class: "cols" },
        h("section", { class: "panel" }, h("h2", {}, "Counts"), h("table", {}, h("tbody", {}, countRows))),
        h("section", { class: "panel" }, h("h2", {}, "By language"), h("table", {},
          h("thead", {}, h("tr", {}, ["Language", "Files", "Symbols", "Lines"].map((x) => h("th", {}, x)))), h("tbody", {}, languageRows))),
        h("section", { class: "panel" }, h("h2", {}, "Settings"), codeBlock(JSON.stringify(repo.settings, null, 2)),
          isAdmin() ? settingsEditor(name, repo.settings, () => guarded(render, body)) : null)),
      h("section", { class: "panel" }, h("h2", {}, "Recent jobs"), jobs.length ? h("div", { class: "table-wrap" }, h("table", {}, h("tbody", {}, jobs))) : h("p", { class: "muted" }, "None yet.")),
      h("section", { class: "panel" }, h("h2", {}, "Tracked refs"),
        refs.length ? h("div", { class: "table-wrap" }, h("table", {}, h("tbody", {}, refs))) : h("p", { class: "muted" }, "Only the default ref."),
        isAdmin() ? trackRefForm(name, repo, () => guarded(render, body)) : null),
      h("section", { class: "panel" }, h("h2", {}, `Skipped files (${skipped.files.length})`),
        skipped.files.length ? h("ul", { class: "plain", id: "skipped" }, skipped.files.slice(0, 500).map((f) => h("li", {}, h("code", {}, f.path), " — ", f.skipReason))) : h("p", { class: "muted" }, "None.")),
    );
  };
  await guarded(render, body);
  every(2000, async () => {
    if ([...main().querySelectorAll(".badge")].some((b) => busy(b.textContent))) await guarded(render, body);
  });
  follow(`/repositories/${encodeURIComponent(name)}/events`, (_, e) => {
    if (!e || !e.phase) return;
    progress.update(e);
    if (e.phase === "done") guarded(render, body);
  });
}

/** An admin's form to track another ref: a branch, tag or commit, or a worktree. */
function trackRefForm(name, repo, added) {
  const input = h("input", { type: "text", id: "new-ref", required: true,
    placeholder: repo.source.type === "git" ? "feature/login, v2.1.0 or a commit" : "a worktree's branch, name or directory" });
  const status = h("div", { "aria-live": "polite" });
  return h("form", { class: "row", onsubmit: (e) => {
    e.preventDefault();
    guarded(async () => {
      const made = await api("POST", `/repositories/${encodeURIComponent(name)}/refs`, { ref: input.value.trim() });
      toast(`Tracking ${made.repository.trackedRef}; indexing is queued`);
      added();
    }, status);
  } }, h("label", { class: "grow" }, "Track another ref", input), h("button", { type: "submit", id: "track-ref" }, "Track"), status);
}

/** What differs between two refs, and what the head's changes may break. */
async function comparePage(params) {
  const repo = params.get("repo") || "";
  const head = params.get("head") || "";
  const out = h("div", { id: "comparison" }, h("p", { class: "muted" }, "Comparing…"));
  show(h("h1", {}, `${repo}: ${params.get("base") || "default"} → ${head}`), out);
  const q = new URLSearchParams({ head });
  if (params.get("base")) q.set("base", params.get("base"));
  const c = await guarded(() => api("GET", `/repositories/${encodeURIComponent(repo)}/compare?${q}`), out);
  if (!c) return;
  const table = (rows, heads) => rows.length
    ? h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, h("tr", {}, heads.map((x) => h("th", {}, x)))), h("tbody", {}, rows)))
    : h("p", { class: "muted" }, "None.");
  out.replaceChildren(
    h("section", { class: "panel" }, h("h2", {}, `May break when ${c.head} merges (${c.affected.length})`),
      table(c.affected.map((a) => h("tr", {}, h("td", {}, h("code", {}, `${a.path}:${a.line || ""}`)), h("td", {}, a.breadcrumb), h("td", {}, a.kind), h("td", {}, a.uses))), ["Where", "Unchanged symbol", "How", "Uses"])),
    h("section", { class: "panel" }, h("h2", {}, `Files (${c.files.length})`),
      table(c.files.map((f) => h("tr", {}, h("td", {}, badge(f.change)), h("td", {}, h("code", {}, f.path)))), ["Change", "Path"])),
    h("section", { class: "panel" }, h("h2", {}, `Symbols (${c.symbols.length})`),
      table(c.symbols.map((sy) => h("tr", {}, h("td", {}, badge(sy.change)), h("td", {}, sy.breadcrumb), h("td", {}, sy.kind), h("td", {}, h("code", {}, sy.path)))), ["Change", "Symbol", "Kind", "File"])));
}

/** An admin's editor of a repository's settings (JSON, replaced as a whole). */
function settingsEditor(name, settings, saved) {
  const text = h("textarea", { id: "settings-json", rows: 12, spellcheck: "false" }, JSON.stringify(settings, null, 2));
  const status = h("div", { "aria-live": "polite" });
  return h("details", {}, h("summary", {}, "Change settings"),
    h("form", { onsubmit: (e) => {
      e.preventDefault();
      guarded(async () => {
        let parsed;
        try { parsed = JSON.parse(text.value); } catch (err) { throw new Error(`Not JSON: ${err.message}`); }
        await api("PATCH", `/repositories/${encodeURIComponent(name)}`, { settings: parsed });
        toast("Saved; the next sync applies them");
        saved();
      }, status);
    } }, h("label", {}, "Settings (JSON)", text), h("button", { type: "submit", id: "save-settings" }, "Save"), status));
}

// ---------- search ----------

function searchForm(params, onSubmit) {
  const q = h("input", { type: "search", id: "query", name: "q", required: true, value: params.get("q") || "", placeholder: "where do we validate the auth token?  or  symbol = Name" });
  const repo = h("input", { type: "text", id: "repository", name: "repo", value: params.get("repo") || "", placeholder: "all" });
  const path = h("input", { type: "text", id: "paths", name: "path", value: params.get("path") || "", placeholder: "src/**" });
  const lang = h("input", { type: "text", id: "languages", name: "lang", value: params.get("lang") || "", placeholder: "typescript" });
  const ref = h("input", { type: "text", id: "ref", name: "ref", value: params.get("ref") || "", placeholder: "default" });
  const kind = h("input", { type: "text", id: "kinds", name: "kind", value: params.get("kind") || "", placeholder: "function, class…" });
  const budget = h("input", { type: "number", id: "budget", name: "budget", min: 100, max: 200000, value: params.get("budget") || "", placeholder: "server default" });
  return h("form", { class: "panel row", role: "search", onsubmit: (e) => {
    e.preventDefault();
    const next = new URLSearchParams();
    for (const [k, el] of [["q", q], ["repo", repo], ["path", path], ["lang", lang], ["kind", kind], ["ref", ref], ["budget", budget]]) {
      if (el.value.trim()) next.set(k, el.value.trim());
    }
    onSubmit(next);
  } },
  h("label", { class: "grow" }, "Question", q), h("label", {}, "Repository", repo), h("label", {}, "Paths", path),
  h("label", {}, "Language", lang), h("label", {}, "Kind", kind), h("label", {}, "Ref", ref), h("label", {}, "Token budget", budget),
  h("button", { type: "submit", id: "search" }, "Search"));
}

function searchBody(params) {
  const body = { query: params.get("q") };
  if (params.get("repo")) body.repositories = [params.get("repo")];
  if (params.get("path")) body.paths = [params.get("path")];
  if (params.get("lang")) body.languages = [params.get("lang")];
  if (params.get("kind")) body.kinds = params.get("kind").split(",").map((k) => k.trim()).filter(Boolean);
  if (params.get("ref")) body.ref = params.get("ref");
  if (params.get("budget")) body.maxTokenBudget = Number(params.get("budget"));
  return body;
}

async function searchPage(params) {
  const out = h("div", { id: "results", "aria-live": "polite" });
  show(h("h1", {}, "Search"), searchForm(params, (next) => { location.hash = `#/search?${next}`; }), out);
  if (!params.get("q")) {
    out.replaceChildren(h("p", { class: "muted" }, "Ask as an agent would; the answer is what it gets: the connection graph, then each result's code within the token budget."));
    return;
  }
  out.replaceChildren(h("p", { class: "muted" }, "Searching…"));
  const body = searchBody(params);
  const answer = await guarded(() => api("POST", "/search", body), out);
  if (answer) out.replaceChildren(...renderAnswer(answer, body));
}

function requestSamples(body) {
  const url = new URL(API + "/search", location.href).href;
  const curl = `curl -s ${url} \\\n  -H 'Authorization: Bearer $SEXTANT_TOKEN' -H 'Content-Type: application/json' \\\n  -d '${JSON.stringify(body).replace(/'/g, "'\\''")}'`;
  const mcpArgs = { query: body.query };
  if (body.repositories) mcpArgs.repositories = body.repositories;
  if (body.paths) mcpArgs.path = body.paths[0];
  if (body.languages) mcpArgs.languages = body.languages;
  if (body.kinds) mcpArgs.kind = body.kinds[0];
  if (body.ref) mcpArgs.ref = body.ref;
  if (body.maxTokenBudget) mcpArgs.maxTokenBudget = body.maxTokenBudget;
  const mcp = JSON.stringify({ method: "tools/call", params: { name: "codebase_search", arguments: mcpArgs } }, null, 2);
  const copy = (text) => h("button", { type: "button", class: "secondary", onclick: () => navigator.clipboard.writeText(text).then(() => toast("Copied"), () => toast("Copy it by hand")) }, "Copy");
  return h("details", { class: "panel" }, h("summary", {}, "The same search over REST or MCP"),
    h("h2", {}, "REST"), codeBlock(curl), copy(curl), h("h2", {}, "MCP"), codeBlock(mcp), copy(mcp));
}

function renderAnswer(answer, body) {
  const r = answer.response;
  const results = r.results || [];
  const meta = r.metadata || [];
  const summary = h("p", { id: "summary" },
    `${results.length} result${results.length === 1 ? "" : "s"} · ${r.tokensUsed} of ${r.tokenBudget} tokens · ${r.passedGate} of ${(r.candidates || []).length} candidates passed the gate` +
    (r.timings ? ` · ${Math.round(r.timings.totalMs)} ms` : "") + (r.truncatedTo ? ` · best result truncated to ${r.truncatedTo} tokens` : ""));
  const nodes = [summary];
  if (results.length) nodes.push(h("section", {}, h("h2", {}, "Connection graph"), graphView(results, meta)));
  nodes.push(h("section", {}, h("h2", {}, "Results"), results.map((hit, i) => resultView(hit, meta[i], i))));
  const text = (answer.content || []).map((c) => c.text).join("\n\n");
  nodes.push(h("details", { class: "panel" }, h("summary", {}, "As the agent reads it (MCP content)"), codeBlock(text)));
  nodes.push(requestSamples(body));
  return nodes;
}

function symbolLink(name, path) {
  const p = new URLSearchParams({ name: path ? `${path} > ${name}` : name });
  return `#/symbol?${p}`;
}

function resultView(hit, meta, i) {
  const scores = Object.entries(hit.scores || {}).filter(([, v]) => typeof v === "number").map(([k, v]) => `${k} ${v.toFixed(3)}`).join(" · ");
  const rels = [];
  if (meta) {
    for (const [label, list] of [["calls", meta.calls], ["called by", meta.callers], ["extends", meta.extends], ["implements", meta.implements]]) {
      if (list && list.length) rels.push(h("div", { class: "muted" }, `${label}: `, list.slice(0, 12).map((s, j) => [j ? ", " : "", h("a", { href: symbolLink(s.name, s.path) }, s.name)]), list.length > 12 ? ` … ${list.length - 12} more` : ""));
    }
  }
  return h("article", { class: "panel result", id: `result-${i}` },
    h("div", { class: "result-head" },
      h("strong", {}, h("a", { href: symbolLink(hit.breadcrumb.split(" > ").pop(), hit.path) }, hit.breadcrumb)),
      h("span", {}, hit.kind), h("code", {}, `${hit.path}:${hit.startLine}-${hit.endLine}`),
      hit.ref ? h("span", { class: "badge" }, hit.ref) : null, h("span", { class: "muted" }, `${hit.tokens} tokens`)),
    h("div", { class: "scores" }, scores),
    rels, codeBlock(hit.chunk ? (hit.chunk.fullSource || hit.chunk.content) : hit.signature));
}

/**
 * A graph in three columns, edges drawn between them: `cols` is [left, middle, right],
 * each a list of nodes `{key, label, title, href, hit}`; `edges` are [fromKey, toKey].
 * Every node is a link (click or Enter) and focusable.
 */
function columnsGraph(cols, edges, label) {
  const rowH = 34;
  const colW = 280;
  const height = Math.max(...cols.map((c) => c.length), 1) * rowH + 20;
  const pos = new Map();
  cols.forEach((col, x) => col.forEach((n, y) => pos.set(n.key, { x: 10 + x * (colW + 60), y: 10 + y * rowH })));
  const svg = s("svg", { class: "graph", viewBox: `0 0 ${3 * colW + 140} ${height}`, role: "group", "aria-label": label });
  for (const [from, to] of edges) {
    const a = pos.get(from);
    const b = pos.get(to);
    if (!a || !b) continue;
    const [x1, y1, x2, y2] = [a.x + colW, a.y + 13, b.x, b.y + 13];
    svg.append(s("path", { class: "edge", d: `M${x1},${y1} C${x1 + 30},${y1} ${x2 - 30},${y2} ${x2},${y2}` }));
  }
  for (const n of cols.flat()) {
    const p = pos.get(n.key);
    const text = n.label.length > 38 ? `${n.label.slice(0, 37)}…` : n.label;
    const open = () => { if (n.href) location.hash = n.href; };
    svg.append(s("g", { class: `node${n.hit ? " hit" : ""}`, tabindex: 0, role: "link", "aria-label": n.title || n.label,
      onclick: open, onkeydown: (e) => { if (e.key === "Enter") open(); } },
    s("title", {}, n.title || n.label),
    s("rect", { x: p.x, y: p.y, width: colW, height: 26, rx: 5 }),
    s("text", { x: p.x + 8, y: p.y + 17 }, text)));
  }
  return svg;
}

/** Graph nodes for related symbols: one each up to `most`, else one per file with a count. */
function relatedNodes(list, most) {
  const refs = list || [];
  if (refs.length <= most) {
    return refs.map((r) => ({ key: `${r.path || ""}|${r.name}`, label: r.name, title: `${r.name}${r.path ? ` in ${r.path}` : ""}`, href: symbolLink(r.name, r.path) }));
  }
  const byFile = new Map();
  for (const r of refs) byFile.set(r.path || "(outside)", (byFile.get(r.path || "(outside)") || 0) + 1);
  const files = [...byFile.entries()].sort((a, b) => b[1] - a[1]);
  const shown = files.slice(0, most - 1).map(([file, n]) => ({ key: `file|${file}`, label: `${file} (${n})`, title: `${n} in ${file}` }));
  const rest = files.slice(most - 1).reduce((t, [, n]) => t + n, 0);
  if (rest) shown.push({ key: "file|rest", label: `… ${rest} more in ${files.length - most + 1} files`, title: `${rest} more` });
  return shown;
}

/**
 * The connection graph: the results in the middle column, what calls them on the left,
 * what they call on the right; ★ marks a result, ◆ an exported symbol.
 */
function graphView(results, meta) {
  const center = results.map((hit, i) => ({
    key: `r${i}`, hit: true, title: `${hit.breadcrumb} in ${hit.path}`,
    label: `★${meta[i] && meta[i].exported ? "◆" : ""} ${hit.breadcrumb}`, href: symbolLink(hit.breadcrumb.split(" > ").pop(), hit.path),
  }));
  const left = new Map();
  const right = new Map();
  const edges = [];
  meta.forEach((m, i) => {
    if (!m) return;
    for (const n of relatedNodes(m.callers, 6)) { left.set(n.key, n); edges.push([n.key, `r${i}`]); }
    for (const n of relatedNodes(m.calls, 6)) { right.set(n.key, n); edges.push([`r${i}`, n.key]); }
  });
  return columnsGraph([[...left.values()], center, [...right.values()]], edges, "Connection graph of the results");
}

// ---------- symbol ----------

async function symbolPage(params) {
  const name = params.get("name") || "";
  const input = h("input", { type: "search", id: "symbol-name", required: true, value: name, placeholder: "name, Parent > name, or path/file.ts > name" });
  const out = h("div", { id: "symbol" });
  show(h("h1", {}, "Symbol"),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); location.hash = `#/symbol?${new URLSearchParams({ name: input.value.trim() })}`; } },
      h("label", { class: "grow" }, "Symbol", input), h("button", { type: "submit" }, "Look up")), out);
  if (!name) return;
  const q = new URLSearchParams({ name });
  if (params.get("ref")) q.set("ref", params.get("ref"));
  const answer = await guarded(() => api("GET", `/symbols?${q}`), out);
  if (!answer) return;
  const results = answer.response.results || [];
  if (!results.length) {
    out.replaceChildren(h("p", { class: "muted" }, `No symbol named ${name}.`));
    return;
  }
  const meta = answer.response.metadata || [];
  out.replaceChildren(...results.map((hit, i) => symbolView(hit, meta[i] || {})));
}

/** A list of related symbols, grouped by file and paged: usable with thousands. */
function relatedList(title, list) {
  const id = `rel-${title.replace(/\W+/g, "-")}`;
  const box = h("section", { class: "panel", "aria-labelledby": id });
  const byFile = new Map();
  for (const s of list || []) {
    const key = s.path || "(outside the repository)";
    if (!byFile.has(key)) byFile.set(key, []);
    byFile.get(key).push(s);
  }
  const files = [...byFile.entries()].sort((a, b) => b[1].length - a[1].length);
  const pageSize = 25;
  let shown = 0;
  const ul = h("ul", { class: "plain" });
  const more = h("button", { type: "button", class: "secondary" }, "Show more");
  const showMore = () => {
    for (const [file, syms] of files.slice(shown, shown + pageSize)) {
      ul.append(h("li", {}, h("code", {}, file), ` (${syms.length}): `, syms.slice(0, 20).map((s, j) => [j ? ", " : "", h("a", { href: symbolLink(s.name, s.path) }, s.name)]), syms.length > 20 ? ` … ${syms.length - 20} more` : ""));
    }
    shown += pageSize;
    more.hidden = shown >= files.length;
  };
  more.addEventListener("click", showMore);
  box.append(h("h2", { id }, `${title} (${(list || []).length} in ${files.length} files)`));
  if (!files.length) box.append(h("p", { class: "muted" }, "None."));
  else { box.append(ul, more); showMore(); }
  return box;
}

/** A symbol between its callers (and subtypes) and what it calls (and extends). */
function symbolGraph(hit, meta) {
  const center = { key: "self", hit: true, label: hit.breadcrumb, title: `${hit.breadcrumb} in ${hit.path}` };
  const left = relatedNodes([...(meta.callers || []), ...(meta.subtypes || [])], 12);
  const right = relatedNodes([...(meta.calls || []), ...(meta.extends || []), ...(meta.implements || [])], 12);
  const edges = [...left.map((n) => [n.key, "self"]), ...right.map((n) => ["self", n.key])];
  return columnsGraph([left, [center], right], edges, `What calls ${hit.breadcrumb} and what it calls`);
}

function symbolView(hit, meta) {
  return h("div", {},
    h("div", { class: "panel" },
      h("div", { class: "result-head" }, h("strong", {}, hit.breadcrumb), h("span", {}, hit.kind), h("code", {}, `${hit.path}:${hit.startLine}-${hit.endLine}`)),
      codeBlock(hit.chunk ? hit.chunk.fullSource || hit.chunk.content : hit.signature),
      h("a", { href: `#/scout?${new URLSearchParams({ q: `symbol = ${hit.path} > ${hit.breadcrumb}` })}` }, "What breaks if this changes? (Scout)")),
    h("section", {}, h("h2", {}, "Neighbours"), symbolGraph(hit, meta)),
    h("div", { class: "cols" },
      relatedList("Callers", meta.callers), relatedList("Calls", meta.calls),
      relatedList("Used by", meta.usedBy), relatedList("Extends", meta.extends),
      relatedList("Implements", meta.implements), relatedList("Subtypes", meta.subtypes)));
}

// ---------- scout ----------

async function scoutPage(params) {
  const q = h("input", { type: "search", id: "scout-query", required: true, value: params.get("q") || "", placeholder: "what breaks if I add a variant to Kind" });
  const feed = h("ol", { id: "scout-feed", "aria-live": "polite" });
  const out = h("div", { id: "scout-result" });
  show(h("h1", {}, "Scout"),
    h("form", { class: "panel row", onsubmit: (e) => { e.preventDefault(); location.hash = `#/scout?${new URLSearchParams({ q: q.value.trim() })}`; } },
      h("label", { class: "grow" }, "What would you change?", q), h("button", { type: "submit", id: "scout" }, "Scout")),
    out, h("section", { class: "panel" }, h("h2", {}, "Exploration"), feed));
  if (!params.get("q")) return;
  out.replaceChildren(h("p", { class: "muted" }, "Exploring…"));
  const controller = new AbortController();
  state.streams.push(controller);
  await guarded(() => stream(API + "/scout", {
    method: "POST",
    headers: headers({ Accept: "text/event-stream", "Content-Type": "application/json" }),
    body: JSON.stringify({ query: params.get("q") }),
  }, (name, data) => {
    if (name === "progress") {
      feed.append(h("li", {}, badge(data.risk), " ", h("strong", {}, data.symbol), " ", h("code", {}, data.location),
        data.tags && data.tags.length ? ` [${data.tags.join(", ")}]` : "", data.expanded ? " · explored further" : ""));
    } else if (name === "result") {
      out.replaceChildren(scoutResult(data));
    } else if (name === "error") {
      out.replaceChildren(errorBox(new Error(data.error ? data.error.message : String(data))));
    }
  }, controller.signal), out);
}

function scoutResult(r) {
  const pointers = (r.pointers || []).map((p) => h("tr", {},
    h("td", {}, badge(p.risk)), h("td", {}, h("code", {}, p.location)),
    h("td", {}, p.what), h("td", {}, p.action || ""), h("td", {}, (p.tags || []).join(", "))));
  return h("div", {},
    h("section", { class: "panel" }, h("h2", {}, "Summary"), h("div", { id: "scout-summary" }, codeBlock(r.summary)),
      h("p", { class: "muted" }, r.meta ? `${r.meta.nodesVisited} symbols explored, ${r.meta.linksRated} links rated. ${r.meta.interpretation}` : "")),
    h("section", { class: "panel" }, h("h2", {}, "Pointers"), pointers.length ? h("div", { class: "table-wrap" }, h("table", {}, h("tbody", {}, pointers))) : h("p", { class: "muted" }, "Nothing of medium or high risk.")));
}

// ---------- server ----------

/** The numbers of a Prometheus text exposition: name{labels} → value. */
function parseMetrics(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([^\s{]+)(\{[^}]*\})?\s+(\S+)/);
    if (m) out.set(m[1] + (m[2] || ""), Number(m[3]));
  }
  return out;
}

function sum(metrics, prefix) {
  let total = 0;
  for (const [k, v] of metrics) if (k === prefix || k.startsWith(`${prefix}{`)) total += v;
  return total;
}

function chart(values) {
  const max = Math.max(...values, 1);
  const points = values.map((v, i) => `${(i / Math.max(values.length - 1, 1)) * 200},${58 - (v / max) * 54}`).join(" ");
  return s("svg", { class: "chart", viewBox: "0 0 200 60", preserveAspectRatio: "none", "aria-hidden": "true" }, s("polyline", { points }));
}

async function serverPage() {
  const metricsBox = h("div", { class: "cols", id: "metrics" }, h("p", { class: "muted" }, "Loading…"));
  const tokensBox = h("div", { id: "tokens" });
  show(h("h1", {}, "Server"), h("h2", {}, "At a glance"), metricsBox, h("h2", {}, "Tokens"), tokensBox);
  const history = [];
  const sample = async () => {
    const response = await fetch(new URL("metrics", document.baseURI), { headers: headers() });
    if (!response.ok) throw await failure(response);
    const m = parseMetrics(await response.text());
    const now = Date.now();
    const requests = sum(m, "sextant_http_requests_total");
    const prev = history[history.length - 1];
    const rate = prev ? Math.max(0, (requests - prev.requests) / ((now - prev.at) / 1000)) : 0;
    history.push({ at: now, requests, rate, queued: sum(m, 'sextant_jobs{state="queued"}') + sum(m, 'sextant_jobs{state="running"}') });
    if (history.length > 60) history.shift();
    // Search latency from the request histogram: the first bucket holding the quantile.
    const buckets = [];
    for (const [k, v] of m) {
      const b = k.match(/^sextant_http_request_duration_seconds_bucket\{.*route="[^"]*\/api\/v1\/search".*le="([^"]+)"/);
      if (b) buckets.push([b[1] === "+Inf" ? Infinity : Number(b[1]), v]);
    }
    buckets.sort((a, b) => a[0] - b[0]);
    const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
    const quantile = (q) => {
      if (!total) return "—";
      const hit = buckets.find(([, n]) => n >= q * total);
      if (!hit || hit[0] === Infinity) return "slow";
      return `≤ ${Math.round(hit[0] * 1000)} ms`;
    };
    const tile = (title, value, values) => h("div", { class: "panel" }, h("div", { class: "muted" }, title), h("div", { class: "stat" }, value), values ? chart(values) : null);
    metricsBox.replaceChildren(
      tile("Requests per second", rate.toFixed(2), history.map((x) => x.rate)),
      tile("Search p50 / p95", `${quantile(0.5)} / ${quantile(0.95)}`),
      tile("Jobs queued or running", String(history[history.length - 1].queued), history.map((x) => x.queued)),
      tile("Chunks indexed", String(sum(m, "sextant_chunks"))),
      tile("Files indexed", String(sum(m, 'sextant_files{state="indexed"}'))),
    );
  };
  await guarded(sample, metricsBox);
  every(5000, () => guarded(sample, metricsBox));
  await guarded(() => renderTokens(tokensBox), tokensBox);
}

async function renderTokens(box) {
  const { tokens } = await api("GET", "/tokens");
  const { repositories } = await api("GET", "/repositories");
  const names = new Map(repositories.map((r) => [r.id, r.name]));
  const rows = tokens.map((t) => h("tr", { "data-token": t.id },
    h("td", {}, t.name), h("td", {}, h("code", {}, t.id)), h("td", {}, t.scope), h("td", {}, t.repositories.length ? t.repositories.map((id) => names.get(id) || id).join(", ") : "all"),
    h("td", {}, when(t.createdAt)), h("td", {}, t.revokedAt ? `revoked ${when(t.revokedAt)}` :
      h("button", { type: "button", class: "danger", onclick: () => {
        if (!confirm(`Revoke ${t.name}? Requests carrying it are refused from then on.`)) return;
        guarded(async () => { await api("DELETE", `/tokens/${encodeURIComponent(t.id)}`); await renderTokens(box); }, box);
      } }, "Revoke…"))));
  const name = h("input", { type: "text", id: "token-name", required: true, placeholder: "ci-bot" });
  const scope = h("select", { id: "token-scope" }, h("option", { value: "read" }, "read"), h("option", { value: "admin" }, "admin"));
  const repos = h("input", { type: "text", id: "token-repos", placeholder: "all (or: app, lib)" });
  const created = h("div", { "aria-live": "polite" });
  box.replaceChildren(
    h("div", { class: "table-wrap panel" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Name", "Id", "Scope", "Repositories", "Created", ""].map((x) => h("th", {}, x)))), h("tbody", {}, rows))),
    h("form", { class: "panel row", onsubmit: (e) => {
      e.preventDefault();
      const repositories = repos.value.split(",").map((x) => x.trim()).filter(Boolean);
      guarded(async () => {
        const made = await api("POST", "/tokens", { name: name.value.trim(), scope: scope.value, repositories });
        await renderTokens(box);
        box.append(h("div", { class: "panel", role: "alert" }, "New token (shown once): ", h("code", { class: "secret", id: "new-secret" }, made.secret)));
      }, created);
    } }, h("label", {}, "Name", name), h("label", {}, "Scope", scope), h("label", { class: "grow" }, "Repositories", repos), h("button", { type: "submit", id: "create-token" }, "Create token")),
    created);
}

// ---------- routing ----------

async function route() {
  stopStreams();
  staleToast();
  const [path, query] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query || "");
  const page = (path || "/repos").split("/")[1] || "repos";
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.page === page || ((page === "repo" || page === "compare") && a.dataset.page === "repos") || (page === "symbol" && a.dataset.page === "search")) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (page === "signin") return signInPage();
  if (!state.me) {
    try {
      await loadMe();
    } catch (e) {
      if (e.status === 401) return signInPage();
      return show(errorBox(e));
    }
  }
  switch (page) {
    case "repo": return repoPage(decodeURIComponent(path.split("/").slice(2).join("/")));
    case "search": return searchPage(params);
    case "symbol": return symbolPage(params);
    case "scout": return scoutPage(params);
    case "compare": return comparePage(params);
    case "server": return serverPage();
    default: return reposPage();
  }
}

window.addEventListener("hashchange", () => { route().then(() => main().focus()); });
route();
