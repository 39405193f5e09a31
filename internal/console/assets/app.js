// Ergon console. Plain DOM, no framework: every text from the cluster goes in with
// textContent or a text node, never as HTML. Live changes come from one EventSource per
// namespace (the server's watches); only the inbox, which spans namespaces, is read again on
// a Gate change, on navigation and once a minute.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";

  // h builds an element: attributes by setAttribute, on* as listeners, children as nodes or text.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    return fill(el, attrs, children);
  }
  function s(tag, attrs, ...children) {
    const el = document.createElementNS(SVG, tag);
    return fill(el, attrs, children);
  }
  function fill(el, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  const state = { me: null, ns: "", es: null, runs: new Map(), gates: new Map(), view: null, live: false };

  // api calls the console's JSON API; a write carries the CSRF token. Errors carry the
  // server's message, which for a refused write is the API server's own.
  async function api(path, method, body) {
    const opts = { method: method || "GET", credentials: "same-origin", headers: {} };
    if (body !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.headers["X-Ergon-CSRF"] = (state.me && state.me.csrf) || "";
      opts.body = JSON.stringify(body);
    }
    const res = await fetch(path, opts);
    const text = await res.text();
    if (!res.ok) {
      let msg = text;
      try { msg = JSON.parse(text).error || text; } catch (e) { /* plain text */ }
      const err = new Error(msg);
      err.status = res.status;
      throw err;
    }
    const ct = res.headers.get("Content-Type") || "";
    return ct.startsWith("application/json") ? JSON.parse(text) : text;
  }
  const nsPath = (rest) => "/api/namespaces/" + encodeURIComponent(state.ns) + rest;
  const enc = encodeURIComponent;

  function toast(msg) {
    const d = h("div", {}, msg);
    $("toast").appendChild(d);
    setTimeout(() => d.remove(), 5000);
  }

  // --- time ---------------------------------------------------------------------------
  function ago(t) {
    if (!t) return "";
    const d = (Date.now() - Date.parse(t)) / 1000;
    return d < 0 ? "in " + dur(-d) : dur(d) + " ago";
  }
  function dur(sec) {
    if (sec === null || sec === undefined || isNaN(sec)) return "";
    sec = Math.max(0, Math.round(sec));
    if (sec < 60) return sec + "s";
    if (sec < 3600) return Math.floor(sec / 60) + "m" + (sec % 60 ? (sec % 60) + "s" : "");
    if (sec < 86400) return Math.floor(sec / 3600) + "h" + (Math.floor(sec % 3600 / 60) ? Math.floor(sec % 3600 / 60) + "m" : "");
    return Math.floor(sec / 86400) + "d" + Math.floor(sec % 86400 / 3600) + "h";
  }
  function between(a, b) {
    if (!a) return "";
    return dur(((b ? Date.parse(b) : Date.now()) - Date.parse(a)) / 1000);
  }
  function stamp(t) { return t ? new Date(t).toLocaleString() : ""; }

  // summarize is the run list's view of a Run, as internal/console.Summarize makes it.
  function summarize(run) {
    const st = run.status || {};
    const [d, t] = (st.progress || "").split("/").map((x) => parseInt(x, 10));
    return {
      name: run.metadata.name, scene: run.spec.sceneRef.name,
      trigger: (run.metadata.labels || {})["ergon.dev/trigger"] || "",
      phase: st.phase || "Pending", done: d || 0, total: t || 0,
      created: run.metadata.creationTimestamp, started: st.startedAt, finished: st.finishedAt,
      waiting: (st.steps || []).filter((x) => x.phase === "Waiting").map((x) => x.name),
    };
  }
  const phaseBadge = (p, extra) => h("span", { class: "phase " + (p || "Pending") + (extra ? " " + extra : "") }, p || "Pending");

  // --- routing ------------------------------------------------------------------------
  const views = { inbox: "Inbox", runs: "Runs", scenes: "Scenes", gates: "Gates", triggers: "Triggers", workspaces: "Workspaces" };
  function route() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    if (parts[0] !== "ns" || !parts[1]) return { ns: state.ns || (state.me && state.me.defaultNamespace) || "default", view: "runs" };
    const view = views[parts[2]] || parts[2] === "compare" ? parts[2] : "runs";
    return { ns: parts[1], view, name: parts[3] || "", extra: parts[4] || "", query: new URLSearchParams(location.search) };
  }
  const link = (view, name) => "#/ns/" + enc(state.ns) + "/" + view + (name ? "/" + enc(name) : "");
  // runHref is the page of a Run (a summary or a comparison's column): an archived one by its UID.
  const runHref = (r) => "#/ns/" + enc(r.namespace || state.ns) + "/runs/" + enc(r.name) + (r.archived ? "/" + enc(r.uid) : "");

  function renderNav(active) {
    const nav = $("nav");
    nav.replaceChildren(...Object.entries(views).map(([v, label]) =>
      h("a", { href: link(v), "aria-current": v === active ? "page" : null }, label,
        v === "gates" ? h("span", { id: "gate-count", class: "muted" }) : null,
        v === "inbox" ? h("span", { id: "inbox-count", class: "count", "aria-label": "questions and Gates waiting on you", hidden: true }) : null)));
    updateCounts();
    refreshInbox();
  }

  // inboxPath asks for the inbox, naming the namespaces the page knows of, which the server
  // searches when the viewer may not list namespaces.
  const inboxPath = () => "/api/inbox?namespaces=" + enc([state.ns, ...[...$("ns").options].map((o) => o.value)].join(","));

  // refreshInbox reads what waits on the viewer in every namespace they may see (asked with
  // their own token by the server) and shows how many on the Inbox link.
  let inboxTimer = null, inboxSoon = null;
  // Changes come in bursts (a chat message decides one Gate and opens the next): read once.
  function refreshInbox() {
    clearTimeout(inboxSoon);
    inboxSoon = setTimeout(readInbox, 500);
  }
  async function readInbox() {
    clearTimeout(inboxTimer);
    inboxTimer = setTimeout(readInbox, 60000);
    try {
      const list = await api(inboxPath());
      state.inbox = list.items;
      const c = $("inbox-count");
      if (c) { c.textContent = String(list.items.length); c.hidden = list.items.length === 0; }
      if (state.view && state.view.onInbox) state.view.onInbox();
    } catch (e) { /* the badge stays as it was */ }
  }
  function updateCounts() {
    let running = 0, waiting = 0;
    for (const r of state.runs.values()) {
      if (r.phase === "Running") running++;
      if (r.phase === "Waiting") waiting++;
    }
    $("badge").replaceChildren(h("span", { class: "phase Running", title: "Runs running" }, running + " running"),
      h("span", { class: "phase Waiting", title: "Runs waiting" }, waiting + " waiting"));
    const pending = [...state.gates.values()].filter((g) => !g.spec.decision && !((g.status || {}).phase && g.status.phase !== "Pending")).length;
    const gc = $("gate-count");
    if (gc) gc.textContent = pending ? " (" + pending + ")" : "";
  }

  // Renders may overlap (a view still loading when the address changes again); only the
  // latest one may draw, or a slow earlier one would replace the page asked for last.
  let renders = 0;
  async function render() {
    const seq = ++renders;
    const r = route();
    if (r.ns !== state.ns) await switchNamespace(r.ns);
    if (seq !== renders) return;
    renderNav(r.view === "compare" ? "runs" : r.view);
    const main = $("main");
    if (state.view && state.view.close) state.view.close();
    state.view = null;
    main.replaceChildren(h("p", { class: "muted" }, "Loading…"));
    try {
      let view = null;
      if (r.view === "runs" && r.name) view = await runView(r.name, r.extra);
      else if (r.view === "compare") view = await compareView(r.name, r.extra);
      else if (r.view === "runs") view = await runsView(r.query);
      else if (r.view === "scenes" && r.name) view = await sceneView(r.name);
      else if (r.view === "scenes") view = await scenesView();
      else if (r.view === "gates") view = await gatesView();
      else if (r.view === "inbox") view = await inboxView();
      else if (r.view === "triggers") view = await triggersView();
      else if (r.view === "workspaces") view = await workspacesView();
      if (seq !== renders) return;
      state.view = view;
      main.replaceChildren(view.el);
      document.title = (r.view === "compare" ? "Compare" : r.name || views[r.view]) + " · " + state.ns + " · Ergon";
    } catch (e) {
      if (seq !== renders) return;
      if (e.status === 401) return showLogin();
      main.replaceChildren(h("p", { class: "error", role: "alert" }, e.message));
    }
  }

  // --- live changes -------------------------------------------------------------------
  async function switchNamespace(ns) {
    state.ns = ns;
    state.runs = new Map();
    state.gates = new Map();
    const sel = $("ns");
    if (![...sel.options].some((o) => o.value === ns)) sel.appendChild(h("option", { value: ns }, ns));
    sel.value = ns;
    $("ns-input").value = ns;
    if (state.es) state.es.close();
    const es = new EventSource(nsPath("/events"));
    state.es = es;
    let watching = 0;
    es.addEventListener("open", () => { watching = 0; });
    es.addEventListener("error", () => setLive(false));
    es.addEventListener("change", (ev) => {
      const c = JSON.parse(ev.data);
      if (c.watching) {
        // Every kind is watched from now on: reload what is shown, so nothing is missed.
        if (++watching === 4) { setLive(true); reloadStores(); if (state.view && state.view.reload) state.view.reload(); }
        return;
      }
      if (c.error) { if (!c.kind) setLive(false); return; }
      applyChange(c);
    });
    await reloadStores();
  }
  function setLive(on) {
    state.live = on;
    $("live").className = "live" + (on ? " on" : "");
    $("live").title = on ? "Live: changes arrive as they happen" : "Reconnecting…";
  }
  async function reloadStores() {
    try {
      const [runs, gates] = await Promise.all([api(nsPath("/runs")), api(nsPath("/gates")).catch(() => ({ items: [] }))]);
      state.runs = new Map(runs.items.map((r) => [r.name, r]));
      state.gates = new Map(gates.items.map((g) => [g.metadata.name, g]));
      updateCounts();
    } catch (e) { /* the view shows the error */ }
  }
  function applyChange(c) {
    const o = c.object;
    if (c.kind === "Run") {
      // A Run comes as its summary; a Run's page follows the Run itself on a stream of its own.
      if (c.type === "DELETED") state.runs.delete(c.summary.name);
      else state.runs.set(c.summary.name, c.summary);
    } else if (c.kind === "Gate") {
      if (c.type === "DELETED") state.gates.delete(o.metadata.name);
      else state.gates.set(o.metadata.name, o);
      refreshInbox();
    }
    updateCounts();
    if (state.view && state.view.onChange) state.view.onChange(c);
  }

  // --- login --------------------------------------------------------------------------
  function showLogin(msg) {
    $("top").hidden = true;
    const err = h("p", { class: "error", role: "alert", hidden: !msg }, msg || "");
    const ta = h("textarea", { id: "token", name: "token", required: true, autocomplete: "off", spellcheck: "false", "aria-describedby": "token-help" });
    const form = h("form", { class: "login card", onsubmit: async (e) => {
      e.preventDefault();
      try {
        await api("/api/login", "POST", { token: ta.value });
        ta.value = "";
        await start();
      } catch (x) { err.hidden = false; err.textContent = x.message; }
    } },
    h("h1", {}, "Ergon console"),
    h("label", { for: "token" }, "Your Kubernetes bearer token"),
    ta,
    h("p", { id: "token-help", class: "muted" }, "For example the output of kubectl create token NAME. It is checked with the API server and kept only in an HttpOnly cookie of this console; everything you do here is done as you."),
    err,
    h("button", { class: "primary", type: "submit", id: "login" }, "Log in"));
    $("main").replaceChildren(form);
    ta.focus();
  }

  // --- runs ---------------------------------------------------------------------------
  // runsView lists live and archived Runs together (the server merges them, each read with
  // the viewer's token), with the archive's filters, a page at a time; two picked Runs open
  // side by side.
  async function runsView(query) {
    const f = {};
    for (const k of ["scene", "trigger", "phase", "startedBy", "label", "since", "until", "text"]) f[k] = query.get(k) || "";
    f.all = query.get("all") === "1";
    let items = [], next = "", archiveError = "";
    const picked = new Map();
    const body = h("tbody");
    const selects = {}, inputs = {};
    const note = h("p", { class: "muted", id: "archive-note", hidden: true });
    const more = h("button", { type: "button", id: "more", hidden: true, onclick: () => load(true) }, "More");
    const compare = h("button", { type: "button", id: "compare", class: "primary", disabled: true, onclick: () => {
      const [a, b] = [...picked.values()];
      location.hash = link("compare", a) + "/" + enc(b);
    } }, "Compare");
    const el = h("section", {}, h("h1", {}, "Runs"));
    const bar = h("form", { class: "filters", role: "search", onsubmit: (e) => { e.preventDefault(); read(); load(false); } });
    for (const k of ["scene", "trigger", "phase"]) {
      selects[k] = h("select", { id: "filter-" + k, onchange: () => { f[k] = selects[k].value; load(false); } });
      bar.appendChild(h("label", {}, k[0].toUpperCase() + k.slice(1), selects[k]));
    }
    const field = (k, label, hint) => {
      inputs[k] = h("input", { id: "filter-" + k, value: f[k], placeholder: hint, spellcheck: "false", size: 14 });
      bar.appendChild(h("label", {}, label, inputs[k]));
    };
    field("startedBy", "Started by", "user name");
    field("label", "Label", "key=value");
    field("since", "Ended since", "24h or a time");
    field("until", "Ended before", "1h or a time");
    field("text", "Text", "in params, outputs");
    const all = h("input", { type: "checkbox", id: "filter-all", checked: f.all, onchange: () => { f.all = all.checked; load(false); } });
    bar.append(h("label", { class: "check" }, h("span", {}, all, " All namespaces")), h("button", { type: "submit", id: "search" }, "Search"), compare);
    const head = h("thead");
    el.append(bar, note, h("div", { class: "scroll" }, h("table", { id: "runs" }, head, body)), more);
    function read() { for (const k of Object.keys(inputs)) f[k] = inputs[k].value.trim(); }
    function options(sel, values, cur) {
      const vals = [...new Set(values.filter(Boolean))].sort();
      if (cur && !vals.includes(cur)) vals.push(cur);
      sel.replaceChildren(h("option", { value: "" }, "all"), ...vals.map((v) => h("option", { value: v }, v)));
      sel.value = cur;
    }
    // key names a Run for the compare view: NAMESPACE/NAME, and @UID for an archived one.
    const keyOf = (r) => (r.namespace || state.ns) + "/" + r.name + (r.archived ? "@" + r.uid : "");
    async function load(append) {
      const p = new URLSearchParams();
      for (const k of ["scene", "trigger", "phase", "startedBy", "label", "since", "until", "text"]) if (f[k]) p.set(k, f[k]);
      if (!f.all) p.set("namespace", state.ns);
      p.set("home", state.ns);
      if (append && next) p.set("continue", next);
      try {
        const page = await api("/api/history?" + p.toString());
        items = append ? items.concat(page.items) : page.items;
        next = page.continue || "";
        archiveError = page.archiveError || "";
      } catch (e) {
        if (!append) items = [];
        next = "";
        archiveError = e.message;
      }
      draw();
    }
    function draw() {
      const live = [...state.runs.values()];
      options(selects.scene, live.map((r) => r.scene).concat(items.map((r) => r.scene)), f.scene);
      options(selects.trigger, live.map((r) => r.trigger).concat(items.map((r) => r.trigger)), f.trigger);
      options(selects.phase, ["Pending", "Running", "Waiting", "Succeeded", "Failed", "Cancelled"], f.phase);
      note.hidden = !archiveError;
      note.textContent = archiveError;
      more.hidden = !next;
      head.replaceChildren(h("tr", {}, h("th", {}, h("span", { class: "sr-only" }, "Pick")), h("th", {}, "Run"), f.all ? h("th", {}, "Namespace") : null,
        h("th", {}, "Scene"), h("th", { class: "hide-sm" }, "Trigger"), h("th", {}, "Phase"), h("th", {}, "Progress"),
        h("th", { class: "hide-sm" }, "Started by"), h("th", { class: "hide-sm" }, "Started"), h("th", {}, "Duration")));
      body.replaceChildren(...items.map((r) => {
        // A live Run's row follows its changes.
        const cur = !r.archived && (r.namespace || state.ns) === state.ns && state.runs.get(r.name);
        if (cur && cur.uid === r.uid) r = Object.assign({}, r, cur, { namespace: r.namespace });
        const k = keyOf(r);
        const pick = h("input", { type: "checkbox", class: "pick", "aria-label": "Pick " + r.name + " to compare", checked: picked.has(k),
          onchange: (e) => { if (e.target.checked) picked.set(k, k); else picked.delete(k); compare.disabled = picked.size !== 2; } });
        return h("tr", { "data-run": r.name, "data-archived": r.archived ? "true" : null },
          h("td", {}, pick),
          h("td", {}, h("a", { href: runHref(r) }, r.name), r.archived ? h("span", { class: "tag", title: "From the archive: the Run ended" }, "archived") : null),
          f.all ? h("td", {}, r.namespace) : null,
          h("td", {}, r.scene),
          h("td", { class: "hide-sm trigger" }, r.trigger || ""),
          h("td", {}, phaseBadge(r.phase), r.waiting && r.waiting.length ? h("span", { class: "muted" }, " on " + r.waiting.join(", ")) : null),
          h("td", {}, r.archived ? "" : [h("progress", { max: r.total || 1, value: r.done, "aria-label": r.done + " of " + r.total + " steps" }), " " + r.done + "/" + r.total]),
          h("td", { class: "hide-sm" }, r.startedBy || ""),
          h("td", { class: "hide-sm", title: stamp(r.started || r.created) }, ago(r.started || r.created)),
          h("td", {}, between(r.started || r.created, r.finished)));
      }));
      compare.disabled = picked.size !== 2;
      if (!items.length) body.appendChild(h("tr", {}, h("td", { colspan: 10, class: "muted" }, "No Runs match these filters")));
    }
    await reloadStores();
    await load(false);
    // A new or changed Run reads the first page again, once for a burst of changes.
    let soon = null;
    return {
      el,
      onChange: (c) => {
        if (c.kind !== "Run") return;
        if (items.some((r) => !r.archived && r.uid === c.summary.uid) && c.type === "MODIFIED") { draw(); return; }
        if (next || soon) return; // more than a page is shown: keep the reader's place
        // At most one read a second, however busy the namespace.
        soon = setTimeout(() => { soon = null; load(false); }, 1000);
      },
      reload: () => reloadStores().then(() => load(false)),
    };
  }

  // --- compare ------------------------------------------------------------------------
  // compareView shows two Runs side by side: params, steps with their durations, tokens,
  // cost and gate answers, and the diffs of the outputs that differ.
  async function compareView(a, b) {
    const side = (k) => {
      const [ns, rest] = [k.slice(0, k.indexOf("/")), k.slice(k.indexOf("/") + 1)];
      const at = rest.indexOf("@");
      return at < 0 ? { q: ns + "/" + rest, uid: "" } : { q: ns + "/" + rest.slice(0, at), uid: rest.slice(at + 1) };
    };
    const sa = side(a), sb = side(b);
    const c = await api("/api/compare?a=" + enc(sa.q) + "&b=" + enc(sb.q) + (sa.uid ? "&aUID=" + enc(sa.uid) : "") + (sb.uid ? "&bUID=" + enc(sb.uid) : ""));
    const runLink = (col) => h("a", { href: runHref(col) }, col.name);
    const usage = (u) => u ? u.totalTokens + " tokens" + (u.cost ? ", $" + u.cost : "") : "";
    const secs = (x) => x === undefined || x === null ? "" : dur(x);
    const row = (label, va, vb, differs) => h("tr", { class: differs ? "differs" : null }, h("th", { scope: "row" }, label), h("td", {}, va), h("td", {}, vb));
    const head = h("table", { id: "compare-head", class: "compare" },
      h("thead", {}, h("tr", {}, h("th", {}), h("th", {}, runLink(c.a), c.a.archived ? h("span", { class: "tag" }, "archived") : null),
        h("th", {}, runLink(c.b), c.b.archived ? h("span", { class: "tag" }, "archived") : null))),
      h("tbody", {},
        row("Namespace", c.a.namespace, c.b.namespace, c.a.namespace !== c.b.namespace),
        row("Scene", c.a.scene, c.b.scene, c.a.scene !== c.b.scene),
        row("Phase", phaseBadge(c.a.phase), phaseBadge(c.b.phase), c.a.phase !== c.b.phase),
        row("Started by", c.a.startedBy || "", c.b.startedBy || "", c.a.startedBy !== c.b.startedBy),
        row("Duration", secs(c.a.seconds), secs(c.b.seconds), false),
        row("Usage", usage(c.a.usage), usage(c.b.usage), usage(c.a.usage) !== usage(c.b.usage))));
    const params = h("table", { id: "compare-params", class: "compare" },
      h("thead", {}, h("tr", {}, h("th", {}, "Param"), h("th", {}, c.a.name), h("th", {}, c.b.name))),
      h("tbody", {}, ...(c.params || []).map((p) => h("tr", { "data-param": p.name, class: p.same ? null : "differs" },
        h("th", { scope: "row" }, p.name), h("td", {}, p.a === undefined ? h("i", { class: "muted" }, "unset") : p.a),
        h("td", {}, p.b === undefined ? h("i", { class: "muted" }, "unset") : p.b))),
      (c.params || []).length ? null : h("tr", {}, h("td", { colspan: 3, class: "muted" }, "Neither Run has params."))));
    const cell = (x) => {
      if (!x) return h("td", { class: "muted" }, "not run");
      return h("td", {}, phaseBadge(x.phase), x.reason === "Reused" ? h("span", { class: "tag" }, "reused") : null,
        x.seconds !== undefined ? " " + secs(x.seconds) : "", x.usage ? h("div", { class: "muted" }, usage(x.usage)) : null,
        x.decision ? h("div", {}, "decision ", h("b", {}, x.decision)) : null,
        ...(x.answers || []).map((g) => h("div", { class: "answer" }, h("b", {}, g.option || "answered"), g.values ? " " + g.values : "",
          h("span", { class: "muted" }, " by " + (g.decidedBy || "?")), g.comment ? h("div", { class: "muted" }, "“" + g.comment + "”") : null)));
    };
    const steps = h("table", { id: "compare-steps", class: "compare" },
      h("thead", {}, h("tr", {}, h("th", {}, "Step"), h("th", {}, c.a.name), h("th", {}, c.b.name), h("th", {}, "Output"))),
      h("tbody", {}, ...(c.steps || []).map((x) => h("tr", { "data-step": x.name, class: x.output === "differs" ? "differs" : null },
        h("th", { scope: "row" }, x.name), cell(x.a), cell(x.b), h("td", { class: "output" }, x.output)))));
    const diffs = (c.steps || []).filter((x) => x.output === "differs").map((x) => h("details", { class: "diff", open: true, "data-step": x.name },
      h("summary", {}, "Output of ", h("b", {}, x.name), x.previewsOnly ? h("span", { class: "muted" }, " (previews: a whole value was too large or unreadable)") : null),
      h("pre", {}, ...(x.diff || []).map((l) => h("span", { class: l[0] === "+" ? "add" : l[0] === "-" ? "del" : l[0] === "~" ? "chg" : "same" }, l + "\n")))));
    return { el: h("section", { id: "compare-view" }, h("h1", {}, "Compare ", c.a.name, " and ", c.b.name), head,
      h("h2", {}, "Params"), params, h("h2", {}, "Steps"), steps, diffs.length ? h("h2", {}, "Outputs that differ") : null, ...diffs) };
  }

  // --- graph --------------------------------------------------------------------------
  // topLevel is what a graph draws: the steps on their own and the groups the server made of
  // a large graph (each drawn as one node until it is opened), in the order of their first
  // step, with the edges between them. A step names its dependencies by index.
  function topLevel(graph) {
    const groups = (graph.groups || []).map((g, i) => ({ id: "group:" + (i + 1), group: i + 1, kind: g.kind, members: [] }));
    const items = [], itemOf = [];
    graph.nodes.forEach((n, i) => {
      let it;
      if (n.group && groups[n.group - 1]) {
        it = groups[n.group - 1];
        if (!it.members.length) items.push(it);
        it.members.push(n);
      } else {
        it = { id: n.name, node: n };
        items.push(it);
      }
      itemOf[i] = it;
    });
    for (const g of groups) g.label = g.members.length ? g.members[0].name + (g.members.length > 1 ? " … " + g.members[g.members.length - 1].name : "") : "";
    const edges = new Map();
    graph.nodes.forEach((n, i) => {
      for (const d of n.deps || []) {
        const from = itemOf[d], to = itemOf[i];
        if (!from || from === to) continue;
        const key = from.id + "\n" + to.id;
        if (!edges.has(key)) edges.set(key, { from: from.id, to: to.id, label: to.node ? to.node.when : "" });
      }
    });
    return { items, edges: [...edges.values()] };
  }
  const ended = new Set(["Succeeded", "Failed", "Cancelled", "Skipped"]);
  // groupPhase is a group's phase: running while any member runs or waits, failed when one
  // failed, succeeded when all did; members by phase are counted in counts.
  function groupPhase(members, phases) {
    const counts = {};
    for (const m of members) { const p = phases.get(m.name) || ""; counts[p] = (counts[p] || 0) + 1; }
    const n = members.length, any = (...ps) => ps.some((p) => counts[p]);
    let phase = "";
    if (any("Running", "Retrying", "Pending")) phase = "Running";
    else if (any("Waiting")) phase = "Waiting";
    else if (any("Failed", "Cancelled")) phase = "Failed";
    else if (counts.Succeeded === n) phase = "Succeeded";
    else if (counts.Skipped === n) phase = "Skipped";
    else if ([...ended].some((p) => counts[p])) phase = "Running";
    return { phase, counts };
  }
  function countsText(counts, size) {
    const parts = [size + " steps"];
    for (const [p, label] of [["Succeeded", "succeeded"], ["Running", "running"], ["Waiting", "waiting"], ["Failed", "failed"], ["Skipped", "skipped"]])
      if (counts[p]) parts.push(counts[p] + " " + label);
    return parts.join(" · ");
  }
  // drawGraph lays a step graph out with dagre and draws it as SVG; steps link to their
  // panels (onStep), groups open theirs (onGroup).
  function drawGraph(graph, onStep, onGroup) {
    const top = topLevel(graph);
    const g = new dagre.graphlib.Graph({ multigraph: false });
    g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 46, marginx: 12, marginy: 12 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const it of top.items) {
      const text = it.node ? it.node.name : it.label;
      // A group's second line counts its members by phase: room for three counts.
      g.setNode(it.id, { width: Math.max(it.node ? 90 : 300, text.length * 7.6 + 24), height: 40 });
    }
    for (const e of top.edges) {
      const label = e.label && e.label.length > 40 ? e.label.slice(0, 39) + "…" : e.label;
      g.setEdge(e.from, e.to, label ? { label, width: label.length * 6.2, height: 14, labelpos: "c" } : {});
    }
    dagre.layout(g);
    const gr = g.graph();
    const svg = s("svg", { width: Math.ceil(gr.width || 100), height: Math.ceil(gr.height || 60), role: "img", "aria-label": "Graph of " + graph.nodes.length + " steps" });
    svg.appendChild(s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      s("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow" }))));
    for (const e of g.edges()) {
      const ed = g.edge(e);
      const pts = ed.points.map((p) => p.x.toFixed(1) + "," + p.y.toFixed(1));
      svg.appendChild(s("path", { class: "edge", d: "M" + pts.join(" L"), "marker-end": "url(#arrow)" }));
      if (ed.label) svg.appendChild(s("text", { class: "edge-label", x: ed.x, y: ed.y + 4, "text-anchor": "middle" }, s("title", {}, "when " + ed.label), ed.label));
    }
    const drawn = [];
    const into = new Set(top.edges.map((e) => e.to));
    for (const it of top.items) {
      const p = g.node(it.id);
      const x = p.x - p.width / 2, y = p.y - p.height / 2;
      const n = it.node;
      const grp = n ? s("g", { class: "node kind-" + n.kind, "data-step": n.name }) : s("g", { class: "node group kind-" + it.kind, "data-group": it.group });
      const title = s("title"), sub = s("text", { class: "kind", x: p.x, y: p.y + 14, "text-anchor": "middle" });
      const body = s("a", { href: "#", tabindex: 0, onclick: (ev) => {
        ev.preventDefault();
        if (n && onStep) onStep(n.name);
        if (!n && onGroup) onGroup(it.group);
      } }, title,
      s("rect", { x, y, width: p.width, height: p.height, rx: n && n.kind === "gate" ? 14 : 6 }),
      s("text", { x: p.x, y: p.y + 1, "text-anchor": "middle" }, n ? n.name : it.label), sub);
      grp.appendChild(body);
      svg.appendChild(grp);
      drawn.push({ it, grp, body, title, sub, key: null });
    }
    const el = h("div", { class: "graph", id: "graph" }, svg);
    // colour re-colours the nodes by the phases of a Run's steps, without laying out again.
    const colour = (steps) => {
      const byName = new Map((steps || []).map((st) => [st.name, st]));
      const phases = new Map([...byName].map(([name, st]) => [name, st.phase]));
      for (const d of drawn) {
        const n = d.it.node;
        let phase, label, sub, tip;
        if (n) {
          phase = phases.get(n.name) || "";
          const inst = (byName.get(n.name) || {}).instances;
          sub = n.kind + (inst ? " · " + ((inst.succeeded || 0) + (inst.failed || 0)) + "/" + inst.total : "") + (n.when && !into.has(n.name) ? " · when " + n.when : "");
          label = n.kind + " step " + n.name + (phase ? ", " + phase : "");
          tip = n.name + " (" + n.kind + (n.when ? ", when " + n.when : "") + ")" + (phase ? ": " + phase : "");
        } else {
          const a = groupPhase(d.it.members, phases);
          phase = a.phase;
          sub = d.it.kind + " · " + countsText(a.counts, d.it.members.length);
          label = d.it.kind + " group of " + d.it.members.length + " steps, " + d.it.label + (phase ? ", " + phase : "");
          tip = label + ": " + countsText(a.counts, d.it.members.length);
        }
        const key = phase + "\n" + sub;
        if (d.key === key) continue;
        d.key = key;
        d.grp.setAttribute("class", "node " + (n ? "" : "group ") + "kind-" + (n ? n.kind : d.it.kind) + (phase ? " phase-" + phase : ""));
        d.body.setAttribute("aria-label", label);
        d.title.textContent = tip;
        d.sub.textContent = sub;
      }
      el.dataset.drawn = String(drawn.length);
    };
    colour([]);
    return { el, top, colour };
  }

  // drawGantt draws a bar per attempt of each step, from the Run's start to now or its end;
  // a group of a large graph is one bar, from its first start to its last end.
  function drawGantt(run, top) {
    const st = run.status || {};
    const byName = new Map((st.steps || []).map((x) => [x.name, x]));
    const phases = new Map((st.steps || []).map((x) => [x.name, x.phase]));
    let steps = [];
    if (top && top.items.length) {
      for (const it of top.items) {
        if (it.node) { const x = byName.get(it.node.name); if (x && x.startedAt) steps.push(x); continue; }
        const ms = it.members.map((m) => byName.get(m.name)).filter((x) => x && x.startedAt);
        if (!ms.length) continue;
        const open = ms.some((x) => !x.finishedAt);
        steps.push({ name: it.label + " (" + it.members.length + ")", startedAt: ms.reduce((a, x) => (x.startedAt < a ? x.startedAt : a), ms[0].startedAt),
          finishedAt: open ? null : ms.reduce((a, x) => (x.finishedAt > a ? x.finishedAt : a), ms[0].finishedAt),
          phase: groupPhase(it.members, phases).phase, attempts: 1, group: true });
      }
    } else steps = (st.steps || []).filter((x) => x.startedAt);
    if (!steps.length) return h("p", { class: "muted" }, "No step has started yet.");
    const t0 = Date.parse(st.startedAt || steps[0].startedAt);
    const end = st.finishedAt ? Date.parse(st.finishedAt) : Date.now();
    const span = Math.max(1000, end - t0);
    const labelW = 170, width = 860, row = 22;
    const scale = (t) => labelW + ((t - t0) / span) * (width - labelW - 10);
    const svg = s("svg", { width, height: steps.length * row + 24, role: "img", "aria-label": "Timeline of the Run's steps" });
    svg.appendChild(s("line", { class: "axis", x1: labelW, y1: 0, x2: labelW, y2: steps.length * row }));
    steps.forEach((x, i) => {
      const y = i * row + 4;
      svg.appendChild(s("text", { x: 4, y: y + 13 }, x.name.length > 22 ? x.name.slice(0, 21) + "…" : x.name));
      const attempts = [];
      let from = Date.parse(x.startedAt);
      for (const a of x.history || []) {
        const aStart = a.startedAt ? Date.parse(a.startedAt) : from, aEnd = a.finishedAt ? Date.parse(a.finishedAt) : aStart;
        attempts.push({ n: a.attempt, from: aStart, to: aEnd, phase: a.phase });
        from = aEnd;
      }
      if (x.nextAttemptAt && x.phase === "Retrying") from = Date.parse(x.nextAttemptAt);
      attempts.push({ n: x.attempts || attempts.length + 1, from, to: x.finishedAt ? Date.parse(x.finishedAt) : end, phase: x.phase });
      for (const a of attempts) {
        const x1 = scale(a.from), x2 = Math.max(x1 + 2, scale(a.to));
        svg.appendChild(s("rect", { class: "bar " + a.phase, x: x1, y, width: x2 - x1, height: row - 8, rx: 2 },
          s("title", {}, x.name + (x.group ? ": " : " attempt " + a.n + ": ") + a.phase + ", " + dur((a.to - a.from) / 1000))));
      }
    });
    svg.appendChild(s("text", { x: labelW, y: steps.length * row + 18 }, "0s"));
    svg.appendChild(s("text", { x: width - 10, y: steps.length * row + 18, "text-anchor": "end" }, dur(span / 1000)));
    return h("div", { class: "gantt" }, svg);
  }

  // instancesView shows a fan-out step's instances: counts, one cell per instance in item
  // order drawn on a canvas (a thousand instances are one element), and the first failures.
  function instancesView(inst) {
    const letters = inst.states || "", names = { P: "not started", R: "running", S: "succeeded", F: "failed", K: "skipped", C: "cancelled" };
    const counts = {};
    for (const c of letters) counts[c] = (counts[c] || 0) + 1;
    const text = inst.total + " instances: " + Object.entries(counts).map(([c, n]) => n + " " + (names[c] || c)).join(", ");
    const cell = 8, cols = Math.max(1, Math.min(letters.length, 90));
    const canvas = h("canvas", { class: "instances", width: cols * (cell + 1), height: Math.ceil(letters.length / cols) * (cell + 1), role: "img", "aria-label": text });
    const css = getComputedStyle(document.documentElement), v = (n) => css.getPropertyValue(n).trim() || "#888";
    const fillOf = { P: v("--line"), R: v("--run"), S: v("--ok"), F: v("--bad"), K: v("--skip"), C: v("--bad") };
    const ctx = canvas.getContext && canvas.getContext("2d");
    if (ctx) [...letters].forEach((c, i) => { ctx.fillStyle = fillOf[c] || v("--line"); ctx.fillRect((i % cols) * (cell + 1), Math.floor(i / cols) * (cell + 1), cell, cell); });
    return h("div", { class: "instances-box" }, h("p", { class: "muted" }, text), canvas,
      ...(inst.failures || []).map((f) => h("p", { class: "muted" }, "Instance " + f.index + ": " + (f.reason || "") + (f.message ? " " + f.message : ""))));
  }

  // --- run detail ---------------------------------------------------------------------
  // runView shows a Run: live, following its changes, or from the archive (uid names an
  // archived one; a Run gone from the cluster is read from the archive too).
  async function runView(name, uid) {
    const q = uid ? "?uid=" + enc(uid) : "";
    let data = await api(nsPath("/runs/" + enc(name)) + q);
    const gatesOf = () => data.archived ? (data.gates || []) : [...state.gates.values()];
    const el = h("section", {});
    const head = h("div");
    const graphBox = h("div");
    const ganttBox = h("div");
    const stepsBox = h("div", { id: "steps" });
    const gatesBox = h("div", { id: "gate-log" });
    const chatHead = h("h2", { hidden: true }, "Conversation"), chatBox = h("div", { id: "chat", class: "chat", hidden: true });
    const open = new Set(), loaded = new Map();
    let graph = null;
    el.append(head, h("h2", {}, "Graph"), graphBox, h("h2", {}, "Timeline"), ganttBox, chatHead, chatBox, h("h2", {}, "Gates"), gatesBox, h("h2", {}, "Steps"), stepsBox);
    // focusStep opens a step's panel, and the group's it is drawn in, and scrolls to it.
    const focusStep = (step) => {
      open.add(step);
      for (const it of graph ? graph.top.items : []) {
        const i = it.members ? it.members.findIndex((m) => m.name === step) : -1;
        if (i < 0) continue;
        openGroups.add(it.group);
        shown.set(it.group, Math.max(shown.get(it.group) || PAGE, i + 1));
      }
      drawSteps();
      const d = stepsBox.querySelector('[data-step="' + CSS.escape(step) + '"]');
      if (d) { d.scrollIntoView({ block: "nearest" }); d.querySelector("summary").focus(); }
    };
    const focusGroup = (group) => {
      openGroups.add(group);
      drawSteps();
      const d = stepsBox.querySelector('[data-group="' + group + '"]');
      if (d) { d.scrollIntoView({ block: "nearest" }); d.querySelector("summary").focus(); }
    };
    function drawHead() {
      const run = data.run, st = run.status || {}, sum = summarize(run);
      const cond = (st.conditions || []).find((c) => c.type === "Succeeded");
      const cancel = !sum.finished && !data.archived && !state.me.readOnly ? h("button", { class: "danger", type: "button", onclick: async () => {
        if (!confirm("Cancel Run " + name + "?")) return;
        try { await api(nsPath("/runs/" + enc(name) + "/cancel"), "POST", {}); } catch (e) { toast(e.message); }
      } }, "Cancel Run") : null;
      const rerun = sum.finished && !state.me.readOnly ? h("button", { type: "button", id: "rerun", onclick: () => {
        rerunBox.hidden = !rerunBox.hidden;
        if (!rerunBox.hidden) rerunBox.replaceChildren(rerunForm());
      } }, "Rerun…") : null;
      const archived = data.archived ? h("p", { class: "note", id: "archived" }, "From the archive, archived " + ago(data.archived.archivedAt) +
        (run.metadata.deletionTimestamp ? "" : ": the Run ended, and may be gone from the cluster") +
        ((data.archived.missing || []).length ? ". Not kept: " + data.archived.missing.join("; ") : "") + ".") : null;
      // replaceChildren would write a null as the text "null": leave the missing parts out.
      head.replaceChildren(...[h("h1", {}, "Run ", name, " ", phaseBadge(sum.phase)),
        h("div", { class: "meta" },
          h("span", {}, "Scene ", h("b", {}, h("a", { href: link("scenes", sum.scene) }, sum.scene))),
          sum.trigger ? h("span", {}, "Trigger ", h("b", {}, sum.trigger)) : null,
          h("span", {}, "Steps ", h("b", { id: "progress" }, sum.done + "/" + sum.total)),
          h("span", { title: stamp(sum.started) }, "Started ", h("b", {}, ago(sum.started) || "not yet")),
          h("span", {}, "Duration ", h("b", {}, between(sum.started, sum.finished))),
          h("span", {}, "By ", h("b", {}, (run.metadata.annotations || {})["ergon.dev/created-by"] || "?")),
          data.traceURL ? h("span", {}, h("a", { href: data.traceURL, id: "trace", target: "_blank", rel: "noopener" }, "Trace")) : null),
        Object.keys(run.spec.params || {}).length ? h("div", { class: "meta" }, ...Object.entries(run.spec.params).map(([k, v]) => h("span", {}, k + " = ", h("b", {}, v)))) : null,
        cond && cond.message ? h("p", { class: "muted", id: "condition" }, cond.reason + ": " + cond.message) : null,
        archived, h("div", { class: "actions" }, ...[cancel, rerun].filter(Boolean)), rerunBox].filter(Boolean));
    }
    // rerunForm starts a new Run of this Run's snapshot as the viewer: from a step (those
    // upstream of it reuse this Run's outputs, checked by digest), or all of it, with params
    // changed; or of today's Scene.
    const rerunBox = h("div", { id: "rerun-box", hidden: true });
    function rerunForm() {
      const run = data.run, given = run.spec.params || {};
      const declared = (data.params || []).map((p) => p.name);
      const names = [...new Set(declared.concat(Object.keys(given)))];
      const from = h("select", { id: "rerun-from" }, h("option", { value: "" }, "every step (a replay)"),
        ...data.graph.nodes.map((n) => h("option", { value: n.name }, n.name)));
      const latest = h("input", { type: "checkbox", id: "rerun-latest", onchange: () => { from.disabled = latest.checked; } });
      const inputs = {};
      const err = h("p", { class: "error", role: "alert", id: "rerun-error", hidden: true });
      const form = h("form", { class: "params card", id: "rerun-form", onsubmit: async (e) => {
        e.preventDefault();
        const params = {};
        for (const [k, i] of Object.entries(inputs)) if (i.value !== (given[k] || "") && i.value !== "") params[k] = i.value;
        try {
          const created = await api(nsPath("/runs/" + enc(name) + "/rerun"), "POST", { from: latest.checked ? "" : from.value, params, latest: latest.checked, uid: run.metadata.uid });
          location.hash = link("runs", created.name);
        } catch (x) { err.hidden = false; err.textContent = x.message; }
      } },
      h("label", { for: "rerun-from" }, "Run again from"), from,
      h("p", { class: "muted" }, "Steps upstream of it take this Run's outputs, checked by their digests; it and every step downstream of it run again."),
      ...names.map((k) => {
        inputs[k] = h("input", { id: "rerun-param-" + k, value: given[k] || "", placeholder: given[k] === undefined ? "default" : "", spellcheck: "false" });
        return h("label", {}, k, inputs[k]);
      }),
      h("label", { class: "check" }, latest, " Today's Scene instead of this Run's snapshot"),
      err, h("button", { class: "primary", type: "submit", id: "rerun-start" }, "Start"));
      return form;
    }
    // drawSteps rebuilds only the panels whose step changed, so a 1,000-step Run stays quick.
    // A group of a large graph is one panel; its members are drawn only while it is open, a
    // page at a time as the viewer scrolls to the end of what is drawn.
    const PAGE = 50;
    const panels = new Map(), groupPanels = new Map(), openGroups = new Set(), shown = new Map();
    function drawSteps() {
      const st = data.run.status || {};
      const byName = new Map((st.steps || []).map((x) => [x.name, x]));
      const phases = new Map((st.steps || []).map((x) => [x.name, x.phase]));
      const items = graph && graph.top.items.length ? graph.top.items : [...byName.keys()].map((n) => ({ id: n, node: { name: n, kind: "" } }));
      const els = items.map((it) => (it.node ? stepEl(it.node.name, it.node.kind, byName) : groupEl(it, byName, phases)));
      replaceIfChanged(stepsBox, els);
    }
    function replaceIfChanged(box, els) {
      if (els.length !== box.childNodes.length || els.some((e, i) => box.childNodes[i] !== e)) box.replaceChildren(...els);
    }
    function stepEl(n, kind, byName) {
      const x = byName.get(n), l = loaded.get(n);
      const key = JSON.stringify(x || null) + open.has(n) + (l ? l.what + (l.text || l.error || "").length : "") +
        (x && x.startedAt && !x.finishedAt ? Math.floor(Date.now() / 1000) : "");
      const p = panels.get(n);
      if (p && p.key === key) return p.el;
      const el = stepPanel(n, kind, x);
      panels.set(n, { key, el });
      return el;
    }
    function groupEl(it, byName, phases) {
      let gp = groupPanels.get(it.group);
      if (!gp) {
        const d = h("details", { class: "step group", "data-group": it.group });
        gp = { d, summary: h("summary"), list: h("div", { class: "members" }), more: h("p", { class: "muted more", hidden: true }), key: null };
        d.append(gp.summary, gp.list, gp.more);
        d.addEventListener("toggle", () => {
          if (d.open === openGroups.has(it.group)) return;
          if (d.open) openGroups.add(it.group); else openGroups.delete(it.group);
          drawSteps();
        });
        new IntersectionObserver((es) => {
          if (!es.some((e) => e.isIntersecting) || !d.open) return;
          shown.set(it.group, (shown.get(it.group) || PAGE) + PAGE);
          drawSteps();
        }).observe(gp.more);
        groupPanels.set(it.group, gp);
      }
      const a = groupPhase(it.members, phases), counts = countsText(a.counts, it.members.length);
      if (gp.key !== a.phase + counts) {
        gp.key = a.phase + counts;
        gp.summary.replaceChildren(h("b", {}, it.label), h("span", { class: "muted" }, it.kind + " group"), phaseBadge(a.phase || "NotStarted"), h("span", { class: "muted" }, counts));
      }
      gp.d.open = openGroups.has(it.group);
      if (!gp.d.open) { if (gp.list.childNodes.length) gp.list.replaceChildren(); gp.more.hidden = true; return gp.d; }
      const n = Math.min(it.members.length, shown.get(it.group) || PAGE);
      replaceIfChanged(gp.list, it.members.slice(0, n).map((m) => stepEl(m.name, m.kind, byName)));
      gp.more.hidden = n >= it.members.length;
      gp.more.textContent = "Showing " + n + " of " + it.members.length + " steps; more as you scroll.";
      return gp.d;
    }
    function stepPanel(n, kind, x) {
      const d = h("details", { class: "step", "data-step": n, open: open.has(n) });
      d.addEventListener("toggle", () => { if (d.open) open.add(n); else open.delete(n); });
      d.appendChild(h("summary", {}, h("b", {}, n), h("span", { class: "muted" }, kind), phaseBadge(x ? x.phase : "NotStarted"),
        x && x.attempts > 1 ? h("span", { class: "muted" }, "attempt " + x.attempts) : null,
        x ? h("span", { class: "muted" }, between(x.startedAt, x.finishedAt)) : null,
        x && x.reason ? h("span", { class: "muted" }, x.reason) : null,
        x && x.usage ? h("span", { class: "muted" }, x.usage.totalTokens + " tokens, " + x.usage.turns + " turns") : null));
      if (!x) { d.appendChild(h("p", { class: "muted" }, "Not started.")); return d; }
      if (x.message) d.appendChild(h("p", { class: "muted" }, x.message));
      if (x.instances) d.appendChild(instancesView(x.instances));
      if (x.output) {
        d.appendChild(h("div", { class: "muted" }, "Output (" + x.output.size + " bytes)" + (x.output.ref ? ", preview:" : ":")));
        d.appendChild(h("pre", { class: "output-preview" }, x.output.preview || ""));
      }
      const show = loaded.get(n);
      const actions = h("div", { class: "actions" });
      const load = (what, path) => async () => {
        try {
          const text = await api(nsPath("/runs/" + enc(name) + "/steps/" + enc(n) + path) + q);
          loaded.set(n, { what, text });
        } catch (e) { loaded.set(n, { what, error: e.message }); }
        drawSteps();
      };
      if (x.output && x.output.ref) actions.appendChild(h("button", { type: "button", onclick: load("output", "/output") }, "Full output"));
      if (x.podName) actions.appendChild(h("button", { type: "button", onclick: load("log", "/log") }, "Pod log"));
      if (x.transcript) actions.appendChild(h("button", { type: "button", class: "transcript", onclick: load("transcript", "/transcript") }, "Transcript"));
      if (x.childRun) actions.appendChild(h("a", { href: link("runs", x.childRun) }, "Child Run " + x.childRun));
      if (actions.childNodes.length) d.appendChild(actions);
      if (show) {
        if (show.error) d.appendChild(h("p", { class: "error", role: "alert" }, show.error));
        else if (show.what === "transcript") d.appendChild(renderTranscript(show.text));
        else d.appendChild(h("pre", { class: show.what }, show.text));
      }
      return d;
    }
    let gatesKey = null;
    function drawGates() {
      const gates = gatesOf().filter((g) => g.spec.runRef.name === name)
        .sort((a, b) => a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp));
      // Only a change of the Gates redraws them: a comment being typed survives Run updates,
      // and an open Gate's status settling.
      const key = gates.map(gateKey).join(",");
      if (key === gatesKey) return;
      gatesKey = key;
      // A chat step's Gates are its conversation, drawn as one; the others are the Gate log.
      const chat = gates.filter(isChatGate), others = gates.filter((g) => !isChatGate(g));
      gatesBox.replaceChildren(...(others.length ? others.map(gateCard) : [h("p", { class: "muted" }, data.gatesError || "No Gate yet.")]));
      chatGates = chat;
      chatHead.hidden = chatBox.hidden = chat.length === 0;
      chatBox.replaceChildren(...chat.flatMap((g, i) => [h("div", { class: "toolcalls", "data-before": i }), ...chatTurn(g)]),
        h("div", { class: "toolcalls", "data-before": chat.length }));
      callsKey = null;
      drawCalls();
    }
    // The agent's tool calls in a conversation: collapsed cards above the reply they led to,
    // read again when the step's checkpoint or transcript changes. Only the cards are
    // redrawn, so a message being typed survives.
    let callsKey = null, chatGates = [];
    async function drawCalls() {
      const chat = chatGates;
      if (!chat.length) return;
      const step = chat[0].spec.step, st = ((data.run.status || {}).steps || []).find((x) => x.name === step) || {};
      const key = step + "@" + (st.checkpointSHA256 || "") + "@" + ((st.transcript || {}).sha256 || "") + "@" + chat.length;
      if (key === callsKey) return;
      callsKey = key;
      let calls;
      try { calls = (await api(nsPath("/runs/" + enc(name) + "/steps/" + enc(step) + "/calls") + q)).calls; } catch (e) { return; }
      for (const box of chatBox.querySelectorAll(".toolcalls")) {
        const before = Number(box.dataset.before);
        box.replaceChildren(...calls.filter((c) => c.before === before).map(toolCallCard));
      }
    }
    function drawAll() {
      drawHead();
      if (!graph) {
        graph = drawGraph(data.graph, focusStep, focusGroup);
        graphBox.replaceChildren(...[data.graphError ? h("p", { class: "muted", id: "graph-error" }, data.graphError) : null, graph.el].filter(Boolean));
      }
      graph.colour((data.run.status || {}).steps);
      ganttBox.replaceChildren(drawGantt(data.run, graph.top));
      drawGates();
      drawCalls();
      drawSteps();
    }
    if (!data.archived) for (const g of data.gates || []) state.gates.set(g.metadata.name, g);
    drawAll();
    // Changes arriving together are drawn once, at the next frame.
    let pending = false;
    const schedule = () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; drawAll(); });
    };
    const view = {
      el,
      onChange(c) {
        if (data.archived) return; // the archive does not change
        if (c.kind === "Gate" && c.object.spec.runRef.name === name) drawGates();
      },
      close() { if (runStream) runStream.close(); },
      reload,
    };
    // follow reads the Run's own stream: its first event has every step, the next ones the
    // steps that changed.
    function follow() {
      runStream = new EventSource(nsPath("/runs/" + enc(name) + "/events"));
      runStream.addEventListener("run", (ev) => {
        const d = JSON.parse(ev.data);
        if (d.error) return; // the stream ends; the browser opens it again
        if (d.type === "DELETED") { head.replaceChildren(h("p", { class: "error" }, "This Run was deleted.")); runStream.close(); return; }
        const steps = new Map(d.full ? [] : ((data.run.status || {}).steps || []).map((x) => [x.name, x]));
        for (const x of d.steps || []) steps.set(x.name, x);
        for (const n of d.removed || []) steps.delete(n);
        data.run = d.run;
        streamed = true;
        const st = (data.run.status = data.run.status || {});
        st.steps = [...steps.values()];
        // A Run opened before it started has no snapshot yet: fetch it, and its graph, once it has.
        if (!data.graph.nodes.length && (st.sceneSnapshotRef || st.steps.length || st.phase)) { reload(); return; }
        schedule();
      });
    }
    // reload reads the Run's page again; the Run itself stays as its stream last said, which
    // may be newer than this answer.
    async function reload() {
      const nodes = data.graph.nodes.length, run = streamed ? data.run : null;
      data = await api(nsPath("/runs/" + enc(name)) + q);
      if (run) data.run = run;
      if (!data.archived) for (const g of data.gates || []) state.gates.set(g.metadata.name, g);
      if (data.graph.nodes.length !== nodes) graph = null;
      drawAll();
    }
    let runStream = null, streamed = false;
    if (!data.archived) follow();
    return view;
  }

  // renderTranscript shows an agent transcript: header, then each message by turn, with tool
  // calls and results. All of it as text.
  function renderTranscript(text) {
    let t;
    try { t = JSON.parse(text); } catch (e) { return h("pre", { class: "transcript" }, text); }
    const u = t.usage || {};
    const box = h("div", { class: "transcript" },
      h("p", {}, h("b", {}, "model " + t.model + ", " + t.outcome), t.message ? ": " + t.message : "",
        h("br"), u.turns + " turns, " + u.totalTokens + " tokens (" + u.promptTokens + " prompt, " + u.completionTokens + " completion), " +
        dur((Date.parse(t.finishedAt) - Date.parse(t.startedAt)) / 1000)));
    for (const e of t.entries || []) {
      const entry = h("div", { class: "entry " + e.role }, h("div", { class: "role" }, "turn " + e.turn + " · " + e.role +
        (e.role === "tool" ? " " + e.tool + (e.error ? " (error)" : "") : "") + (e.usage ? " · " + e.usage.totalTokens + " tokens, " + e.durationMS + " ms" : "")));
      if (e.content) entry.appendChild(h("pre", {}, e.content));
      for (const call of e.toolCalls || []) entry.appendChild(h("div", {}, "calls ", h("code", {}, call.name + "(" + call.arguments + ")")));
      if (e.truncated) entry.appendChild(h("div", { class: "muted" }, "cut from " + e.truncated + " bytes"));
      box.appendChild(entry);
    }
    return box;
  }

  // --- gates --------------------------------------------------------------------------
  // gateCard shows a Gate's question and, while it is pending, its options as buttons; the
  // decision goes to the API server as the viewer, and a refusal is shown as it came.
  function gateCard(g, withNamespace) {
    const st = g.status || {};
    const pending = !g.spec.decision && (!st.phase || st.phase === "Pending");
    const name = g.metadata.name, ns = g.metadata.namespace || state.ns;
    const runLink = "#/ns/" + enc(ns) + "/runs/" + enc(g.spec.runRef.name);
    const card = h("div", { class: "card gate", "data-gate": name, "data-namespace": ns },
      h("div", {}, withNamespace ? h("span", { class: "muted" }, ns + " · ") : null,
        h("b", {}, g.spec.step), " of Run ", h("a", { href: runLink }, g.spec.runRef.name), " ",
        phaseBadge(st.phase || "Pending", "gate"), h("span", { class: "muted" }, " asked " + ago(g.metadata.creationTimestamp))),
      h("div", { class: "question" }, g.spec.message || "(no question)"));
    if (st.values && !pending) card.appendChild(h("pre", { class: "answer" }, JSON.stringify(st.values, null, 2)));
    const min = g.spec.minApprovals || 1;
    if (min > 1) card.appendChild(h("div", { class: "muted" }, "Needs " + min + " approvals; votes: " +
      ((g.spec.approvals || []).map((a) => a.user + " " + a.option).join(", ") || "none")));
    if (st.phase === "Closed") {
      const c = (st.conditions || []).find((x) => x.type === "Decided");
      card.appendChild(h("div", { class: "decision" }, "Closed: " + (c ? c.message : "its Run ended before anyone decided")));
    } else if (g.spec.decision) {
      const d = g.spec.decision;
      card.appendChild(h("div", { class: "decision" }, h("b", { class: "decided-by" }, d.user || st.decidedBy || "?"), " chose ", h("b", {}, d.option),
        st.decidedAt ? " at " + stamp(st.decidedAt) : "", d.comment ? h("div", { class: "question" }, "“" + d.comment + "”") : null));
    } else if (st.phase && st.phase !== "Pending") {
      card.appendChild(h("div", { class: "decision" }, st.phase + " by " + (st.decidedBy || "?") + (st.decidedAt ? " at " + stamp(st.decidedAt) : "")));
    }
    if (pending && !state.me.readOnly) {
      const id = "comment-" + name;
      const form = g.spec.input ? inputForm(g.spec.input, name) : null;
      const comment = h("textarea", { id, class: "comment", placeholder: "Comment (optional)", maxlength: 4096 });
      const refusal = h("div", { class: "refusal", role: "alert", hidden: true });
      const buttons = (g.spec.options || ["approve", "reject"]).map((opt) => h("button", {
        type: "button", class: "decide " + (opt === "approve" ? "primary" : opt === "reject" ? "danger" : ""), "data-option": opt,
        onclick: async (ev) => {
          const all = card.querySelectorAll("button.decide");
          all.forEach((b) => { b.disabled = true; });
          refusal.hidden = true;
          if (form) form.clearErrors();
          const body = { option: opt, comment: comment.value };
          if (form && opt !== "reject") body.values = form.read();
          if (isChatGate(g) && opt !== "reject" && !body.values.end && !(body.values.message || "").trim()) {
            // An empty message would end the conversation: say so instead of sending it.
            refusal.textContent = "Write a message, or end the conversation.";
            refusal.hidden = false;
            all.forEach((b) => { b.disabled = false; });
            return;
          }
          try {
            const updated = await api("/api/namespaces/" + enc(ns) + "/gates/" + enc(name) + "/decide", "POST", body);
            if (ns === state.ns) state.gates.set(name, updated);
            card.replaceWith(gateCard(updated, withNamespace));
            toast("Gate " + name + ": " + (body.values ? "answered" : opt));
            refreshInbox();
          } catch (e) {
            refusal.textContent = e.message;
            refusal.hidden = false;
            if (form) form.showErrors(e.message);
            all.forEach((b) => { b.disabled = false; });
            ev.target.focus();
          }
        },
      }, isChatGate(g) ? (opt === "reject" ? "end" : "send") : g.spec.input && opt === "approve" ? "answer" : opt));
      if (form) card.appendChild(form.el);
      card.append(h("label", { for: id, class: "muted" }, "Comment"), comment, h("div", { class: "actions" }, ...buttons), refusal);
    }
    if (st.expiresAt && pending) card.appendChild(h("div", { class: "muted" }, "Decided by " + (g.spec.onTimeout || "timeout") + " " + ago(st.expiresAt)));
    return card;
  }

  // inputForm renders an input Gate's schema (internal/humaninput's subset of JSON Schema) as
  // a form: a field per property, by type and format, prefilled with defaults. read() gives
  // the values to send (empty optional fields left out, so their defaults apply); the
  // webhook checks them, and showErrors puts each of its field errors under its field.
  function inputForm(schema, key) {
    const fields = [];
    const el = h("fieldset", { class: "input-form" }, h("legend", {}, schema.title || "Your answer"));
    if (schema.description) el.appendChild(h("p", { class: "muted" }, schema.description));
    addProps(el, schema, "");
    function addProps(box, obj, prefix) {
      const required = obj.required || [];
      // The API server keeps a schema's properties in name order: required ones go first.
      const entries = Object.entries(obj.properties || {});
      entries.sort((a, b) => Number(required.includes(b[0])) - Number(required.includes(a[0])));
      for (const [name, f] of entries) {
        const path = prefix ? prefix + "." + name : name;
        if (f.type === "object") {
          const sub = h("fieldset", { class: "input-object", "data-path": path }, h("legend", {}, f.title || name));
          if (f.description) sub.appendChild(h("p", { class: "muted" }, f.description));
          addProps(sub, f, path);
          sub.appendChild(h("div", { class: "field-error", role: "alert", hidden: true }));
          box.appendChild(sub);
          continue;
        }
        box.appendChild(field(name, path, f, required.includes(name)));
      }
    }
    function field(name, path, f, required) {
      const id = "in-" + key + "-" + path;
      const def = f.default;
      let input, read;
      if (Array.isArray(f.enum)) {
        input = h("select", { id }, required && def !== undefined ? null : h("option", { value: "" }, "—"),
          ...f.enum.map((v) => h("option", { value: JSON.stringify(v), selected: def !== undefined && JSON.stringify(def) === JSON.stringify(v) }, String(v))));
        read = () => input.value === "" ? undefined : JSON.parse(input.value);
      } else if (f.type === "boolean") {
        input = h("input", { id, type: "checkbox", checked: def === true });
        read = () => input.checked;
      } else if (f.type === "number" || f.type === "integer") {
        input = h("input", { id, type: "number", step: f.type === "integer" ? "1" : "any", min: f.minimum, max: f.maximum,
          value: def !== undefined ? String(def) : null });
        read = () => input.value === "" ? undefined : (isNaN(Number(input.value)) ? input.value : Number(input.value));
      } else if (f.type === "array") {
        const scalar = f.items && ["string", "number", "integer", "boolean"].includes(f.items.type);
        input = h("textarea", { id, rows: 3, placeholder: scalar ? "one per line" : "JSON, as [ ... ]" });
        if (def !== undefined) input.value = scalar ? def.join("\n") : JSON.stringify(def);
        read = () => {
          const t = input.value.trim();
          if (t === "") return undefined;
          if (!scalar) { try { return JSON.parse(t); } catch (e) { return t; } }
          return t.split("\n").map((x) => x.trim()).filter((x) => x !== "").map((x) =>
            f.items.type === "string" ? x : f.items.type === "boolean" ? x === "true" : (isNaN(Number(x)) ? x : Number(x)));
        };
      } else if (f.format === "multiline") {
        input = h("textarea", { id, rows: 4, maxlength: f.maxLength });
        if (def !== undefined) input.value = def;
        read = () => input.value === "" && !required ? undefined : input.value;
      } else {
        const type = { date: "date", "date-time": "datetime-local", email: "email", uri: "url" }[f.format] || "text";
        input = h("input", { id, type, maxlength: f.maxLength, value: def !== undefined ? String(def) : null });
        read = () => {
          if (input.value === "" && !required) return undefined;
          // datetime-local is the viewer's local time: the answer is RFC 3339, in UTC.
          return type === "datetime-local" && input.value ? new Date(input.value).toISOString().replace(/\.\d{3}Z$/, "Z") : input.value;
        };
      }
      input.setAttribute("data-path", path);
      if (required) input.setAttribute("aria-required", "true");
      const error = h("div", { class: "field-error", role: "alert", hidden: true });
      fields.push({ path, read, error });
      return h("div", { class: "input-field", "data-field": path },
        h("label", { for: id }, (f.title || name) + (required ? " *" : "")),
        f.description ? h("div", { class: "muted" }, f.description) : null, input, error);
    }
    function read() {
      const values = {};
      for (const f of fields) {
        const v = f.read();
        if (v === undefined) continue;
        const parts = f.path.split(".");
        let o = values;
        for (const p of parts.slice(0, -1)) o = (o[p] = o[p] || {});
        o[parts[parts.length - 1]] = v;
      }
      return values;
    }
    // The webhook names fields as spec.decision.values.a.b[2] (or spec.approvals[i].values...).
    function showErrors(message) {
      const re = /spec\.(?:decision|approvals\[\d+\])\.values\.([A-Za-z0-9_.]+)(?:\[\d+\])*: ((?:(?!spec\.(?:decision|approvals)).)*)/g;
      let m;
      while ((m = re.exec(message)) !== null) {
        const detail = m[2].replace(/[\],\s]+$/, "");
        let path = m[1];
        let f = fields.find((x) => x.path === path);
        while (!f && path.includes(".")) { path = path.slice(0, path.lastIndexOf(".")); f = fields.find((x) => x.path === path); }
        const target = f ? f.error : null;
        if (target) { target.textContent = (target.hidden ? "" : target.textContent + "; ") + detail; target.hidden = false; }
      }
    }
    function clearErrors() { for (const f of fields) { f.error.hidden = true; f.error.textContent = ""; } }
    return { el, read, showErrors, clearErrors };
  }

  // gateKey says when a Gate's card must be drawn again: an open Gate's card is kept while it
  // stays open (its status settling must not wipe what a person is typing), a closed one's on
  // each change.
  const isOpenGate = (g) => !g.spec.decision && (!(g.status || {}).phase || g.status.phase === "Pending");
  const gateKey = (g) => (g.metadata.namespace || "") + "/" + g.metadata.name + "@" + (isOpenGate(g) ? "open" : g.metadata.resourceVersion);

  // A chat step's Gate shows the agent's reply and takes the next message (docs/human-input.md).
  const isChatGate = (g) => ((g.metadata.annotations || {})["agent.ergon.dev/conversation"] === "true");

  // toolCallCard is one tool call of a conversation, collapsed: its name, then, opened, its
  // arguments and result as text.
  function toolCallCard(c) {
    return h("details", { class: "toolcall" + (c.error ? " failed" : "") },
      h("summary", {}, "tool ", h("code", {}, c.name), c.done ? (c.error ? " · failed" : "") : " · waiting"),
      h("pre", { class: "args" }, c.arguments || "{}"), c.done ? h("pre", { class: "result" }, c.result || "") : null);
  }

  // chatTurn draws one exchange of a conversation: the agent's reply, then what a person
  // wrote (who, as the webhook stamped them), or the form to write it while it waits.
  function chatTurn(g) {
    const st = g.status || {};
    const pending = !g.spec.decision && (!st.phase || st.phase === "Pending");
    const out = [h("div", { class: "bubble agent" }, h("div", { class: "who" }, "agent · " + ago(g.metadata.creationTimestamp)),
      h("div", { class: "text" }, g.spec.message || ""))];
    if (pending) {
      out.push(gateCard(g));
      return out;
    }
    // The status has the values once the Gate controller saw the answer; the decision at once.
    const v = st.values || (g.spec.decision || {}).values || {};
    let text = typeof v.message === "string" ? v.message : "";
    if (st.phase === "TimedOut") text = "(nobody wrote in time: the conversation ended)";
    else if (st.phase === "Closed") text = "(the Run ended)";
    else if (st.phase === "Rejected" || v.end || !text) text = "(ended the conversation)";
    const who = st.decidedBy || (g.spec.decision || {}).user || "";
    out.push(h("div", { class: "bubble person" }, h("div", { class: "who" }, who + (st.decidedAt ? " · " + ago(st.decidedAt) : "")),
      h("div", { class: "text" }, text)));
    return out;
  }

  // inboxView lists what waits on the viewer in every namespace: questions to answer and
  // Gates to decide, oldest first.
  async function inboxView() {
    const el = h("section", {}, h("h1", {}, "Inbox"), h("p", { class: "muted" },
      "Questions and Gates waiting on you, in every namespace you may see."));
    const box = h("div", { id: "inbox" });
    el.appendChild(box);
    let key = null;
    function draw() {
      const items = state.inbox || [];
      // A card being filled in survives a refresh that changes nothing.
      const k = items.map(gateKey).join(",");
      if (k === key) return;
      key = k;
      box.replaceChildren(...(items.length ? items.map((g) => gateCard(g, true)) : [h("p", { class: "muted" }, "Nothing waits on you.")]));
    }
    state.inbox = (await api(inboxPath())).items;
    draw();
    return { el, onInbox: draw, reload: refreshInbox };
  }

  async function gatesView() {
    const el = h("section", {}, h("h1", {}, "Gates"));
    const pendingBox = h("div", { id: "pending-gates" }), doneBox = h("div");
    el.append(h("h2", {}, "Waiting for a decision"), pendingBox, h("h2", {}, "Decided"), doneBox);
    let drawn = null;
    function draw() {
      const all = [...state.gates.values()].sort((a, b) => b.metadata.creationTimestamp.localeCompare(a.metadata.creationTimestamp));
      const k = all.map(gateKey).join(",");
      if (k === drawn) return; // a comment or an answer being typed survives
      drawn = k;
      const p = all.filter(isOpenGate), d = all.filter((g) => !isOpenGate(g));
      pendingBox.replaceChildren(...(p.length ? p.map(gateCard) : [h("p", { class: "muted" }, "No Gate is waiting.")]));
      doneBox.replaceChildren(...(d.length ? d.slice(0, 50).map(gateCard) : [h("p", { class: "muted" }, "None yet.")]));
    }
    const list = await api(nsPath("/gates"));
    state.gates = new Map(list.items.map((g) => [g.metadata.name, g]));
    draw();
    return { el, onChange: (c) => { if (c.kind === "Gate") draw(); }, reload: async () => { const l = await api(nsPath("/gates")); state.gates = new Map(l.items.map((g) => [g.metadata.name, g])); draw(); } };
  }

  // --- scenes -------------------------------------------------------------------------
  async function scenesView() {
    const list = await api(nsPath("/scenes"));
    const rows = list.items.map((sc) => {
      const ready = ((sc.status || {}).conditions || []).find((c) => c.type === "Ready");
      return h("tr", {}, h("td", {}, h("a", { href: link("scenes", sc.metadata.name) }, sc.metadata.name)),
        h("td", { class: "hide-sm" }, sc.spec.description || ""),
        h("td", {}, String((sc.spec.steps || []).length)),
        h("td", {}, ready ? phaseBadge(ready.status === "True" ? "Ready" : ready.reason) : ""),
        h("td", { class: "hide-sm" }, ago(sc.metadata.creationTimestamp)));
    });
    return { el: h("section", {}, h("h1", {}, "Scenes"), h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Scene"), h("th", { class: "hide-sm" }, "Description"), h("th", {}, "Steps"), h("th", {}, "Ready"), h("th", { class: "hide-sm" }, "Age"))),
      h("tbody", {}, ...(rows.length ? rows : [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No Scenes in this namespace"))]))))) };
  }

  async function sceneView(name) {
    const data = await api(nsPath("/scenes/" + enc(name)));
    const sc = data.scene;
    const el = h("section", {}, h("h1", {}, "Scene ", name), sc.spec.description ? h("p", {}, sc.spec.description) : null);
    el.append(drawGraph(data.graph, null).el);
    if (!state.me.readOnly) {
      const err = h("p", { class: "error", role: "alert", hidden: true });
      const inputs = {};
      const fields = (sc.spec.params || []).map((p) => {
        const id = "param-" + p.name;
        if (p.valueFrom) return h("p", { class: "muted" }, p.name + ": from a Secret");
        inputs[p.name] = h("input", { id, name: p.name, placeholder: p.default !== undefined ? "default: " + p.default : "required", required: p.default === undefined });
        return h("label", { for: id }, h("b", {}, p.name), p.description ? h("span", { class: "muted" }, " " + p.description) : null, inputs[p.name]);
      });
      const form = h("form", { class: "params card", onsubmit: async (e) => {
        e.preventDefault();
        err.hidden = true;
        const params = {};
        for (const [k, i] of Object.entries(inputs)) params[k] = i.value;
        try {
          const run = await api(nsPath("/scenes/" + enc(name) + "/run"), "POST", { params });
          location.hash = link("runs", run.name);
        } catch (x) { err.textContent = x.message; err.hidden = false; }
      } }, h("h2", {}, "Start a Run"), ...fields, err, h("button", { class: "primary", type: "submit", id: "start" }, "Start"));
      el.appendChild(form);
    }
    const runs = [...state.runs.values()].filter((r) => r.scene === name).slice(0, 10);
    if (runs.length) el.append(h("h2", {}, "Recent Runs"), h("ul", {}, ...runs.map((r) => h("li", {}, h("a", { href: link("runs", r.name) }, r.name), " ", phaseBadge(r.phase)))));
    return { el };
  }

  // --- triggers -----------------------------------------------------------------------
  async function triggersView() {
    const body = h("tbody");
    const err = h("p", { class: "error", role: "alert", hidden: true });
    let items = (await api(nsPath("/triggers"))).items;
    const source = (t) => t.spec.schedule ? "cron " + t.spec.schedule.cron + (t.spec.schedule.timeZone ? " " + t.spec.schedule.timeZone : "")
      : t.spec.webhook ? "webhook " + ((t.status || {}).webhookPath || "") : t.spec.runCompleted ? "after " + t.spec.runCompleted.sceneRef.name : "";
    const act = (path, payload, what) => async () => {
      err.hidden = true;
      try {
        const res = await api(path, "POST", payload);
        if (res && res.name && res.phase !== undefined) toast("Started Run " + res.name);
        else toast(what);
        items = (await api(nsPath("/triggers"))).items;
        draw();
      } catch (e) { err.textContent = e.message; err.hidden = false; }
    };
    function draw() {
      body.replaceChildren(...items.map((t) => {
        const st = t.status || {}, suspended = !!t.spec.suspend, n = t.metadata.name;
        const last = st.lastRun ? state.runs.get(st.lastRun) : null;
        return h("tr", { "data-trigger": n },
          h("td", {}, h("b", {}, n), h("div", { class: "muted" }, source(t))),
          h("td", {}, h("a", { href: link("scenes", t.spec.sceneRef.name) }, t.spec.sceneRef.name)),
          h("td", { title: stamp(st.nextScheduleTime) }, suspended ? "suspended" : ago(st.nextScheduleTime)),
          h("td", { class: "hide-sm", title: stamp(st.lastScheduleTime) }, ago(st.lastScheduleTime)),
          h("td", {}, st.lastRun ? h("a", { href: link("runs", st.lastRun) }, st.lastRun) : "", last ? [" ", phaseBadge(last.phase)] : null),
          h("td", { class: "hide-sm" }, String(st.activeCount || 0)),
          h("td", {}, state.me.readOnly ? (suspended ? "suspended" : "") : h("div", { class: "actions" },
            h("button", { type: "button", class: "suspend", "aria-pressed": suspended ? "true" : "false",
              onclick: act(nsPath("/triggers/" + enc(n) + "/suspend"), { suspend: !suspended }, n + (suspended ? " resumed" : " suspended")) }, suspended ? "Resume" : "Suspend"),
            h("button", { type: "button", class: "run-now", onclick: act(nsPath("/triggers/" + enc(n) + "/run"), {}, "") }, "Run now"))));
      }));
      if (!items.length) body.appendChild(h("tr", {}, h("td", { colspan: 7, class: "muted" }, "No Triggers in this namespace")));
    }
    draw();
    const el = h("section", {}, h("h1", {}, "Triggers"), err, h("div", { class: "scroll" }, h("table", { id: "triggers" },
      h("thead", {}, h("tr", {}, h("th", {}, "Trigger"), h("th", {}, "Scene"), h("th", {}, "Next"), h("th", { class: "hide-sm" }, "Last"),
        h("th", {}, "Last Run"), h("th", { class: "hide-sm" }, "Active"), h("th", {}, ""))), body)));
    return { el, onChange: (c) => { if (c.kind === "Trigger") { const i = items.findIndex((t) => t.metadata.name === c.object.metadata.name);
      if (c.type === "DELETED") { if (i >= 0) items.splice(i, 1); } else if (i >= 0) items[i] = c.object; else items.push(c.object); draw(); } else if (c.kind === "Run") draw(); } };
  }

  // --- workspaces ---------------------------------------------------------------------
  async function workspacesView() {
    const list = await api(nsPath("/workspaces"));
    const rows = list.items.map((w) => {
      const st = w.status || {};
      return h("tr", {}, h("td", {}, w.metadata.name), h("td", {}, w.spec.user), h("td", {}, phaseBadge(st.phase || "Pending")),
        h("td", { class: "hide-sm" }, (st.claimName || "") + " " + ((w.spec.storage || {}).size || "")),
        h("td", { title: stamp(st.lastActivityTime) }, ago(st.lastActivityTime)));
    });
    return { el: h("section", {}, h("h1", {}, "Workspaces"), h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "Workspace"), h("th", {}, "User"), h("th", {}, "Phase"), h("th", { class: "hide-sm" }, "Volume"), h("th", {}, "Last activity"))),
      h("tbody", {}, ...(rows.length ? rows : [h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No Workspaces in this namespace"))]))))) };
  }

  // --- start --------------------------------------------------------------------------
  async function start() {
    try {
      state.me = await api("/api/me");
    } catch (e) {
      if (e.status === 401) return showLogin();
      $("main").replaceChildren(h("p", { class: "error", role: "alert" }, e.message));
      return;
    }
    $("top").hidden = false;
    $("who").textContent = state.me.user + (state.me.readOnly ? " (read-only)" : "");
    $("who").title = state.me.user;
    $("logout").hidden = state.me.readOnly || state.me.mode !== "token";
    try {
      const ns = await api("/api/namespaces");
      const sel = $("ns");
      sel.replaceChildren(...ns.namespaces.map((n) => h("option", { value: n }, n)));
      if (!ns.canList) { sel.hidden = true; $("ns-input").hidden = false; }
    } catch (e) { toast(e.message); }
    if (!location.hash) location.hash = "#/ns/" + enc(state.me.defaultNamespace || "default") + "/runs";
    await render();
  }
  function changeNamespace(ns) {
    const r = route();
    location.hash = "#/ns/" + enc(ns) + "/" + r.view;
  }
  document.addEventListener("DOMContentLoaded", () => {
    $("ns").addEventListener("change", (e) => changeNamespace(e.target.value));
    $("ns-input").addEventListener("change", (e) => changeNamespace(e.target.value.trim()));
    $("logout").addEventListener("click", async () => {
      try { await api("/api/logout", "POST", {}); } catch (e) { /* gone anyway */ }
      if (state.es) state.es.close();
      state.me = null;
      showLogin();
    });
    window.addEventListener("hashchange", () => { if (state.me) render(); });
    start();
  });
})();
