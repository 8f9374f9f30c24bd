#!/usr/bin/env bash
# Installs what Tessera needs to build, test and run: Debian packages, and from npm Chart.js
# (reports, dashboard) and puppeteer-core (the dashboard's browser test). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(build-essential cmake ninja-build ccache pkg-config git
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libcpp-httplib-dev libssl-dev openssl libsqlite3-dev sqlite3 libgtest-dev libgmock-dev
  libbenchmark-dev  # libssl: TLS in tesserad's front end; openssl: tessera up makes a CA
  libzmq3-dev libmsgpack-dev  # vLLM's KV events (ZeroMQ PUB/SUB of msgpack batches)
  python3 python3-torch nginx  # nginx: the reference proxy of `tessera bench gateway`
  clang-14 libclang-rt-14-dev  # libFuzzer for scripts/fuzz.sh
  prometheus  # prometheus, promtool: the metrics tests scrape and lint every /metrics
  etcd-server etcd-client  # the etcd store: several controllers, one leader (docs/ha.md)
  chromium)  # headless, driven by puppeteer-core: the dashboard's browser tests (label browser)
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
# puppeteer-core never downloads a browser: the tests point it at Debian's /usr/bin/chromium.
if [ ! -f web/node_modules/chart.js/dist/chart.umd.js ] ||
  [ ! -f web/node_modules/puppeteer-core/package.json ]; then
  npm ci --prefix web --no-audit --no-fund
fi
