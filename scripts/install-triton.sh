#!/usr/bin/env bash
# Installs a real NVIDIA Triton Inference Server (2.51, CPU-only) for the NVIDIA adapter's tests, into .triton/.
#
#   scripts/install-triton.sh [DIR]     # default .triton; `make pytest` runs it; idempotent (skips when done)
#
# The server comes from PyPI's nvidia-pytriton wheel (requirements-triton.lock, hash-pinned, --no-deps): its
# tritonserver binary, the Python backend and one `triton_python_backend_stub` per Python minor version.
#
# Why the stub gets its own environment, and LD_LIBRARY_PATH (see docs/models.md, "A real Triton in CI"):
# the stub embeds Python by linking `libpython3.X.so.1.0` by soname, so without help the loader finds the
# system's (Debian bookworm: 3.11.2); but the stub finds its standard library by looking for `python3` on PATH
# (a venv's python3 → that interpreter's stdlib, e.g. pyenv's 3.11.7). A 3.11.7 stdlib on a 3.11.2 runtime
# fails in multiprocessing.resource_tracker (`'_thread.RLock' object has no attribute '_recursion_count'`,
# which the C RLock gained after 3.11.2). So the server runs with this environment's interpreter's libpython
# first on LD_LIBRARY_PATH and its venv first on PATH: runtime and stdlib are then the same build.
# The interpreter must be built with a shared libpython (pyenv, Debian's python3, python.org builds are).
#
# Environment: PYTHON (interpreter for the stub's environment, default python3; falls back to /usr/bin/python3
# when PYTHON has no shared libpython).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${1:-$ROOT/.triton}"
LOCK="$ROOT/requirements-triton.lock"
STAMP="$DIR/triton.json"
if [ -f "$STAMP" ] && [ "$STAMP" -nt "$LOCK" ] && [ "$STAMP" -nt "${BASH_SOURCE[0]}" ]; then exit 0; fi

shared_python() {
    "$1" -c 'import sys, sysconfig; sys.exit(0 if sysconfig.get_config_var("Py_ENABLE_SHARED") else 1)' 2>/dev/null
}
PYTHON="${PYTHON:-python3}"
if ! shared_python "$PYTHON"; then
    echo "install-triton: $PYTHON has no shared libpython; using /usr/bin/python3" >&2
    PYTHON=/usr/bin/python3
    shared_python "$PYTHON" || { echo "install-triton: no Python with a shared libpython found" >&2; exit 1; }
fi

rm -rf "$DIR"
"$PYTHON" -m venv "$DIR/venv"
PY="$DIR/venv/bin/python"
"$PY" -m pip install --quiet --disable-pip-version-check --no-input --require-hashes --no-deps -r "$LOCK"
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
SERVER="$SITE/pytriton/tritonserver"
MINOR="$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
STUB="$SERVER/python_backend_stubs/$MINOR/triton_python_backend_stub"
[ -x "$STUB" ] || { echo "install-triton: no Python backend stub for Python $MINOR" >&2; exit 1; }
# A symlink, not a copy: the stub finds its bundled libraries through $ORIGIN, which follows the link.
ln -sf "$STUB" "$SERVER/backends/python/triton_python_backend_stub"
LIBDIR="$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR"))')"
"$PY" - "$STAMP" "$SERVER" "$LIBDIR" "$DIR/venv/bin" "$MINOR" <<'PYEOF'
import json, sys
stamp, server, libdir, bindir, minor = sys.argv[1:]
json.dump(
    {
        "tritonserver": f"{server}/bin/tritonserver",
        "backend_directory": f"{server}/backends",
        "ld_library_path": libdir,
        "path_prefix": bindir,
        "python": minor,
    },
    open(stamp, "w"),
    indent=2,
)
PYEOF
echo "install-triton: tritonserver 2.51 in $DIR (Python backend stub for Python $MINOR, libpython from $LIBDIR)"
