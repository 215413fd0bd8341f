#!/usr/bin/env python3
"""Time an agent harness against a scripted model server on loopback.

The server answers the harness's model requests from a script: for each of the first STEPS
requests that offer tools it calls one tool (a file read, or `cat notes.txt` through the
harness's shell tool), then it answers with a short text. Nothing else runs on the model's
side, so what is measured is the harness's own cost:

  start -> first request  from spawning the harness's process to the arrival of its first
                          model request that offers tools (the planning request);
  step gap                from the server finishing a reply that calls a tool to the arrival of
                          the next request, which carries the tool's result: the harness's
                          whole in-run cost of one step (parsing, policy, approval logic,
                          sandbox, the tool, its audit and storage, building the next request);
  peak RSS                the largest resident set of any one process of the harness's tree,
                          in MiB: each process's own high-water mark (VmHWM in
                          /proc/PID/status), read every 10 ms while it runs. Not wait4's
                          ru_maxrss: exec keeps, as the process's peak, that of the memory it
                          replaces, which for a child started with vfork (as subprocess does)
                          is this script's own, about 24 MiB;
  wall                    spawn to exit.

Each step's result is checked: the next request must contain the marker written in
`notes.txt`, otherwise the step is counted as failed (a refused call, a sandbox failure).

The server speaks three wire formats, chosen with --api: OpenAI chat completions (`chat`),
OpenAI Responses (`responses`) and Anthropic Messages (`messages`), streamed (SSE) or not, as
the request asks. Requests without tools (titles, quota checks) get a one-word text answer and
are not timed. Any harness that can be pointed at a base URL can be measured the same way:
give its command line after `--`, with `{url}`, `{workspace}` and `{task}` substituted, or use
a preset (--harness steward|codex|claude), which also writes the harness's configuration into
a private home folder so that the user's own configuration is not read.

Example, Steward's release build against a Codex CLI binary, 10 runs each, alternating:

  scripts/compare-harness.py --harness steward --bin target/release/steward \\
      --harness codex --bin ~/codex/bin/codex --runs 10 --steps 3 --step shell

Only Python's standard library is used. Runs of different harnesses alternate (A B A B ...)
so that a change of the machine's load affects all of them alike; the first run of each is a
warm-up and is left out.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

MARKER = "compare-harness-marker-7f3a"
TASK = "Read notes.txt and tell me what it says."

# Tools the script knows how to call, by name: (kind, arguments for a workspace).
# kind "read" reads notes.txt with a file tool; kind "shell" runs `cat notes.txt`.
KNOWN_TOOLS = {
    "read": ("read", lambda ws: {"path": "notes.txt"}),
    "read_file": ("read", lambda ws: {"path": "notes.txt"}),
    "Read": ("read", lambda ws: {"file_path": os.path.join(ws, "notes.txt")}),
    "shell_command": ("shell", lambda ws: {"command": "cat notes.txt"}),
    "Bash": ("shell", lambda ws: {"command": "cat notes.txt", "description": "Show notes.txt"}),
    "exec_command": ("shell", lambda ws: {"cmd": "cat notes.txt"}),
    "shell": ("shell", lambda ws: {"command": ["cat", "notes.txt"]}),
}


@dataclass
class RunLog:
    """What the server saw during one run of a harness."""

    workspace: str = ""
    step_kind: str = "read"
    steps: int = 3
    first_request: float | None = None
    reply_done: list[float] = field(default_factory=list)
    gaps_ms: list[float] = field(default_factory=list)
    failed_steps: int = 0
    tool_requests: int = 0
    other_requests: int = 0
    tool_names: list[str] = field(default_factory=list)
    error: str | None = None


class Script:
    """The current run's log, shared with the server's threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.log = RunLog()

    def reset(self, workspace: str, step_kind: str, steps: int) -> None:
        with self.lock:
            self.log = RunLog(workspace=workspace, step_kind=step_kind, steps=steps)


def tool_names(api: str, body: dict) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        if api == "chat":
            names.append(((tool.get("function") or {}).get("name")) or "")
        else:
            names.append(tool.get("name") or tool.get("type") or "")
    return names


def choose_tool(names: list[str], kind: str) -> str | None:
    """The tool to call: one of `kind` if offered, else a shell tool, else none."""
    for wanted in (kind, "shell"):
        for name in names:
            if name in KNOWN_TOOLS and KNOWN_TOOLS[name][0] == wanted:
                return name
    return None


def sse(events: list[tuple[str | None, dict | str]]) -> bytes:
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def chat_reply(call: tuple[str, str] | None, text: str, stream: bool) -> tuple[str, bytes]:
    if not stream:
        message: dict = {"role": "assistant", "content": None if call else text}
        if call:
            message["tool_calls"] = [
                {"id": "call_1", "type": "function", "function": {"name": call[0], "arguments": call[1]}}
            ]
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if call else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return "application/json", json.dumps(body).encode()
    if call:
        delta = {
            "role": "assistant",
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": call[0], "arguments": call[1]}}
            ],
        }
    else:
        delta = {"role": "assistant", "content": text}

    def chunk(d: dict, finish: str | None) -> dict:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "bench",
            "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
        }

    last = chunk({}, "tool_calls" if call else "stop")
    last["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return "text/event-stream", sse([(None, chunk(delta, None)), (None, last), (None, "[DONE]")])


def responses_reply(call: tuple[str, str] | None, text: str, stream: bool) -> tuple[str, bytes]:
    if call:
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": call[0], "arguments": call[1], "status": "completed"}
    else:
        item = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    response = {"id": "resp_1", "object": "response", "status": "completed", "model": "bench", "output": [item], "usage": usage}
    if not stream:
        return "application/json", json.dumps(response).encode()
    events: list[tuple[str | None, dict | str]] = [
        ("response.created", {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}}),
        ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
    ]
    if not call:
        events.append(
            (
                "response.output_text.delta",
                {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text},
            )
        )
    events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "response": response}))
    return "text/event-stream", sse(events)


def messages_reply(call: tuple[str, str] | None, text: str, stream: bool) -> tuple[str, bytes]:
    if call:
        block = {"type": "tool_use", "id": "toolu_1", "name": call[0], "input": json.loads(call[1])}
    else:
        block = {"type": "text", "text": text}
    stop = "tool_use" if call else "end_turn"
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "bench",
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    if not stream:
        return "application/json", json.dumps(message).encode()
    start = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}}
    if call:
        opening = {"type": "tool_use", "id": "toolu_1", "name": call[0], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": call[1]}
    else:
        opening = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": text}
    return "text/event-stream", sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opening}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


REPLIES = {"chat": chat_reply, "responses": responses_reply, "messages": messages_reply}
ENDPOINTS = {"chat": "/chat/completions", "responses": "/responses", "messages": "/messages"}


def make_handler(script: Script, api: str):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body are separate writes: without this, Nagle's algorithm holds the body
        # back until the client's delayed ACK of the headers (40 ms on Linux).
        disable_nagle_algorithm = True

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self.send_body(200, "application/json", json.dumps({"object": "list", "data": [{"id": "bench", "object": "model"}]}).encode())
            else:
                self.send_body(404, "application/json", b'{"error":{"message":"not found"}}')

        def do_HEAD(self) -> None:
            self.send_body(200, "text/plain", b"")

        def send_body(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        def do_POST(self) -> None:
            arrived = time.monotonic()
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?", 1)[0]
            if not path.endswith(ENDPOINTS[api]):
                if path.endswith("/count_tokens"):
                    self.send_body(200, "application/json", b'{"input_tokens": 10}')
                else:
                    self.send_body(404, "application/json", b'{"error":{"message":"not found"}}')
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self.send_body(400, "application/json", b'{"error":{"message":"bad json"}}')
                return
            stream = bool(body.get("stream"))
            names = tool_names(api, body)
            with script.lock:
                log = script.log
                call = None
                if names:
                    log.tool_requests += 1
                    if log.first_request is None:
                        log.first_request = arrived
                        log.tool_names = names
                    else:
                        # This request answers the previous reply's tool call.
                        if log.reply_done:
                            log.gaps_ms.append((arrived - log.reply_done[-1]) * 1000)
                        if MARKER not in raw.decode("utf-8", "replace"):
                            log.failed_steps += 1
                    if log.tool_requests <= log.steps:
                        name = choose_tool(names, log.step_kind)
                        if name is None:
                            log.error = f"none of the offered tools is known: {names}"
                        else:
                            call = (name, json.dumps(KNOWN_TOOLS[name][1](log.workspace)))
                else:
                    log.other_requests += 1
            content_type, payload = REPLIES[api](call, "done" if names else "ok", stream)
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
            done = time.monotonic()
            if call:
                with script.lock:
                    script.log.reply_done.append(done)

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


@dataclass
class Harness:
    """How to start one harness: its command, environment and API."""

    name: str
    api: str
    argv: list[str]
    env: dict[str, str]
    home: str


def steward_preset(binary: str, home: str, url: str, workspace: str, api: str) -> tuple[list[str], dict[str, str]]:
    config = os.path.join(home, "config", "steward")
    os.makedirs(config, exist_ok=True)
    with open(os.path.join(config, "bench.toml"), "w") as f:
        # Steward's round limit (5 by default) would end a run of more steps before its last;
        # the other harnesses have no limit that low.
        f.write(
            "[limits]\nmax_rounds = 100\n\n"
            "[shell]\nenabled = true\n\n"
            "[[policy.rule]]\nname = \"cat\"\ntool = \"shell_command\"\nargv = [\"cat\", \"**\"]\ndecision = \"allow\"\n"
        )
        if api != "chat":
            kind = {"responses": "openai-responses", "messages": "anthropic"}[api]
            f.write(f'[providers.mock]\nkind = "{kind}"\nbase_url = "{url}/v1"\napi_key_env = "COMPARE_HARNESS_KEY"\n')
    argv = [binary, "run", "--workspace", workspace, "--model", "bench"]
    argv += ["--base-url", url + "/v1"] if api == "chat" else ["--provider", "mock"]
    env = {
        "XDG_CONFIG_HOME": os.path.join(home, "config"),
        "STEWARD_HOME": os.path.join(home, "state"),
        "COMPARE_HARNESS_KEY": "unused",
    }
    return argv + [TASK], env


def codex_preset(binary: str, home: str, url: str, workspace: str, api: str) -> tuple[list[str], dict[str, str]]:
    codex_home = os.path.join(home, "codex")
    os.makedirs(codex_home, exist_ok=True)
    with open(os.path.join(codex_home, "config.toml"), "w") as f:
        f.write(
            'model = "bench"\nmodel_provider = "mock"\napproval_policy = "never"\nsandbox_mode = "read-only"\n'
            f'[model_providers.mock]\nname = "mock"\nbase_url = "{url}/v1"\nwire_api = "responses"\n'
            'env_key = "COMPARE_HARNESS_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
        )
    argv = [binary, "exec", "--skip-git-repo-check", "-C", workspace, TASK]
    return argv, {"CODEX_HOME": codex_home, "COMPARE_HARNESS_KEY": "unused"}


def claude_preset(binary: str, home: str, url: str, workspace: str, api: str) -> tuple[list[str], dict[str, str]]:
    argv = [binary, "-p", TASK, "--model", "bench", "--allowedTools", "Read", "Bash(cat:*)"]
    env = {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "unused",
        "HOME": os.path.join(home, "claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
    }
    os.makedirs(env["HOME"], exist_ok=True)
    return argv, env


PRESETS = {
    "steward": ("chat", steward_preset),
    "codex": ("responses", codex_preset),
    "claude": ("messages", claude_preset),
}


def new_workspace(root: str, index: int) -> str:
    ws = os.path.join(root, f"ws{index}")
    os.makedirs(ws)
    with open(os.path.join(ws, "notes.txt"), "w") as f:
        f.write(f"The marker is {MARKER}.\n")
    subprocess.run(["git", "init", "-q", ws], check=True)
    return ws


class PeakRss:
    """The largest VmHWM of a process and its descendants, read every `interval` seconds.

    VmHWM only grows while a process lives, so a late read covers what came before it; what a
    process adds in its last `interval` before it exits, and a process shorter than that, can
    be missed.
    """

    def __init__(self, pid: int, interval: float = 0.01):
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _tree(self) -> list[int]:
        pids, i = [self.pid], 0
        while i < len(pids):
            try:
                for tid in os.listdir(f"/proc/{pids[i]}/task"):
                    with open(f"/proc/{pids[i]}/task/{tid}/children") as f:
                        pids.extend(int(c) for c in f.read().split())
            except OSError:
                pass
            i += 1
        return pids

    def _watch(self) -> None:
        while not self.done.is_set():
            for pid in self._tree():
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                                break
                except (OSError, ValueError):
                    pass
            self.done.wait(self.interval)

    def finish(self) -> float:
        """Stops reading; the peak in MiB."""
        self.done.set()
        self.thread.join()
        return self.peak_kib / 1024


def run_once(kind: str, binary: str | None, extra: list[str], api: str, home: str, url: str, ws: str, script: Script, args) -> dict:
    if kind in PRESETS:
        argv, env = PRESETS[kind][1](binary or kind, home, url, ws, api)
    else:
        argv = [a.replace("{url}", url).replace("{workspace}", ws).replace("{task}", TASK) for a in extra]
        env = {}
    script.reset(ws, args.step, args.steps)
    full_env = {**os.environ, **env}
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ws, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    peak = PeakRss(proc.pid)
    timer = threading.Timer(args.timeout, proc.kill)
    timer.start()
    # Both pipes are read at once, so a harness that fills one is never left waiting.
    err_chunks: list[bytes] = []
    err_reader = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read() if proc.stderr else b""))
    err_reader.start()
    out = proc.stdout.read() if proc.stdout else b""
    err_reader.join()
    err = b"".join(err_chunks)
    rss_mib = peak.finish()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.monotonic()
    timer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    with script.lock:
        log = script.log
    result = {
        "exit": proc.returncode,
        "wall_ms": (ended - started) * 1000,
        "start_ms": None if log.first_request is None else (log.first_request - started) * 1000,
        "gaps_ms": log.gaps_ms,
        "steps_done": len(log.gaps_ms),
        "failed_steps": log.failed_steps,
        "rss_mib": rss_mib,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "other_requests": log.other_requests,
        "tools_offered": log.tool_names,
        "error": log.error,
    }
    if args.verbose or log.first_request is None or log.error:
        result["stdout_tail"] = out.decode("utf-8", "replace")[-800:]
        result["stderr_tail"] = err.decode("utf-8", "replace")[-800:]
    return result


class HarnessAction(argparse.Action):
    """`--harness` starts a harness's settings; `--bin` and `--api` set the latest one's."""

    def __call__(self, parser, namespace, value, option_string=None):
        harnesses = getattr(namespace, "harnesses", None) or []
        if self.dest == "harness":
            harnesses.append({"harness": value})
        elif not harnesses:
            parser.error(f"{option_string} comes after the --harness it belongs to")
        else:
            harnesses[-1][self.dest] = value
        namespace.harnesses = harnesses


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--harness", action=HarnessAction, help="a preset (steward, codex, claude) or `command` for the argv after --; repeatable")
    parser.add_argument("--bin", action=HarnessAction, help="the binary of the preceding --harness (default: its name on PATH)")
    parser.add_argument("--api", action=HarnessAction, help="chat, responses or messages for the preceding --harness (default: the preset's)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each harness (after one warm-up run)")
    parser.add_argument("--steps", type=int, default=3, help="tool calls per run")
    parser.add_argument("--step", choices=["read", "shell"], default="read", help="a file-read tool where offered, or `cat` through the shell tool")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a run is killed")
    parser.add_argument("--json", action="store_true", help="print every run as JSON lines")
    parser.add_argument("--verbose", action="store_true", help="keep each run's output tails")
    parser.add_argument("command", nargs="*", help="with --harness command: the argv, {url} {workspace} {task} substituted")
    args = parser.parse_args()
    if not getattr(args, "harnesses", None):
        parser.error("give at least one --harness")

    harnesses = []
    for given in args.harnesses:
        kind = given["harness"]
        if kind not in PRESETS and kind != "command":
            parser.error(f"unknown harness {kind!r}: steward, codex, claude or command")
        api = given.get("api") or (PRESETS[kind][0] if kind in PRESETS else "chat")
        if api not in REPLIES:
            parser.error(f"unknown api {api!r}: chat, responses or messages")
        binary = given.get("bin")
        if binary and not shutil.which(binary) and not os.path.exists(binary):
            parser.error(f"{binary}: not found")
        harnesses.append((kind, binary, api))

    root = tempfile.mkdtemp(prefix="compare-harness-")
    results: dict[int, list[dict]] = {i: [] for i in range(len(harnesses))}
    try:
        servers = {}
        for api in {h[2] for h in harnesses}:
            script = Script()
            server = Server(("127.0.0.1", 0), make_handler(script, api))
            threading.Thread(target=server.serve_forever, daemon=True).start()
            servers[api] = (server, script, f"http://127.0.0.1:{server.server_address[1]}")
        homes = [os.path.join(root, f"home{i}") for i in range(len(harnesses))]
        for home in homes:
            os.makedirs(home)
        counter = 0
        for round_no in range(args.runs + 1):
            for i, (kind, binary, api) in enumerate(harnesses):
                server, script, url = servers[api]
                counter += 1
                ws = new_workspace(root, counter)
                result = run_once(kind, binary, args.command, api, homes[i], url, ws, script, args)
                result["harness"] = f"{kind}#{i}"
                result["warm_up"] = round_no == 0
                if args.json:
                    print(json.dumps(result), flush=True)
                if round_no > 0:
                    results[i].append(result)
                if result["start_ms"] is None or result.get("error"):
                    print(f"{kind}: a run did not go as scripted: {json.dumps(result)}", file=sys.stderr)
        for server, _, _ in servers.values():
            server.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"\n{args.runs} runs each after one warm-up, {args.steps} `{args.step}` steps per run, medians:")
    print(f"{'harness':<12} {'api':<10} {'start→1st request ms':>21} {'step gap ms':>12} {'peak RSS MiB':>13} {'wall ms':>9} {'CPU s':>7} {'steps ok':>9}")
    for i, (kind, _, api) in enumerate(harnesses):
        runs = results[i]
        starts = [r["start_ms"] for r in runs if r["start_ms"] is not None]
        gaps = [g for r in runs for g in r["gaps_ms"]]
        ok = sum(r["steps_done"] - r["failed_steps"] for r in runs)
        print(
            f"{kind:<12} {api:<10} {fmt(median(starts)):>21} {fmt(median(gaps)):>12} "
            f"{fmt(median([r['rss_mib'] for r in runs])):>13} {fmt(median([r['wall_ms'] for r in runs]), 0):>9} "
            f"{fmt(median([r['cpu_s'] for r in runs]), 3):>7} {ok:>4}/{args.steps * len(runs):<4}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
