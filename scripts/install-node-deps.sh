#!/usr/bin/env sh
# Installs the Node packages the A2A interoperability test uses (@a2a-js/sdk) into .cache/node
# (only node_modules/ is written, which .gitignore already covers). Needs node >= 20 and npm.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PREFIX="${A2A_JS_PREFIX:-$ROOT/.cache/node}"
mkdir -p "$PREFIX"
npm install --prefix "$PREFIX" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "@a2a-js/sdk@1.3.0"
echo "installed @a2a-js/sdk into $PREFIX/node_modules"
