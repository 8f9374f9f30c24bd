#!/usr/bin/env bash
# Installs Debian's Slurm (slurmctld, slurmd, the client commands) and MUNGE for the
# side-by-side benchmark. Not part of CI: the benchmark does not run there.
# Do not install slurm-wlm-emulator: its front-end build cannot run with Debian's library.
set -euo pipefail
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null; then
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get install -y slurm-wlm munge
