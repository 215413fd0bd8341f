#!/usr/bin/env bash
# Rewrites the reference pages under docs/reference/ and the OpenAPI document docs/openapi.json
# from the code (the tests `reference_pages_are_current` and `committed_document_is_current`
# fail while a committed page differs from what this writes).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p steward-cli
for page in cli events; do
  ./target/debug/steward reference "$page" > "docs/reference/$page.md"
  echo "wrote docs/reference/$page.md"
done
./target/debug/steward reference openapi > docs/openapi.json
echo "wrote docs/openapi.json"
