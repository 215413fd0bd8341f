// Progressive enhancement for Steward's pages: live run events over Server-Sent Events,
// approval countdowns, and forms that act without a page reload. Every page works without
// this script. All text from runs is inserted as text (textContent), never as markup.
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

// ---- run view ------------------------------------------------------------------------------
function runView(root) {
  const runId = root.dataset.runId;
  const status = document.getElementById("run-status");
  const cancel = document.getElementById("cancel");
  let ended = root.dataset.ended === "true";

  function approvalNode(id) {
    return root.querySelector(`.approval[data-approval-id="${CSS.escape(id)}"]`);
  }

  function setApprovalState(node, state) {
    if (!node) return;
    node.dataset.state = state;
    node.querySelector(".approval-state").textContent = state;
    if (state !== "pending") {
      node.querySelectorAll("button, select").forEach((b) => { b.disabled = true; });
      node.querySelector(".time-left")?.remove();
    }
  }

  function elicitationNode(id) {
    return root.querySelector(`.elicitation[data-elicitation-id="${CSS.escape(id)}"]`);
  }

  function setElicitationState(node, state) {
    if (!node) return;
    node.dataset.state = state.startsWith("answered") ? "answered" : state;
    node.querySelector(".elicitation-state").textContent = state;
    node.querySelectorAll("button, input, select").forEach((b) => { b.disabled = true; });
    node.querySelector(".time-left")?.remove();
  }

  function endRun(text) {
    ended = true;
    root.dataset.ended = "true";
    status.textContent = text;
    if (cancel) cancel.disabled = true;
    root.querySelectorAll('.approval[data-state="pending"]').forEach((n) => setApprovalState(n, "closed"));
    root.querySelectorAll('.elicitation[data-state="pending"]').forEach((n) => setElicitationState(n, "closed"));
  }

  function stageText(stage) {
    let section = root.querySelector(`.stage[data-stage="${CSS.escape(stage)}"]`);
    if (!section) {
      section = el("section", { class: "stage", "data-stage": stage }, el("h3", { text: stage }), el("pre", { class: "stage-text" }));
      document.getElementById("stages").append(section);
    }
    return section.querySelector(".stage-text");
  }

  // Call ids may repeat across rounds (recovered calls, a repeated call): the latest one counts.
  function callNode(id) {
    const all = root.querySelectorAll(`.tool-call[data-call-id="${CSS.escape(id)}"]`);
    return all.length ? all[all.length - 1] : null;
  }

  function setCall(id, decision, rule, detail) {
    const node = callNode(id);
    if (!node) return;
    node.querySelector(".decision").textContent = decision;
    if (rule) {
      let r = node.querySelector(".rule");
      if (!r) { r = el("small", { class: "rule" }); node.querySelector(".decision").after(" ", r); }
      r.replaceChildren("rule ", el("code", { text: rule }));
    }
    if (detail) {
      let d = node.querySelector(".tool-detail");
      if (!d) { d = el("pre", { class: "tool-detail" }); node.append(d); }
      d.textContent = detail;
    }
  }

  function addApproval(e) {
    if (approvalNode(e.approval_id)) return;
    const form = el("form", { class: "decide", method: "post", action: `/approvals/${e.approval_id}` },
      el("input", { type: "hidden", name: "csrf", value: csrf }),
      el("input", { type: "hidden", name: "run", value: runId }),
      el("label", { for: `scope-${e.approval_id}`, text: "Remember" }),
      el("select", { id: `scope-${e.approval_id}`, name: "scope" },
        el("option", { value: "once", text: "this call only" }),
        el("option", { value: "run", text: "for this run" }),
        el("option", { value: "workspace", text: "in this workspace" })),
      el("button", { class: "approve", name: "decision", value: "approve", text: "Approve" }),
      el("button", { class: "deny", name: "decision", value: "deny", text: "Deny" }));
    const node = el("div", { class: "approval", "data-approval-id": e.approval_id, "data-expires-at": e.expires_at, "data-state": "pending" },
      el("h3", {}, el("span", { class: "approval-tool", text: e.tool }), " ",
        el("small", {}, "risk ", el("span", { class: "approval-risk", text: Number(e.risk).toFixed(2) }), " · rule ", el("code", { text: e.rule }))),
      el("p", { class: "approval-reason", text: e.reason }),
      el("pre", { class: "approval-args", text: JSON.stringify(e.arguments, null, 2) }));
    if (e.preview) node.append(el("pre", { class: "approval-preview", text: e.preview }));
    node.append(el("p", {}, "State: ", el("strong", { class: "approval-state", text: "pending" }),
      el("span", { class: "time-left" }, " · ",
        el("span", { class: "countdown", "aria-live": "off", text: minutesSeconds(secondsLeft(e.expires_at)) }), " left")), form);
    document.getElementById("approvals").append(node);
    enhanceDecideForm(form);
  }

  function apply(event) {
    // Any event of a run that was shown as queued means it has started.
    if (status.textContent === "queued" && !/^run_(completed|failed|cancelled)$/.test(event.event)) {
      status.textContent = "running";
      document.getElementById("queue-position")?.remove();
    }
    switch (event.event) {
      case "run_started": status.textContent = "running"; document.getElementById("queue-position")?.remove(); break;
      case "stage_started": {
        const text = stageText(event.stage);
        if (text.textContent && !text.textContent.endsWith("\n")) text.append("\n");
        break;
      }
      case "stage_chunk": stageText(event.stage).append(event.text); break;
      case "tool_requested":
        if (!callNode(event.call_id) || callNode(event.call_id).querySelector(".decision").textContent !== "requested") {
          document.getElementById("tool-calls").append(el("li", { class: "tool-call", "data-call-id": event.call_id },
            el("code", { class: "tool-name", text: event.tool }), " ", el("span", { class: "decision", text: "requested" }),
            el("pre", { class: "tool-args", text: JSON.stringify(event.arguments, null, 2) })));
        }
        break;
      case "tool_denied": setCall(event.call_id, "denied", event.rule, event.reason); break;
      case "tool_approval_required": setCall(event.call_id, "approval required", event.rule); addApproval(event); break;
      case "tool_approved": setCall(event.call_id, "approved"); setApprovalState(approvalNode(event.approval_id), "approved"); break;
      case "tool_rejected": setCall(event.call_id, "rejected", null, event.reason); setApprovalState(approvalNode(event.approval_id), "denied"); break;
      case "tool_approval_expired": setCall(event.call_id, "expired"); setApprovalState(approvalNode(event.approval_id), "expired"); break;
      // The page renders the server's form (and keeps working without this script).
      case "mcp_elicitation_requested":
        setCall(event.call_id, "waiting for input");
        if (!elicitationNode(event.elicitation_id)) location.reload();
        break;
      case "mcp_elicitation_answered":
        setCall(event.call_id, "running");
        setElicitationState(elicitationNode(event.elicitation_id), `answered: ${event.action}`);
        break;
      case "tool_started": setCall(event.call_id, "running", event.allowed_by || null); break;
      case "tool_completed":
        setCall(event.call_id, "completed", null, event.hook_output ? `${event.output}\n\n${event.hook_output}` : event.output);
        break;
      case "tool_failed": setCall(event.call_id, "failed", null, event.error); break;
      case "tool_call_repeated":
        setCall(event.call_id, event.answered_from_record ? "answered from the record" : "repeat, not run", event.rule || null, event.message);
        break;
      case "run_completed": document.getElementById("final").textContent = event.final; endRun("completed"); break;
      case "run_failed": document.getElementById("final").textContent = `failed (${event.class}): ${event.error}`; endRun("failed"); break;
      case "run_cancelled": document.getElementById("final").textContent = `cancelled: ${event.reason}`; endRun("cancelled"); break;
    }
  }

  function secondsLeft(expiresAt) {
    return Math.max(0, Math.floor((Date.parse(expiresAt) - Date.now()) / 1000));
  }

  // `MM:SS`, as the page renders it and the terminal prompt shows it.
  function minutesSeconds(seconds) {
    return `${String(Math.floor(seconds / 60)).padStart(2, "0")}:${String(seconds % 60).padStart(2, "0")}`;
  }

  function tick() {
    root.querySelectorAll('.approval[data-state="pending"]').forEach((node) => {
      const left = secondsLeft(node.dataset.expiresAt);
      node.querySelector(".countdown").textContent = minutesSeconds(left);
      if (left <= 0) setApprovalState(node, "expired");
    });
    root.querySelectorAll('.elicitation[data-state="pending"]').forEach((node) => {
      const left = secondsLeft(node.dataset.expiresAt);
      node.querySelector(".countdown").textContent = minutesSeconds(left);
      if (left <= 0) setElicitationState(node, "expired");
    });
  }
  setInterval(tick, 1000);
  tick();

  function enhanceDecideForm(form) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const decision = ev.submitter?.value || "approve";
      const node = form.closest(".approval");
      node.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      try {
        const body = { decision, scope: form.elements.scope.value };
        // The hash of the call this page showed: the run refuses the approval for any other call.
        if (form.elements.call_hash) body.call_hash = form.elements.call_hash.value;
        const answer = await api("POST", `/api/approvals/${node.dataset.approvalId}`, body);
        setApprovalState(node, answer.status);
      } catch (e) {
        showError(e.message);
        if (/^expired/.test(e.message)) setApprovalState(node, "expired");
        else if (node.dataset.state === "pending" && !ended) node.querySelectorAll("button").forEach((b) => { b.disabled = false; });
      }
    });
  }
  root.querySelectorAll("form.decide").forEach(enhanceDecideForm);

  document.getElementById("cancel-form")?.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    cancel.disabled = true;
    try { await api("POST", `/api/runs/${runId}/cancel`); } catch (e) { showError(e.message); }
  });

  if (!ended) {
    const source = new EventSource(`/api/runs/${runId}/events?after=${root.dataset.lastSeq || 0}`);
    const names = ["run_started", "stage_started", "stage_chunk", "stage_completed", "stage_failed", "tool_requested",
      "tool_denied", "tool_approval_required", "tool_approved", "tool_rejected", "tool_approval_expired", "tool_started",
      "tool_completed", "tool_failed", "tool_call_repeated", "patch_proposed", "patch_applied", "mcp_elicitation_requested",
      "mcp_elicitation_answered", "run_completed", "run_failed", "run_cancelled"];
    for (const name of names) {
      source.addEventListener(name, (msg) => {
        const event = JSON.parse(msg.data);
        apply(Object.assign({}, event, event.kind || {}, { event: name }));
        root.dataset.lastSeq = msg.lastEventId;
        if (name === "run_completed" || name === "run_failed" || name === "run_cancelled") source.close();
      });
    }
  }
}

// ---- memory --------------------------------------------------------------------------------
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

// ---- side by side --------------------------------------------------------------------------
function compareView(section) {
  if (section.dataset.ended === "true") return;
  const runId = section.dataset.runId;
  const count = (cls, by) => {
    const node = section.querySelector(cls);
    node.textContent = String(Number(node.textContent) + by);
  };
  const source = new EventSource(`/api/runs/${runId}/events?after=${section.dataset.lastSeq || 0}`);
  const status = section.querySelector(".run-status");
  const on = (name, f) => source.addEventListener(name, (msg) => f(JSON.parse(msg.data)));
  on("run_started", () => { status.textContent = "running"; });
  on("tool_requested", () => count(".calls", 1));
  on("tool_approval_required", () => { status.textContent = "waiting for approval (open the run)"; });
  on("tool_started", () => { status.textContent = "running"; });
  for (const name of ["tool_denied", "tool_rejected", "tool_approval_expired"]) {
    on(name, () => { count(".refused", 1); status.textContent = "running"; });
  }
  on("tool_call_repeated", (e) => { if (!e.answered_from_record) count(".refused", 1); });
  on("stage_completed", (e) => count(".tokens", (e.usage?.input_tokens || 0) + (e.usage?.output_tokens || 0)));
  const end = (text, final) => { status.textContent = text; section.querySelector(".final").textContent = final; source.close(); };
  on("run_completed", (e) => end("completed", e.final));
  on("run_failed", (e) => end("failed", `failed (${e.class}): ${e.error}`));
  on("run_cancelled", (e) => end("cancelled", `cancelled: ${e.reason}`));
}

// ---- conversations ------------------------------------------------------------------------
function conversationView(root) {
  const id = root.dataset.conversationId;
  const list = document.getElementById("turns");
  const state = document.getElementById("conversation-state");
  const input = document.getElementById("message");
  const send = document.getElementById("send");
  let following = null; // the EventSource of the running turn's run

  function follow(turnNode, runId) {
    if (following && following.runId === runId) return;
    if (following) following.source.close();
    const reply = turnNode.querySelector(".reply");
    const source = new EventSource(`/api/runs/${runId}/events`);
    following = { runId, source };
    source.addEventListener("stage_started", (msg) => {
      const e = JSON.parse(msg.data);
      if (reply.textContent && !reply.textContent.endsWith("\n")) reply.append("\n");
      if (e.stage !== "planner") reply.append(`── ${e.stage} ──\n`);
    });
    source.addEventListener("stage_chunk", (msg) => reply.append(JSON.parse(msg.data).text));
    source.addEventListener("tool_approval_required", (msg) => {
      const e = JSON.parse(msg.data);
      const note = el("p", { class: "turn-approval", role: "status" }, `Approval needed for ${e.tool}: `,
        el("a", { href: `/runs/${runId}`, text: "open the run to approve or deny" }));
      turnNode.insertBefore(note, reply);
    });
    for (const name of ["tool_approved", "tool_rejected", "tool_approval_expired"]) {
      source.addEventListener(name, () => turnNode.querySelectorAll(".turn-approval").forEach((n) => n.remove()));
    }
    for (const name of ["run_completed", "run_failed", "run_cancelled"]) {
      source.addEventListener(name, () => { source.close(); following = null; });
    }
  }

  function render(view) {
    root.dataset.ended = String(view.ended);
    state.textContent = view.ended ? "ended" : view.busy ? "working" : "ready";
    input.disabled = view.ended;
    send.disabled = view.ended;
    document.getElementById("end").disabled = view.ended;
    list.replaceChildren(...view.turns.map((t) => {
      const node = el("li", { class: "turn", "data-run-id": t.run_id, "data-status": t.status },
        el("p", { class: "message", text: t.message }));
      if (t.run_id) {
        node.append(el("p", { class: "turn-run" }, el("a", { href: `/runs/${t.run_id}`, text: t.run_id }), " · ",
          el("span", { class: "turn-status", text: t.status })));
      }
      node.append(el("pre", { class: "reply", text: t.reply }));
      return node;
    }));
    const last = list.lastElementChild;
    if (last && (last.dataset.status === "running" || last.dataset.status === "queued") && last.dataset.runId) {
      following = null;
      follow(last, last.dataset.runId);
    }
  }

  const source = new EventSource(`/api/conversations/${id}/events`);
  source.addEventListener("conversation", (msg) => render(JSON.parse(msg.data)));

  document.getElementById("message-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
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
  document.querySelectorAll(".compare-run").forEach(compareView);
  const run = document.getElementById("run");
  if (run) runView(run);
  const facts = document.getElementById("facts");
  if (facts) memoryView(facts);
});
