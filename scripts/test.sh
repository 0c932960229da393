#!/usr/bin/env bash
# The test command (what CI runs after fmt and clippy): the Rust suite, then the Python
# package's, from one build in the `ci` profile (Cargo.toml) — the wheel and the `venn`
# binary the Python suite runs against reuse the test build's artifacts.
set -euo pipefail
cd "$(dirname "$0")/.."
# Unit and integration tests (`--tests`: not the doc tests — the docs' code blocks are
# text — nor the examples, which clippy builds). venn-python stays in, though it has no
# Rust tests: without it the features of the shared dependencies resolve otherwise than
# for the wheel, and maturin rebuilds nearly all of them (2 min 38 s against 53 s).
cargo test --locked --profile ci --workspace --tests
# The binary cargo test built for the CLI's tests.
VENN_PROFILE=ci VENN_BIN="$PWD/target/ci/venn" scripts/test-python.sh
