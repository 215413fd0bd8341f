// Drives the real `steward acp` with the official ACP TypeScript SDK's client side, one
// `steward acp` process per scenario (the fake provider plays one script per process), and
// prints what it saw as one JSON object on stdout for tests/acp.rs to check.
//
// Usage: node client.mjs CONFIG.json, where CONFIG has
//   sdk        the SDK's package folder (STEWARD_TEST_ACP_SDK)
//   steward    the steward binary
//   workspace  the workspace (holds note.txt)
//   scenarios  { edit, reject, recall, fail, mcp } scenario files for `--provider fake`
//   everything the MCP reference server's binary (optional: the MCP phase is left out without it)
// The environment (HOME, STEWARD_HOME, …) is passed on to steward.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const acp = await import(pathToFileURL(join(config.sdk, "dist/v1/stable/acp.js")).href);
const note = () => readFileSync(join(config.workspace, "note.txt"), "utf8");

/// Starts `steward acp` with `scenario`; `onPermission(params)` answers permission requests.
/// `work(ctx, seen)` runs the phase; `seen` collects every update and permission request.
async function phase(scenario, onPermission, work) {
  const child = spawn(config.steward, ["acp", "--provider", "fake", "--scenario", scenario], {
    cwd: config.workspace,
    env: process.env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const seen = { updates: [], permissions: [], firstUpdateAt: null };
  const app = acp
    .client({ name: "steward-acp-test" })
    .onNotification("session/update", ({ params }) => {
      if (seen.firstUpdateAt === null) seen.firstUpdateAt = performance.now();
      seen.updates.push(params);
    })
    .onRequest("session/request_permission", async ({ params, agent }) => {
      seen.permissions.push(params);
      return onPermission(params, agent);
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  try {
    return await app.connectWith(stream, async (ctx) => {
      const started = performance.now();
      const init = await ctx.request("initialize", {
        protocolVersion: 1,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      });
      const result = await work(ctx, seen, init);
      result.msToFirstUpdate = seen.firstUpdateAt === null ? null : seen.firstUpdateAt - started;
      return result;
    });
  } catch (e) {
    throw new Error(`${e?.message ?? e} ${JSON.stringify(e?.data ?? "")}\nsteward stderr:\n${stderr}`);
  } finally {
    child.stdin.end();
    await new Promise((done) => (child.exitCode !== null ? done() : child.on("exit", done)));
  }
}

const choose = (optionId) => () => ({ outcome: { outcome: "selected", optionId } });
const kinds = (seen) => seen.updates.map((n) => n.update.sessionUpdate);
const calls = (seen) => seen.updates.filter((n) => n.update.sessionUpdate === "tool_call").map((n) => n.update);
/// The last update (tool_call or tool_call_update) of each tool call id: its final state.
function finalStates(seen) {
  const state = {};
  for (const { update } of seen.updates) {
    if (update.sessionUpdate === "tool_call") state[update.toolCallId] = { ...update };
    if (update.sessionUpdate === "tool_call_update") Object.assign(state[update.toolCallId], update);
  }
  return Object.values(state).map((s) => ({
    title: s.title,
    kind: s.kind,
    status: s.status,
    texts: (s.content ?? []).filter((c) => c.type === "content").map((c) => c.content.text),
    diffs: (s.content ?? []).filter((c) => c.type === "diff"),
  }));
}
const message = (seen) =>
  seen.updates
    .filter((n) => n.update.sessionUpdate === "agent_message_chunk")
    .map((n) => n.update.content.text)
    .join("");

const out = {};

// 1. A prompt that reads the file (and tries a secret one, denied), then edits it: approved.
out.approved = await phase(config.scenarios.edit, choose("allow_once"), async (ctx, seen, init) => {
  const session = await ctx.request("session/new", { cwd: config.workspace, mcpServers: [] });
  const response = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "replace old with new in note.txt" }],
  });
  return {
    agentCapabilities: init.agentCapabilities,
    sessionId: session.sessionId,
    stopReason: response.stopReason,
    kinds: kinds(seen),
    calls: finalStates(seen),
    permissions: seen.permissions.map((p) => ({ title: p.toolCall.title, options: p.options.map((o) => o.kind) })),
    message: message(seen),
    note: note(),
  };
});

// 2. The same edit rejected: the file stays, and the model is told why (its next round expects it).
out.rejected = await phase(config.scenarios.reject, choose("reject"), async (ctx, seen) => {
  const session = await ctx.request("session/new", { cwd: config.workspace, mcpServers: [] });
  const response = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "replace new with newer in note.txt" }],
  });
  return { stopReason: response.stopReason, calls: finalStates(seen), message: message(seen), note: note() };
});

// 3. Cancelled while the edit waits for permission: the run ends cancelled, nothing applied.
out.cancelled = await phase(
  config.scenarios.reject,
  (params, agent) => {
    agent.notify("session/cancel", { sessionId: params.sessionId });
    return { outcome: { outcome: "cancelled" } };
  },
  async (ctx, seen) => {
    const session = await ctx.request("session/new", { cwd: config.workspace, mcpServers: [] });
    const response = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "replace new with newer in note.txt" }],
    });
    return { stopReason: response.stopReason, permissions: seen.permissions.length, note: note() };
  },
);

// 4. The first session loaded in a new process: its turn replayed, and the next prompt has it
// as history (the scenario's round expects the earlier task in the request).
out.loaded = await phase(config.scenarios.recall, choose("reject"), async (ctx, seen) => {
  await ctx.request("session/load", { sessionId: out.approved.sessionId, cwd: config.workspace, mcpServers: [] });
  const replayed = seen.updates.splice(0);
  const response = await ctx.request("session/prompt", {
    sessionId: out.approved.sessionId,
    prompt: [{ type: "text", text: "what did I ask before?" }],
  });
  let unknown = null;
  try {
    await ctx.request("session/load", { sessionId: "cnv_nope", cwd: config.workspace, mcpServers: [] });
  } catch (e) {
    unknown = e?.message ?? String(e);
  }
  return {
    replayed: replayed.map((n) => n.update.sessionUpdate),
    replayedUser: replayed.filter((n) => n.update.sessionUpdate === "user_message_chunk").map((n) => n.update.content.text),
    replayedCalls: replayed.filter((n) => n.update.sessionUpdate === "tool_call").length,
    stopReason: response.stopReason,
    message: message(seen),
    unknown,
  };
});

// 5. A missing workspace is an error.
out.missing = await phase(config.scenarios.edit, choose("reject"), async (ctx) => {
  try {
    await ctx.request("session/new", { cwd: join(config.workspace, "no-such-dir"), mcpServers: [] });
    return { error: null };
  } catch (e) {
    return { error: `${e?.message ?? e} ${JSON.stringify(e?.data ?? "")}` };
  }
});

// 6. A run that fails answers the prompt with an error naming its class.
out.failed = await phase(config.scenarios.fail, choose("reject"), async (ctx, seen) => {
  const session = await ctx.request("session/new", { cwd: config.workspace, mcpServers: [] });
  try {
    const response = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "say hello" }],
    });
    return { stopReason: response.stopReason, error: null };
  } catch (e) {
    return { error: `${e?.message ?? e} ${JSON.stringify(e?.data ?? "")}`, message: message(seen) };
  }
});

// 7. An MCP server the editor passes: its tool asks, and runs once allowed.
if (config.everything) {
  out.mcp = await phase(config.scenarios.mcp, choose("allow_once"), async (ctx, seen) => {
    const session = await ctx.request("session/new", {
      cwd: config.workspace,
      mcpServers: [{ name: "everything", command: config.everything, args: ["stdio"], env: [] }],
    });
    const response = await ctx.request("session/prompt", {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "echo hello through the editor's server" }],
    });
    return {
      stopReason: response.stopReason,
      calls: finalStates(seen),
      permissions: seen.permissions.map((p) => p.toolCall.title),
    };
  });
}

console.log(JSON.stringify(out));
