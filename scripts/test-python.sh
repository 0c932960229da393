#!/usr/bin/env bash
# The Python package's suite, as a new user would meet the package: the wheel built by
# maturin (--locked, in the cargo profile $VENN_PROFILE: release unless scripts/test.sh
# says ci), installed into a fresh virtual environment with pytest, pandas and Ray from
# PyPI, and crates/venn-python/tests run against it — and against the `venn` command line
# (VENN_BIN, or the profile's build of it): a Python party facing a CLI party, the Thunder
# service, and a local Ray cluster the tests start.
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${VENN_PROFILE:-release}"
venv=target/python-venv
rm -rf "$venv" target/wheels
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.16,<2" pytest pandas "ray>=2.40,<3"
"$venv/bin/maturin" build --profile "$profile" --locked -m crates/venn-python/Cargo.toml -o target/wheels
"$venv/bin/pip" install --quiet --disable-pip-version-check target/wheels/venn-*.whl
# The command line: VENN_BIN if given (scripts/test.sh gives the one its cargo test built:
# building venn-cli alone would resolve features otherwise and rebuild dependencies).
if [ -z "${VENN_BIN:-}" ]; then
    cargo build --locked --profile "$profile" -p venn-cli
    VENN_BIN="$PWD/target/$profile/venn"
fi
VENN_BIN="$VENN_BIN" "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/venn-python/tests
