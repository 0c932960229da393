#!/usr/bin/env bash
# The test command (what CI runs after fmt and clippy): the Rust suite, then the Python
# package's, from one build of the workspace in the `ci` profile (Cargo.toml): the test
# binaries, the `venn` binary the Python suite runs against, and the Python package's
# native module, all from one feature resolution (a second build for the package alone —
# maturin's — resolves the features of the shared dependencies otherwise, the service
# stack being out of the wheel, and rebuilds nearly all of them: 1 min 44 s).
set -euo pipefail
cd "$(dirname "$0")/.."
# At the end, pass or fail: the wall time and the CPU time of everything it ran (user +
# sys of its children, as the shell's `times` counts them), the figure the 15-minute
# budget on a 2-core machine is about.
cpu_time() {
    local f
    f="$(mktemp)"
    times >"$f" # a builtin in this shell: its children's times (a pipe would fork)
    tail -n 1 "$f" | awk '{
        split($1, u, "m"); sub("s", "", u[2]); split($2, y, "m"); sub("s", "", y[2])
        user = u[1] * 60 + u[2]; sys = y[1] * 60 + y[2]
        printf "user %.0f s + sys %.0f s = %.0f CPU-seconds", user, sys, user + sys
    }'
    rm -f "$f"
}
trap 'printf "test command: %d min %d s wall, " $((SECONDS / 60)) $((SECONDS % 60)); cpu_time; echo' EXIT
# venn-python's cdylib as a Python extension module: not linked to libpython (the
# interpreter that loads it provides the symbols). Only pyo3's build scripts read this.
export PYO3_BUILD_EXTENSION_MODULE=1
# Libraries (the cdylib), binaries and test binaries; then the unit and integration tests
# (`--tests`: not the doc tests — the docs' code blocks are text — nor the examples,
# which clippy builds), from the same artifacts.
cargo build --locked --profile ci --workspace --lib --bins --tests
cargo test --locked --profile ci --workspace --tests
VENN_BIN="$PWD/target/ci/venn" VENN_MODULE="$PWD/target/ci/lib_venn.so" scripts/test-python.sh
