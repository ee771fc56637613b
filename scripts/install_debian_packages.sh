#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the scripts that need Debian packages (quickstart.sh, fuzz.sh, install_peers.sh):
#   install_debian_packages WHO PACKAGE...
# installs those not installed yet, as root or through sudo; otherwise says what to run and
# exits. WHO prefixes the messages. Installs nothing when everything is there.
install_debian_packages() {
  local who=$1
  shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "$who: installing ${missing[*]}"
  # Another installer at work (CI's background build installing Clang, say) is waited for, up to
  # 10 minutes, instead of failing on its lock.
  local wait_for_lock=(-o DPkg::Lock::Timeout=600)
  if [ "$(id -u)" -eq 0 ]; then
    apt-get "${wait_for_lock[@]}" update -qq
    DEBIAN_FRONTEND=noninteractive apt-get "${wait_for_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"
  elif command -v sudo >/dev/null; then
    sudo apt-get "${wait_for_lock[@]}" update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get "${wait_for_lock[@]}" install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "$who: missing Debian packages; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
}
