#!/usr/bin/env bash
# Build the wheel, install it (not editable) with its dependencies into a scratch venv, then run
# `attnviz --help` and one `attnviz translate` from outside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$scratch/dist" .
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install --quiet "torch==$TORCH_VERSION"
"$scratch/venv/bin/python" -m pip install --quiet "$scratch"/dist/attnviz-*.whl
cd "$scratch"
where=$("$scratch/venv/bin/python" -c 'import attnviz; print(attnviz.__file__)')
case "$where" in
  "$scratch/venv/"*) ;;
  *) echo "wheel smoke test: attnviz was imported from $where, not from the installed wheel" >&2; exit 1 ;;
esac
"$scratch/venv/bin/attnviz" --help >/dev/null
out=$("$scratch/venv/bin/attnviz" translate 我是学生。)
echo "installed wheel translates 我是学生。 -> $out"
[ -n "$out" ]
