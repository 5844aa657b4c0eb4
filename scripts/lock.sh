#!/usr/bin/env bash
# Regenerates the hash-pinned locks from pyproject.toml (the app with its dev tools) and from the bootstrap set
# (pip and the build backend). Resolution happens here, when a developer chooses to move the pins — never at
# install time (scripts/install.sh installs the locks with --no-deps).
#
#   scripts/lock.sh            # re-resolve, keeping current pins where they still fit
#   scripts/lock.sh --upgrade  # move every pin to the newest release that fits
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.cache/lock-tools"
[ -x "$TOOLS/bin/uv" ] || { python3 -m venv "$TOOLS" && "$TOOLS/bin/pip" install --quiet "uv==0.13.9"; }
UV="$TOOLS/bin/uv"
COMMON=(--quiet --generate-hashes --python-version 3.11 --no-header "$@")
"$UV" pip compile "${COMMON[@]}" --extra dev "$ROOT/pyproject.toml" -o "$ROOT/requirements.lock"
printf 'pip\nhatchling\neditables\n' | "$UV" pip compile "${COMMON[@]}" - -o "$ROOT/requirements-bootstrap.lock"
echo "locks written: requirements.lock, requirements-bootstrap.lock"
