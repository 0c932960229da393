#!/usr/bin/env bash
# The test command (what CI runs after fmt and clippy): the Rust suite, then the Python
# package's, from one build in the `ci` profile (Cargo.toml) — the wheel and the `venn`
# binary the Python suite runs against reuse the test build's artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked --profile ci
VENN_PROFILE=ci scripts/test-python.sh
