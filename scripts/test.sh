#!/usr/bin/env bash
# Runs Steward's whole test suite: installs and caches the real peers the tests talk to
# (llama-cpp-python's OpenAI-compatible server with the TinyStories model, aimock), then runs
# every test. Tests that drive real peers are named `peer_*` and run one at a time.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"

# Peers, cached under ~/.cache/steward-ci keyed by version.
eval "$(bash .ci/peers.sh)"
# The shared test inputs (the TinyStories model, a peer's golden eval file) sit beside the
# checkout; a clone made elsewhere (git clone /path/to/steward /tmp/x) finds them beside the
# checkout it was cloned from.
shared="${STEWARD_TEST_SHARED:-$here/../shared}"
origin="$(git config --get remote.origin.url 2>/dev/null || true)"
if [ -z "${STEWARD_TEST_SHARED:-}" ] && [ ! -d "$shared/peers" ] && [ -d "$origin" ]; then
  shared="$(cd "$origin" && pwd)/../shared"
fi
export STEWARD_TEST_SHARED="$shared"
model="${STEWARD_TEST_MODEL:-$shared/peers/models/stories260K.gguf}"
if [ ! -f "$model" ]; then
  echo "test.sh: the TinyStories model is missing at $model (set STEWARD_TEST_MODEL)" >&2
  exit 2
fi
export STEWARD_TEST_MODEL="$model"

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast "$@"
else
  cargo test --workspace --no-fail-fast "$@" -- --test-threads 2
fi
