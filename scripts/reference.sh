#!/usr/bin/env bash
# Rewrites the reference pages under docs/reference/ from the code (the tests
# `reference_pages_are_current` and `the_reference_page_is_current` fail while a committed page
# differs from what this writes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p steward-cli -p steward-bench
for page in cli events; do
  ./target/debug/steward reference "$page" > "docs/reference/$page.md"
  echo "wrote docs/reference/$page.md"
done
./target/debug/steward-bench reference > docs/reference/bench.md
echo "wrote docs/reference/bench.md"
