// Progressive enhancement for Steward's pages. Every page works without this script; with it:
// - a run's timeline follows the run live (Server-Sent Events): streamed model text is
//   appended as it arrives, and after every other event the server's own rendering of the
//   timeline (GET /runs/{id}/timeline) replaces the entries that changed;
// - a waiting approval cannot be missed: the tab title and icon say so, screen readers are
//   told, the page scrolls to it, and `a` / `d` approve or deny it from the keyboard;
// - countdowns, elapsed times and local clock times tick; forms act without a reload.
// Text from runs only ever reaches the page as text (textContent) or as the server's escaped
// HTML; nothing here builds markup from a model's or a tool's words.
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  if (!box) return;
  box.textContent = message;
  box.hidden = false;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  let data = {};
  try { data = await response.json(); } catch (_) { /* empty body */ }
  if (!response.ok) {
    const e = data.error || { class: "error", message: response.statusText };
    throw new Error(`${e.class}: ${e.message}`);
  }
  return data;
}

// The server's HTML for a part of the page, parsed inert (a <template> runs nothing).
async function fragment(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
  const template = document.createElement("template");
  template.innerHTML = await response.text();
  return template.content;
}

// Makes `oldParent`'s keyed children (data-key) those of `newParent`, in its order: a child
// whose data-rev is unchanged is kept as it is (focus, open details and typed input survive),
// one marked data-morph-children is updated child by child, any other is replaced.
function morph(oldParent, newParent) {
  const olds = new Map();
  for (const child of [...oldParent.children]) {
    if (child.dataset.key) olds.set(child.dataset.key, child);
  }
  let prev = null;
  for (const fresh of [...newParent.children]) {
    const key = fresh.dataset.key;
    const old = key ? olds.get(key) : null;
    let keep = fresh;
    if (old && fresh.hasAttribute("data-morph-children")) {
      morph(old, fresh);
      keep = old;
    } else if (old && old.dataset.rev === fresh.dataset.rev) {
      keep = old;
    }
    if (key) olds.delete(key);
    if (old && keep !== old) old.remove();
    const want = prev ? prev.nextSibling : oldParent.firstChild;
    if (keep !== want) oldParent.insertBefore(keep, want);
    prev = keep;
  }
  for (const old of olds.values()) old.remove();
}

// ---- times -----------------------------------------------------------------------------------
function minutesSeconds(seconds) {
  return `${String(Math.floor(seconds / 60)).padStart(2, "0")}:${String(seconds % 60).padStart(2, "0")}`;
}

function secondsLeft(expiresAt) {
  return Math.max(0, Math.floor((Date.parse(expiresAt) - Date.now()) / 1000));
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
function ago(date) {
  const s = Math.round((date.getTime() - Date.now()) / 1000);
  const abs = Math.abs(s);
  if (abs < 60) return relative.format(s, "second");
  if (abs < 3600) return relative.format(Math.round(s / 60), "minute");
  if (abs < 86400) return relative.format(Math.round(s / 3600), "hour");
  return relative.format(Math.round(s / 86400), "day");
}

function localTimes(root) {
  root.querySelectorAll("time.clock[datetime]").forEach((t) => {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) { t.textContent = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }); t.title = d.toLocaleString(); }
  });
  root.querySelectorAll("time.ago[datetime]").forEach((t) => {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) { t.textContent = ago(d); t.title = d.toLocaleString(); }
  });
}

function tick() {
  document.querySelectorAll('.approval[data-state="pending"]').forEach((node) => {
    const left = secondsLeft(node.dataset.expiresAt);
    const countdown = node.querySelector(".countdown");
    if (countdown) countdown.textContent = minutesSeconds(left);
    if (left <= 0) setApprovalState(node, "expired");
  });
  document.querySelectorAll('.elicitation[data-state="pending"]').forEach((node) => {
    const left = secondsLeft(node.dataset.expiresAt);
    node.querySelector(".countdown").textContent = minutesSeconds(left);
    if (left <= 0) setElicitationState(node, "expired");
  });
  document.querySelectorAll('.progress[data-ended="false"][data-started-at]').forEach((p) => {
    const started = Date.parse(p.dataset.startedAt);
    if (isNaN(started)) return;
    const s = Math.max(0, Math.floor((Date.now() - started) / 1000));
    const elapsed = p.querySelector(".elapsed");
    // The format of the server's rendering (pages/timeline.rs, elapsed_words).
    if (elapsed) elapsed.textContent = s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
  });
}

// ---- approvals ---------------------------------------------------------------------------------
function setApprovalState(node, state) {
  if (!node) return;
  node.dataset.state = state;
  const shown = node.querySelector(".approval-state");
  if (shown) shown.textContent = state;
  if (state !== "pending") {
    node.querySelectorAll("button, select").forEach((b) => { b.disabled = true; });
    node.querySelector(".time-left")?.remove();
    node.querySelector(".keys")?.remove();
  }
  attention();
}

function setElicitationState(node, state) {
  if (!node) return;
  node.dataset.state = state.startsWith("answered") ? "answered" : state;
  node.querySelector(".elicitation-state").textContent = state;
  node.querySelectorAll("button, input, select").forEach((b) => { b.disabled = true; });
  node.querySelector(".time-left")?.remove();
}

async function decide(form, decision) {
  const node = form.closest(".approval");
  node.querySelectorAll("button").forEach((b) => { b.disabled = true; });
  try {
    const body = { decision, scope: form.elements.scope?.value || "once" };
    // The hash of the call this page showed: the run refuses the approval for any other call.
    if (form.elements.call_hash) body.call_hash = form.elements.call_hash.value;
    const answer = await api("POST", `/api/approvals/${node.dataset.approvalId}`, body);
    setApprovalState(node, answer.status);
    announce(`${answer.status === "approved" ? "Approved" : "Denied"}.`);
  } catch (e) {
    showError(e.message);
    if (/^expired/.test(e.message)) setApprovalState(node, "expired");
    else if (node.dataset.state === "pending") node.querySelectorAll("button").forEach((b) => { b.disabled = false; });
  }
  const wrap = node.closest("[data-timeline-run]");
  if (wrap) followers.get(wrap)?.refresh();
}

document.addEventListener("submit", (ev) => {
  const form = ev.target;
  if (form.matches("form.decide")) {
    ev.preventDefault();
    decide(form, ev.submitter?.value || "approve");
  }
});

// `a` approves and `d` denies the waiting approval that holds the focus, or the first one on the
// page when nothing holds it; keys typed into a field or pressed elsewhere are left alone.
document.addEventListener("keydown", (ev) => {
  if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.repeat) return;
  const key = ev.key.toLowerCase();
  if (key !== "a" && key !== "d") return;
  const target = ev.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) return;
  const focused = target.closest?.('.approval[data-state="pending"]');
  // Only the question that holds the focus, or the first one when nothing holds it: a key
  // pressed on a link or a button elsewhere answers nothing.
  if (!focused && target !== document.body && target !== document.documentElement) return;
  const node = focused || document.querySelector('.approval[data-state="pending"]');
  const form = node?.querySelector("form.decide");
  if (!form) return;
  // A question that has only just appeared is not answered by a key meant for something else.
  if (Date.now() - Number(node.dataset.shownAt || 0) < KEY_DELAY_MS) return;
  ev.preventDefault();
  decide(form, key === "a" ? "approve" : "deny");
});

// ---- attention: title, icon, announcements -----------------------------------------------------
const baseTitle = document.title.replace(/^(\(\d+\) )?Waiting for you · /, "");
const announced = new Set();
let lastPending = -1;
const shownAt = new Map();
// How long a question is on the page before `a` / `d` answer it.
const KEY_DELAY_MS = 800;
const statuses = new WeakMap();

function announce(text) {
  const box = document.getElementById("announce");
  if (!box) return;
  box.textContent = "";
  // A new text node, a moment later, so that the same words are read again.
  setTimeout(() => { box.textContent = text; }, 50);
}

function attention() {
  const pending = [...document.querySelectorAll('.approval[data-state="pending"]')];
  document.title = pending.length ? `(${pending.length}) Waiting for you · ${baseTitle}` : baseTitle;
  const icon = document.querySelector('link[rel="icon"]');
  if (icon) icon.href = pending.length ? "/static/icon-waiting.svg" : "/static/icon.svg";
  const fresh = pending.filter((p) => !announced.has(p.dataset.approvalId));
  fresh.forEach((p) => announced.add(p.dataset.approvalId));
  // When each question was first shown (kept across re-renders of its step).
  pending.forEach((p) => {
    if (!shownAt.has(p.dataset.approvalId)) shownAt.set(p.dataset.approvalId, Date.now());
    p.dataset.shownAt = String(shownAt.get(p.dataset.approvalId));
  });
  if (fresh.length) {
    const first = fresh[0];
    const tool = first.closest(".step")?.querySelector(".tool-name")?.textContent || "a tool";
    const typing = document.activeElement?.matches?.("input, textarea, select");
    announce(`Steward asks you: run ${tool}? ${typing ? "Press Escape, then" : "Press"} a to approve or d to deny.`);
    first.scrollIntoView({ block: "center", behavior: "smooth" });
    // The focus moves to the question only when nothing else has it: a key typed into a
    // field, or pressed after a click elsewhere, must never answer it.
    const active = document.activeElement;
    if (!active || active === document.body) { first.setAttribute("tabindex", "-1"); first.focus({ preventScroll: true }); }
  }
  if (pending.length !== lastPending) { lastPending = pending.length; refreshWaiting(); }
  document.querySelectorAll(".run-status").forEach((s) => {
    const text = s.textContent.trim();
    const before = statuses.get(s);
    if (before !== undefined && before !== text && text !== "waiting for you") announce(`Run ${text}.`);
    statuses.set(s, text);
  });
}

// ---- a run's timeline, followed live -------------------------------------------------------------
const followers = new Map();
const LIVE_EVENTS = ["run_started", "stage_started", "stage_chunk", "stage_completed", "stage_failed", "tool_requested",
  "tool_denied", "tool_approval_required", "tool_approved", "tool_rejected", "tool_approval_expired", "tool_started",
  "tool_completed", "tool_failed", "tool_call_repeated", "patch_proposed", "patch_applied", "mcp_elicitation_requested",
  "mcp_elicitation_answered", "context_retrieved", "prompt_fitted", "run_tainted", "run_completed", "run_failed", "run_cancelled"];
const END_EVENTS = ["run_completed", "run_failed", "run_cancelled"];

function follow(wrap) {
  if (followers.has(wrap) || wrap.dataset.ended === "true") return;
  const runId = wrap.dataset.timelineRun;
  const source = new EventSource(`/api/runs/${runId}/events?after=${wrap.dataset.lastSeq || 0}`);
  const chunks = []; // streamed text not yet in the server's rendering: {seq, stage, text}
  let fetching = false;
  let again = false;

  function streamingText(stage, seq) {
    const all = wrap.querySelectorAll(`.model-text.streaming[data-stage="${CSS.escape(stage)}"] .stage-text`);
    if (all.length) return all[all.length - 1];
    const text = el("div", { class: "md stage-text" });
    const entry = el("li", { class: "entry entry-text", "data-key": `tmp${seq}`, "data-rev": "" },
      el("div", { class: "model-text streaming", "data-stage": stage }, text));
    wrap.querySelector("ol.timeline")?.append(entry);
    return text;
  }

  async function refresh() {
    if (fetching) { again = true; return; }
    fetching = true;
    try {
      const content = await fragment(`/runs/${runId}/timeline`);
      const fresh = content.querySelector("[data-timeline-run]");
      if (fresh && wrap.isConnected) {
        morph(wrap, fresh);
        for (const name of ["lastSeq", "ended", "waiting"]) wrap.dataset[name] = fresh.dataset[name];
        const seen = Number(fresh.dataset.lastSeq || 0);
        for (const c of chunks.splice(0)) {
          if (c.seq > seen) { chunks.push(c); streamingText(c.stage, c.seq).append(c.text); }
        }
        changed(wrap);
      }
    } catch (e) {
      showError(e.message);
    } finally {
      fetching = false;
      if (again) { again = false; refresh(); }
    }
  }

  for (const name of LIVE_EVENTS) {
    source.addEventListener(name, (msg) => {
      if (!wrap.isConnected) { source.close(); followers.delete(wrap); return; }
      if (name === "stage_chunk") {
        const e = JSON.parse(msg.data);
        const c = { seq: Number(msg.lastEventId), stage: e.stage, text: e.text };
        chunks.push(c);
        streamingText(c.stage, c.seq).append(c.text);
        return;
      }
      if (name === "mcp_elicitation_requested" && document.getElementById("run")) {
        // The page renders the server's form for a request for input.
        location.reload();
        return;
      }
      if (END_EVENTS.includes(name)) { source.close(); followers.delete(wrap); endRun(); }
      refresh();
    });
  }
  followers.set(wrap, { refresh, source });
}

function endRun() {
  const cancel = document.getElementById("cancel");
  if (cancel) cancel.disabled = true;
  document.querySelectorAll('.elicitation[data-state="pending"]').forEach((n) => setElicitationState(n, "closed"));
}

// After a timeline changed: the compare page's counts, local times, and attention.
function changed(wrap) {
  const column = wrap.closest(".compare-run");
  if (column) {
    column.querySelector(".calls").textContent = String(wrap.querySelectorAll(".entry-call").length);
    column.querySelector(".refused").textContent = String(wrap.querySelectorAll(".step.tone-bad").length);
    const tokens = wrap.querySelector(".tokens");
    if (tokens) column.querySelector(".tokens-total").textContent = tokens.textContent;
  }
  localTimes(wrap);
  attention();
}

function followAll() {
  document.querySelectorAll("[data-timeline-run]").forEach(follow);
  for (const [wrap, f] of followers) {
    if (!wrap.isConnected) { f.source.close(); followers.delete(wrap); }
  }
}

// ---- run page ----------------------------------------------------------------------------------
function runPage(root) {
  document.getElementById("cancel-form")?.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const cancel = document.getElementById("cancel");
    cancel.disabled = true;
    try { await api("POST", `/api/runs/${root.dataset.runId}/cancel`); } catch (e) { showError(e.message); }
  });
}

// ---- navigation badge and runs list, refetched -------------------------------------------------
async function refreshWaiting() {
  const badge = document.getElementById("nav-waiting");
  if (!badge || document.hidden) return;
  try {
    const content = await fragment("/runs/waiting");
    badge.replaceChildren(...content.childNodes);
  } catch (_) { /* the next round tries again */ }
}

async function refreshRuns(list) {
  if (document.hidden) return;
  try {
    const content = await fragment("/runs/list");
    const fresh = content.querySelector("#runs");
    if (fresh) { morph(list, fresh); localTimes(list); }
    const empty = list.parentElement?.querySelector(".empty");
    if (empty && list.children.length) empty.remove();
  } catch (_) { /* the next round tries again */ }
}

// ---- memory --------------------------------------------------------------------------------------
function memoryView(list) {
  function render(facts) {
    list.replaceChildren(...facts.map((f, i) => {
      const button = el("button", { class: "forget", type: "submit", "aria-label": `Forget fact ${i + 1}`, text: "Forget" });
      const form = el("form", { class: "forget-form", method: "post", action: `/memory/${f.id}/forget` },
        el("input", { type: "hidden", name: "csrf", value: csrf }), button);
      enhanceForget(form, f.id);
      return el("li", { "data-fact-id": f.id }, el("span", { class: "fact-text", text: f.text }), " ", form);
    }));
  }
  function enhanceForget(form, id) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try { await api("DELETE", `/api/memory/${id}`); } catch (e) { showError(e.message); }
    });
  }
  list.querySelectorAll("li[data-fact-id]").forEach((li) => enhanceForget(li.querySelector("form"), li.dataset.factId));
  const form = document.getElementById("fact-form");
  form?.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const input = document.getElementById("fact-text");
    try {
      await api("POST", "/api/memory", { text: input.value });
      input.value = "";
    } catch (e) { showError(e.message); }
  });
  const source = new EventSource("/api/memory/events");
  source.addEventListener("facts", (msg) => render(JSON.parse(msg.data).facts));
}

// ---- conversations -------------------------------------------------------------------------------
function conversationView(root) {
  const id = root.dataset.conversationId;
  const state = document.getElementById("conversation-state");
  const input = document.getElementById("message");
  const send = document.getElementById("send");
  const form = document.getElementById("message-form");

  async function refreshTurns() {
    try {
      const content = await fragment(`/conversations/${id}/turns`);
      const fresh = content.querySelector("#turns");
      const list = document.getElementById("turns");
      if (fresh && list) { morph(list, fresh); followAll(); localTimes(list); attention(); }
    } catch (e) { showError(e.message); }
  }

  const source = new EventSource(`/api/conversations/${id}/events`);
  source.addEventListener("conversation", (msg) => {
    const view = JSON.parse(msg.data);
    root.dataset.ended = String(view.ended);
    state.textContent = view.ended ? "ended" : view.busy ? "working" : "ready";
    input.disabled = view.ended;
    send.disabled = view.ended;
    document.getElementById("end").disabled = view.ended;
    refreshTurns();
  });

  // Enter sends, Shift+Enter starts a new line; Escape goes to the question waiting for you.
  input.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") {
      const waiting = document.querySelector('.approval[data-state="pending"]');
      if (waiting) { ev.preventDefault(); waiting.setAttribute("tabindex", "-1"); waiting.focus(); }
      return;
    }
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!input.value.trim()) return;
    send.disabled = true;
    try {
      await api("POST", `/api/conversations/${id}/messages`, { text: input.value });
      input.value = "";
      document.getElementById("error").hidden = true;
    } catch (e) {
      showError(e.message); // the text stays in the box
    } finally {
      send.disabled = root.dataset.ended === "true";
    }
  });
  document.getElementById("end-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try { await api("POST", `/api/conversations/${id}/end`); } catch (e) { showError(e.message); }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const conversation = document.getElementById("conversation");
  if (conversation) conversationView(conversation);
  const run = document.getElementById("run");
  if (run) runPage(run);
  const facts = document.getElementById("facts");
  if (facts) memoryView(facts);
  const runs = document.getElementById("runs");
  if (runs) {
    // Every 3 s while a listed run is still going, every 15 s otherwise (a run started
    // elsewhere then shows up within that): the list is read from the whole run table.
    let last = 0;
    setInterval(() => {
      const live = runs.querySelector('.run-row[data-status="queued"], .run-row[data-status="running"]');
      if (Date.now() - last >= (live ? 3000 : 15000)) { last = Date.now(); refreshRuns(runs); }
    }, 1000);
  }
  followAll();
  localTimes(document);
  attention();
  refreshWaiting();
  setInterval(refreshWaiting, 4000);
  setInterval(tick, 1000);
  tick();
});
