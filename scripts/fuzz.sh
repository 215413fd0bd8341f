#!/usr/bin/env bash
# Runs one property-based fuzz target for a time budget, or lists the targets.
#
#   scripts/fuzz.sh list              the targets: name, crate, test binary, test
#   scripts/fuzz.sh TARGET SECONDS    replays TARGET's seed corpus (fuzz/corpus/TARGET), then
#                                     runs fresh random cases until SECONDS are spent and
#                                     prints the executions per second
#
# In the normal test run (`cargo test`) every target replays its corpus and runs a fixed
# number of cases (STEWARD_FUZZ_CASES, default 256) from a fixed seed.
set -euo pipefail
cd "$(dirname "$0")/.."

# target  crate  test-binary  test (its path inside the binary)
TARGETS="
shell_bash        steward-policy    fuzz_shell_bash  fuzz_shell_bash
shell_split       steward-policy    fuzz_policy      fuzz_shell_split
shell_argv        steward-policy    fuzz_policy      fuzz_shell_argv
policy_match      steward-policy    fuzz_policy      fuzz_policy_match
workspace_paths   steward-policy    fuzz_policy      fuzz_workspace_paths
secrets_redact    steward-secrets   fuzz_secrets     fuzz_secrets_redact
secrets_scan      steward-secrets   fuzz_secrets     fuzz_secrets_scan
recover           steward-provider  fuzz_recover     fuzz_recover
sse_openai        steward-provider  fuzz_streams     fuzz_sse_openai
sse_anthropic     steward-provider  fuzz_streams     fuzz_sse_anthropic
patch_apply       steward-core      core             fuzz_core::fuzz_patch_apply
config_layers     steward-core      core             fuzz_core::fuzz_config_layers
mcp_output        steward-mcp       fuzz_output      fuzz_mcp_output
ledger_intake     steward-ledger    fuzz_intake      fuzz_ledger_intake
"

usage() {
    echo "usage: scripts/fuzz.sh list | scripts/fuzz.sh TARGET SECONDS" >&2
    exit 2
}

[ $# -ge 1 ] || usage
if [ "$1" = list ]; then
    echo "$TARGETS" | awk 'NF { printf "%-18s %-18s --test %-16s %s\n", $1, $2, $3, $4 }'
    exit 0
fi
[ $# -eq 2 ] || usage
target=$1
seconds=$2
case "$seconds" in '' | *[!0-9]*) usage ;; esac
row=$(echo "$TARGETS" | awk -v t="$target" '$1 == t')
if [ -z "$row" ]; then
    echo "unknown fuzz target: $target (see scripts/fuzz.sh list)" >&2
    exit 2
fi
read -r _ crate binary function <<<"$row"
STEWARD_FUZZ_SECONDS=$seconds exec cargo test -q -p "$crate" --test "$binary" -- --exact "$function" --nocapture
