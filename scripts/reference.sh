#!/usr/bin/env bash
# Rewrites the reference pages under docs/reference/ and the OpenAPI document docs/openapi.json
# from the code (the tests `reference_pages_are_current`, `the_reference_page_is_current` and
# `committed_document_is_current` fail while a committed page differs from what this writes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p steward-cli -p steward-bench
bin="${CARGO_TARGET_DIR:-target}/debug"
for entry in cli:cli.md events:events.md config:configuration.md man:steward.1; do
  page="${entry%%:*}" file="${entry#*:}"
  "$bin"/steward reference "$page" > "docs/reference/$file"
  echo "wrote docs/reference/$file"
done
"$bin"/steward reference openapi > docs/openapi.json
echo "wrote docs/openapi.json"
"$bin"/steward-bench reference > docs/reference/bench.md
echo "wrote docs/reference/bench.md"
