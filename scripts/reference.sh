#!/usr/bin/env bash
# Rewrites the reference pages under docs/reference/ from the code (the test
# `reference_pages_are_current` fails while a committed page differs from what this writes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p steward-cli
for page in cli events; do
  ./target/debug/steward reference "$page" > "docs/reference/$page.md"
  echo "wrote docs/reference/$page.md"
done
