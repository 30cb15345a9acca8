#!/bin/sh
# install-deps.sh -- installs the Debian packages npusim needs, only those missing.
# Run as root (or with sudo) on Debian 12.  Idempotent: does nothing when all
# packages are present, so `make run` / `make test` stay fast on a set-up machine.
# GNU parallel runs `simsweep --emit-jobs` in tests/sweep_test.sh and
# tests/parallel_test.sh.  Slurm is not here: scripts/slurm-local.sh installs
# it for tests/slurm_test.sh alone.
set -eu
PACKAGES="build-essential cmake pkg-config libsimgrid-dev libglpk-dev libjansson-dev
libcunit1-dev libtcmalloc-minimal4 python3 python3-matplotlib time clang parallel"
missing=""
for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
