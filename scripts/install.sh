#!/usr/bin/env bash
# Builds the virtual environment from the locks, exactly, with no dependency resolution at install time.
#
#   scripts/install.sh [VENV]      # default .venv; used by `make install`, CI and the container image
#
# Why pip with --no-deps --require-hashes (and not a resolver): a lock that is installed through a resolver
# is only as stable as the index on the day of the install — a new upstream release can make the resolver
# reject a pinned set that installed yesterday. With --no-deps pip installs exactly the pinned files, checks
# every hash, and never asks the index what else exists; `pip check` afterwards proves the lock is complete
# and consistent on its own. pip itself and the build backend (hatchling) come from their own hash-pinned
# lock first, so neither the venv's bundled pip nor an unpinned build backend decides anything.
#
# Environment: PYTHON (interpreter that creates the venv, default python3), FORECOURT_FRESH_VENV=1 to delete an
# existing venv first. Regenerate the locks with scripts/lock.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv}"
PYTHON="${PYTHON:-python3}"
PIP_FLAGS=(--quiet --disable-pip-version-check --no-input --require-hashes --no-deps)

if [ "${FORECOURT_FRESH_VENV:-0}" = "1" ]; then rm -rf "$VENV"; fi
"$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install "${PIP_FLAGS[@]}" -r "$ROOT/requirements-bootstrap.lock"
"$PY" -m pip install "${PIP_FLAGS[@]}" -r "$ROOT/requirements.lock"
"$PY" -m pip install --quiet --disable-pip-version-check --no-input --no-deps --no-build-isolation -e "$ROOT"
"$PY" -m pip check
