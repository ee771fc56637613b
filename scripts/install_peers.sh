#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the benchmarks' peers (PyTorch, pinned in perf/peers/requirements.txt) into a Python
# virtual environment and checks that PyTorch's CPU flash attention runs there:
#   bash scripts/install_peers.sh [--dry-run] [VENV]
# Standard output gets one line, the export that points the benchmarks at it (RFA_PEER_PYTHON);
# every message, pip's too, goes to standard error. So this sets it in the calling shell:
#   eval "$(bash scripts/install_peers.sh)"
# VENV: where the environment goes; default $RFA_PEER_VENV, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/rfa/peers-venv (outside any build folder, so deleting a build
# keeps it, and shared by every checkout). PyPI's torch brings NVIDIA's CUDA libraries even for
# a CPU: several GB to download and to keep (docs/benchmarks.md has the figures).
# --dry-run: says where the environment is and what would be installed; changes nothing.
# Idempotent: a second run with the same pins installs nothing (VENV/rfa-peers-pins.txt holds
# the pins installed and checked) and only runs the check; changed pins are installed over the
# old ones. pip reads its own settings (PIP_INDEX_URL, ...); its download cache is left out, so
# no wheel is kept twice.
# Needs python3 with venv and ensurepip: Debian's python3-venv is installed when missing.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
requirements=$here/perf/peers/requirements.txt

# The usage text is the header comment above (less its licence line): from its second line
# up to the first line that is not a comment, without the leading "# ".
usage() {
  awk '/SPDX-License-Identifier/ { next } NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' \
    "${BASH_SOURCE[0]}"
}
refuse() {  # exit code, message: the message and the usage on stderr
  { echo "install_peers: $2"; usage; } >&2
  exit "$1"
}

dry_run=0
venv=
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) refuse 2 "unknown option '$1'" ;;
    *) [ -z "$venv" ] || refuse 2 "more than one VENV given ('$venv', '$1')"
       venv=$1 ;;
  esac
  shift
done
venv=${venv:-${RFA_PEER_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/rfa/peers-venv}}
case "$venv" in
  /*) ;;
  *) venv=$PWD/$venv ;;  # the export must hold from any folder
esac
venv=${venv%/}
[ -n "$venv" ] || refuse 2 "VENV cannot be /"
exec 3>&1 1>&2  # standard output keeps the export alone; 3 is where it goes
# The benchmarks run RFA_PEER_PYTHON through the shell, which would split such a path.
[[ "$venv" =~ [[:space:]] ]] && refuse 2 "VENV '$venv' holds white space, which RFA_PEER_PYTHON cannot"

python=$venv/bin/python
stamp=$venv/rfa-peers-pins.txt
say() { echo "install_peers: $*"; }
# The pins alone (no comments, no blank lines, sorted): editing a comment installs nothing.
pins=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$requirements" | LC_ALL=C sort)
[ -n "$pins" ] || { echo "install_peers: $requirements pins nothing" >&2; exit 1; }
pin_list=$(echo "$pins" | tr '\n' ' ')
pin_list=${pin_list% }

# The environment: a new one, or one this script (or anyone) made with python -m venv; a folder
# that holds something else is left alone.
if [ -e "$venv" ] && [ ! -d "$venv" ]; then
  echo "install_peers: $venv exists and is not a folder" >&2
  exit 1
fi
create=0
if [ ! -e "$venv/pyvenv.cfg" ]; then
  if [ -d "$venv" ] && [ -n "$(ls -A "$venv")" ]; then
    echo "install_peers: $venv holds files but no virtual environment (no pyvenv.cfg); pick another VENV" >&2
    exit 1
  fi
  create=1
elif [ ! -x "$python" ] || ! "$python" -c 'pass' >/dev/null 2>&1; then
  echo "install_peers: $python does not run (its base Python moved?); remove $venv and run again" >&2
  exit 1
fi
# The oldest Python the pins install on (torch 2.15.0's and numpy 2.4.6's floor): an older one
# gets as far as pip finding no such version, which names no cause.
min_python=3.11
base=$python hint="remove $venv and run again with a newer python3"
[ "$create" -eq 1 ] && base=$(command -v python3 || echo python3) hint="put a newer python3 first on PATH"
if ! "$base" -c "import sys; sys.exit(sys.version_info[:2] < (${min_python/./, }))" 2>/dev/null; then
  echo "install_peers: $base is not Python $min_python or newer, which the pins need: $hint" >&2
  exit 1
fi
install=1
[ "$create" -eq 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$pins" ] && install=0

# python -m venv needs ensurepip, which Debian ships apart in python3-venv.
has_venv() { python3 -c 'import ensurepip, venv' >/dev/null 2>&1; }
if [ "$create" -eq 1 ] && ! has_venv; then
  if [ "$dry_run" -eq 1 ]; then
    say "would install Debian's python3-venv (python3 lacks ensurepip)"
  else
    # shellcheck source=scripts/install_debian_packages.sh
    source "$here/scripts/install_debian_packages.sh"
    install_debian_packages install_peers python3-venv
    has_venv || { echo "install_peers: python3 ($(command -v python3)) still lacks venv or ensurepip" >&2; exit 1; }
  fi
fi

pip_install=(-m pip install --no-cache-dir --disable-pip-version-check -r "$requirements")
if [ "$dry_run" -eq 1 ]; then
  say "dry run: nothing is changed"
  if [ "$create" -eq 1 ]; then say "would create the virtual environment $venv with $(command -v python3)"
  else say "virtual environment $venv exists"; fi
  if [ "$install" -eq 1 ]; then say "would install $pin_list: $python ${pip_install[*]}"
  else say "$venv has $pin_list; nothing to install"; fi
  echo "export RFA_PEER_PYTHON=$python" >&3
  exit 0
fi

start=$SECONDS
if [ "$create" -eq 1 ]; then
  say "creating the virtual environment $venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
fi
if [ "$install" -eq 1 ]; then
  say "installing $pin_list (PyPI's torch downloads several GB)"
  rm -f "$stamp"  # written again once the new pins pass the check below
  "$python" "${pip_install[@]}"
fi

# The check: PyTorch's CPU flash kernel, the one the benchmarks measure, on a small causal
# problem against the plain formula.
check='
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
torch.manual_seed(0)
torch.set_num_threads(1)
q, k, v = (torch.randn(1, 2, 64, 32) for _ in range(3))
with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
scores = (q @ k.transpose(-1, -2)) / 32 ** 0.5
scores = scores.masked_fill(torch.ones(64, 64, dtype=torch.bool).triu(1), float("-inf"))
err = (out - torch.softmax(scores, -1) @ v).abs().max().item()
assert err < 1e-4, f"CPU flash SDPA is off by {err:.1e}"
print(f"torch {torch.__version__}: CPU flash SDPA runs (largest error {err:.1e})")
'
if ! "$python" -c "$check"; then
  echo "install_peers: the check failed: $python cannot run PyTorch's CPU flash attention" >&2
  exit 1
fi
if [ "$install" -eq 1 ]; then
  echo "$pins" >"$stamp"
  say "installed $pin_list into $venv in $((SECONDS - start)) s; it takes $(du -sh "$venv" | cut -f1)"
else
  say "$venv has $pin_list; nothing to install"
fi
echo "export RFA_PEER_PYTHON=$python" >&3
