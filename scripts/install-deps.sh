#!/usr/bin/env bash
# Installs what Tessera needs to build, test and run: Debian packages, and Chart.js from npm
# for the reports. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libcpp-httplib-dev libssl-dev openssl libsqlite3-dev sqlite3 libgtest-dev libgmock-dev
  libbenchmark-dev python3 python3-torch nginx)  # nginx: the reference proxy of `tessera bench gateway`
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js may come from another source that bundles npm; only ask Debian for it when absent.
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
if [ ! -f web/node_modules/chart.js/dist/chart.umd.js ]; then
  npm ci --prefix web --no-audit --no-fund
fi
