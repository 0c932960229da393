#!/usr/bin/env bash
# The Python package's suite: crates/venn-python/tests in a fresh virtual environment with
# pytest, pandas, pyarrow and Ray from PyPI, against the package and the `venn` command line (VENN_BIN,
# or a release build of it): a Python party facing a CLI party, the Thunder service, and a
# local Ray cluster the tests start.
#
# The package: by default the wheel maturin builds in release, installed as a user would
# install it. scripts/test.sh gives VENN_MODULE instead, the native module its one build
# made: the package's Python sources and that module are then installed as the wheel
# would lay them out (venn/, venn/_venn.abi3.so), without a second build. Arguments go to
# pytest (`-k keygen` runs the tests whose names hold "keygen").
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
rm -rf "$venv" target/wheels
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check pytest pandas pyarrow "ray>=2.40,<3"
if [ -n "${VENN_MODULE:-}" ]; then
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    cp -r crates/venn-python/python/venn "$site/venn"
    cp "$VENN_MODULE" "$site/venn/_venn.abi3.so"
else
    "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.16,<2"
    "$venv/bin/maturin" build --release --locked -m crates/venn-python/Cargo.toml -o target/wheels
    "$venv/bin/pip" install --quiet --disable-pip-version-check target/wheels/venn-*.whl
fi
if [ -z "${VENN_BIN:-}" ]; then
    cargo build --locked --release -p venn-cli
    VENN_BIN="$PWD/target/release/venn"
fi
VENN_BIN="$VENN_BIN" "$venv/bin/python" -m pytest -q -p no:cacheprovider crates/venn-python/tests "$@"
