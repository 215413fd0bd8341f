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

# git hooks set GIT_DIR; git (and so Steward's policy) would then use that repository instead of
# the tests' own. The tests that depend on it fail when it is set.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE

# Needs beyond the code: PostgreSQL (postgres), Landlock (landlock), network namespaces (netns).
# Each is required; a test that needs one and cannot have it fails. A user who cannot provide one
# opts out with STEWARD_TEST_SKIP=postgres,landlock,netns: the tests of that need (the need's name
# is a word of their test name, e.g. `…::postgres`, `…_on_postgres`; for landlock and netns also
# every test of steward-sandbox's `sandbox` binary) are left out and listed as not run.
skip="${STEWARD_TEST_SKIP:-}"
filter=""
for need in ${skip//,/ }; do
  case "$need" in
    postgres) part="test(/(^|::)([^:]*_)?postgres(_[^:]*)?\$/)" ;;
    landlock | netns) part="test(/(^|::)([^:]*_)?${need}(_[^:]*)?\$/) | binary_id(steward-sandbox::sandbox)" ;;
    *)
      echo "test.sh: STEWARD_TEST_SKIP names an unknown need '$need' (known: postgres, landlock, netns)" >&2
      exit 2
      ;;
  esac
  filter="${filter:+$filter | }$part"
done

if cargo nextest --version >/dev/null 2>&1; then
  if [ -z "$filter" ]; then
    cargo nextest run --workspace --no-fail-fast "$@"
  else
    status=0
    cargo nextest run --workspace --no-fail-fast -E "not ($filter)" "$@" || status=$?
    echo
    echo "NOT RUN (opted out by STEWARD_TEST_SKIP=$skip; these tests did not pass, they were not tested):"
    cargo nextest list --workspace -E "$filter" --message-format oneline 2>/dev/null | sed 's/^/    /'
    exit "$status"
  fi
else
  if [ -n "$filter" ]; then
    echo "test.sh: STEWARD_TEST_SKIP needs cargo-nextest to leave tests out; without it they would run and fail" >&2
    exit 2
  fi
  cargo test --workspace --no-fail-fast "$@" -- --test-threads 2
fi
