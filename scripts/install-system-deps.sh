#!/usr/bin/env bash
# Installs the Debian packages listed in scripts/system-packages.txt that are not installed yet (load balancer,
# Prometheus and promtool, Chromium and its driver for the console's browser tests). Idempotent; needs root or
# sudo. Without apt-get (not Debian), says what it would need and exits 0: the tests that need a missing
# program then skip with a reason, except under CI=true, where they fail.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mapfile -t wanted < <(grep -v '^\s*#' "$ROOT/scripts/system-packages.txt" | sed '/^\s*$/d')
missing=()
for pkg in "${wanted[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && { echo "system packages present: ${wanted[*]}"; exit 0; }
if ! command -v apt-get >/dev/null 2>&1; then
  echo "apt-get not found; install these for the full test suite: ${missing[*]}"; exit 0
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed: ${missing[*]}"
