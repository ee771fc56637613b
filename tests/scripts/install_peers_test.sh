#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# scripts/install_peers.sh's plumbing, without downloading anything: python3, the environment's
# python, dpkg-query, apt-get and sudo are stand-ins that log what they are asked to do, and the
# script runs from a copy of its tree so that its pins can be edited. Checked: the arguments,
# where the environment goes (argument, then RFA_PEER_VENV, then XDG_CACHE_HOME or ~/.cache),
# --dry-run changing nothing, a second run installing nothing, changed pins installed again, a
# failed install or check leaving no stamp, Debian's python3-venv installed when ensurepip is
# missing, a python3 too old for the pins refused, a folder that is not an environment left
# alone, and the export alone on standard output.
#   bash install_peers_test.sh SOURCE_DIR
set -uo pipefail
src=${1:?usage: install_peers_test.sh SOURCE_DIR}
# shellcheck source=tests/scripts/checks.sh
source "$(dirname "${BASH_SOURCE[0]}")/checks.sh"

tree=$tmp/tree
mkdir -p "$tree/scripts" "$tree/perf/peers"
cp "$src/scripts/install_peers.sh" "$src/scripts/install_debian_packages.sh" "$tree/scripts/"
cp "$src/perf/peers/requirements.txt" "$tree/perf/peers/"
script=$tree/scripts/install_peers.sh

export FAKE_LOG=$tmp/calls.log
fakes=$tmp/bin
mkdir -p "$fakes"
# The environment's python: pip installs are logged (FAKE_PIP_FAIL fails them); the check
# prints a torch version (FAKE_CHECK_FAIL fails it).
cat >"$fakes/venv-python" <<'FAKE'
#!/bin/bash
case "$1 $2" in
  "-m pip") echo "pip $*" >>"$FAKE_LOG"; echo "Successfully installed (stand-in)"; [ -z "${FAKE_PIP_FAIL:-}" ] ;;
  "-c pass") exit 0 ;;
  "-c import sys;"*) exit 0 ;;  # the version check
  -c*) echo "check" >>"$FAKE_LOG"; [ -z "${FAKE_CHECK_FAIL:-}" ] && echo "torch 0.0-fake: CPU flash SDPA runs" ;;
  *) exit 1 ;;
esac
FAKE
# python3: "-m venv DIR" makes an environment whose python is the stand-in above; ensurepip is
# missing until the stand-in apt-get installs python3-venv (FAKE_NO_ENSUREPIP); its version
# is too old with FAKE_OLD_PYTHON.
cat >"$fakes/python3" <<FAKE
#!/bin/bash
case "\$1" in
  -m) echo "venv \$3" >>"\$FAKE_LOG"
      mkdir -p "\$3/bin" && touch "\$3/pyvenv.cfg" && cp "$fakes/venv-python" "\$3/bin/python" ;;
  -c) case "\$2" in
        *version_info*) [ -z "\${FAKE_OLD_PYTHON:-}" ] ;;
        *) [ -z "\${FAKE_NO_ENSUREPIP:-}" ] || [ -e "$tmp/python3-venv-installed" ] ;;
      esac ;;
  *) exit 1 ;;
esac
FAKE
cat >"$fakes/apt-get" <<FAKE
#!/bin/bash
echo "apt-get \$*" >>"\$FAKE_LOG"
[[ " \$* " == *" python3-venv "* ]] && touch "$tmp/python3-venv-installed"
exit 0
FAKE
printf '#!/bin/bash\nexit 1\n' >"$fakes/dpkg-query"  # nothing is installed
printf '#!/bin/bash\nexec "$@"\n' >"$fakes/sudo"
chmod +x "$fakes"/*

home=$tmp/home
# run OUT ARGS...: the script's standard output in OUT.stdout, all it wrote in OUT (standard
# error, then standard output); FAKE_ENV adds to its environment.
run() {
  local out=$1 rc
  shift
  : >"$FAKE_LOG"
  # shellcheck disable=SC2086  # FAKE_ENV is a list of assignments
  (cd "$tmp" && env -u RFA_PEER_VENV -u XDG_CACHE_HOME HOME="$home" PATH="$fakes:$PATH" ${FAKE_ENV:-} \
     bash "$script" "$@") >"$out.stdout" 2>"$out.stderr"
  rc=$?
  cat "$out.stderr" "$out.stdout" >"$out"
  return $rc
}
stdout() { cat "$1.stdout"; }
calls() { grep -c "$1" "$FAKE_LOG"; }

# 1. Arguments.
run "$tmp/help.txt" --help
check "--help: exit code 0" [ $? -eq 0 ]
check "--help: the usage names the script and its options" grep -q "install_peers.sh \[--dry-run\] \[VENV\]" "$tmp/help.txt"
run "$tmp/bad.txt" --frobnicate
check "an unknown option: exit code 2" [ $? -eq 2 ]
check "an unknown option: named" grep -q "unknown option '--frobnicate'" "$tmp/bad.txt"
run "$tmp/two.txt" a b
check "two VENVs: exit code 2" [ $? -eq 2 ]
run "$tmp/space.txt" "$tmp/with space"
check "a VENV with a space: exit code 2 (the benchmarks split RFA_PEER_PYTHON)" [ $? -eq 2 ]

# 2. Where the environment goes, with --dry-run (which creates and installs nothing).
run "$tmp/dry.txt" --dry-run
check "dry run: exit code 0" [ $? -eq 0 ]
check "dry run: the default is ~/.cache/rfa/peers-venv" \
  [ "$(stdout "$tmp/dry.txt")" = "export RFA_PEER_PYTHON=$home/.cache/rfa/peers-venv/bin/python" ]
check "dry run: says it would create and install the pins" \
  grep -q "would create .*would install .*torch==" <(tr '\n' ' ' <"$tmp/dry.txt")
check "dry run: nothing created" [ ! -e "$home/.cache" ]
check "dry run: nothing run" [ ! -s "$FAKE_LOG" ]
FAKE_ENV="XDG_CACHE_HOME=$tmp/xdg" run "$tmp/xdg.txt" --dry-run
check "XDG_CACHE_HOME moves the default" \
  [ "$(stdout "$tmp/xdg.txt")" = "export RFA_PEER_PYTHON=$tmp/xdg/rfa/peers-venv/bin/python" ]
FAKE_ENV="RFA_PEER_VENV=$tmp/from-env XDG_CACHE_HOME=$tmp/xdg" run "$tmp/env.txt" --dry-run
check "RFA_PEER_VENV comes before the default" \
  [ "$(stdout "$tmp/env.txt")" = "export RFA_PEER_PYTHON=$tmp/from-env/bin/python" ]
FAKE_ENV="RFA_PEER_VENV=$tmp/from-env" run "$tmp/arg.txt" --dry-run "$tmp/from-arg/"
check "the argument comes before RFA_PEER_VENV (trailing / dropped)" \
  [ "$(stdout "$tmp/arg.txt")" = "export RFA_PEER_PYTHON=$tmp/from-arg/bin/python" ]
run "$tmp/rel.txt" relative/venv --dry-run
check "a relative VENV is exported as an absolute path" \
  [ "$(stdout "$tmp/rel.txt")" = "export RFA_PEER_PYTHON=$tmp/relative/venv/bin/python" ]

# 3. An install, then a second run that installs nothing.
venv=$tmp/peers
run "$tmp/first.txt" "$venv"
check "install: exit code 0" [ $? -eq 0 ]
check "install: one environment made" [ "$(calls "^venv $venv$")" -eq 1 ]
check "install: one pip install of the requirements" \
  [ "$(calls "^pip -m pip install .*-r $tree/perf/peers/requirements.txt")" -eq 1 ]
check "install: one check" [ "$(calls "^check$")" -eq 1 ]
check "install: pip keeps no second copy of the wheels" grep -q -- "--no-cache-dir" "$FAKE_LOG"
check "install: the stamp holds the pins" grep -qx "torch==[0-9.]*" "$venv/rfa-peers-pins.txt"
check "install: the check's line is shown, on standard error" grep -q "CPU flash SDPA runs" "$tmp/first.txt.stderr"
check "install: the export alone on standard output" [ "$(stdout "$tmp/first.txt")" = "export RFA_PEER_PYTHON=$venv/bin/python" ]
check "install: pip's output on standard error" grep -q "^Successfully installed" "$tmp/first.txt.stderr"
run "$tmp/second.txt" "$venv"
check "second run: exit code 0" [ $? -eq 0 ]
check "second run: no environment made" [ "$(calls "^venv ")" -eq 0 ]
check "second run: nothing installed" [ "$(calls "^pip ")" -eq 0 ]
check "second run: the check run" [ "$(calls "^check$")" -eq 1 ]
check "second run: says nothing to install" grep -q "nothing to install" "$tmp/second.txt"
check "second run: the same export" [ "$(stdout "$tmp/second.txt")" = "export RFA_PEER_PYTHON=$venv/bin/python" ]
run "$tmp/dry2.txt" --dry-run "$venv"
check "dry run over an install: nothing to install" grep -q "nothing to install" "$tmp/dry2.txt"
check "dry run over an install: nothing run" [ ! -s "$FAKE_LOG" ]

# 4. Pins: a comment changes nothing; a new pin installs again, into the same environment.
echo "# a comment" >>"$tree/perf/peers/requirements.txt"
run "$tmp/comment.txt" "$venv"
check "an edited comment: nothing installed" [ "$(calls "^pip ")" -eq 0 ]
echo "stand-in-a==1.0" >>"$tree/perf/peers/requirements.txt"
run "$tmp/dry3.txt" --dry-run "$venv"
check "a new pin, dry run: would install it" grep -q "would install .*stand-in-a==1.0" "$tmp/dry3.txt"
run "$tmp/pins.txt" "$venv"
check "a new pin: installed" [ "$(calls "^pip ")" -eq 1 ]
check "a new pin: no new environment" [ "$(calls "^venv ")" -eq 0 ]
check "a new pin: in the stamp" grep -qx "stand-in-a==1.0" "$venv/rfa-peers-pins.txt"

# 5. Failures leave no stamp, so the next run installs again.
echo "stand-in-b==1.0" >>"$tree/perf/peers/requirements.txt"
FAKE_ENV="FAKE_PIP_FAIL=1" run "$tmp/pipfail.txt" "$venv"
check "pip fails: nonzero exit code" [ $? -ne 0 ]
check "pip fails: no stamp" [ ! -e "$venv/rfa-peers-pins.txt" ]
FAKE_ENV="FAKE_CHECK_FAIL=1" run "$tmp/checkfail.txt" "$venv"
check "the check fails: nonzero exit code" [ $? -ne 0 ]
check "the check fails: no stamp" [ ! -e "$venv/rfa-peers-pins.txt" ]
check "the check fails: nothing on standard output" [ ! -s "$tmp/checkfail.txt.stdout" ]
check "the check fails: said so" grep -q "the check failed" "$tmp/checkfail.txt"
run "$tmp/retry.txt" "$venv"
check "after a failure: installed again" [ "$(calls "^pip ")" -eq 1 ]
check "after a failure: stamped" grep -qx "stand-in-b==1.0" "$venv/rfa-peers-pins.txt"

# 6. Debian's python3-venv: installed through the helper when python3 lacks ensurepip; only
#    reported by a dry run.
FAKE_ENV="FAKE_NO_ENSUREPIP=1" run "$tmp/noensure-dry.txt" --dry-run "$tmp/peers2"
check "no ensurepip, dry run: says it would install python3-venv" \
  grep -q "would install Debian's python3-venv" "$tmp/noensure-dry.txt"
check "no ensurepip, dry run: runs nothing" [ ! -s "$FAKE_LOG" ]
FAKE_ENV="FAKE_NO_ENSUREPIP=1" run "$tmp/noensure.txt" "$tmp/peers2"
check "no ensurepip: exit code 0" [ $? -eq 0 ]
check "no ensurepip: apt-get installs python3-venv" grep -q "^apt-get .*install .*python3-venv" "$FAKE_LOG"
check "no ensurepip: then the environment is made" [ "$(calls "^venv $tmp/peers2$")" -eq 1 ]

# 7. A python3 older than the pins allow: said before anything is made.
FAKE_ENV="FAKE_OLD_PYTHON=1" run "$tmp/old.txt" "$tmp/peers3"
check "an old python3: nonzero exit code" [ $? -ne 0 ]
check "an old python3: the version it needs named" grep -q "not Python 3\.[0-9]* or newer" "$tmp/old.txt"
check "an old python3: nothing made" [ ! -e "$tmp/peers3" ]

# 8. A folder that is not an environment is left alone.
mkdir -p "$tmp/other" && touch "$tmp/other/keep.txt"
run "$tmp/other.txt" "$tmp/other"
check "a folder with other files: nonzero exit code" [ $? -ne 0 ]
check "a folder with other files: untouched" [ "$(ls -A "$tmp/other")" = "keep.txt" ]
check "a folder with other files: nothing run" [ ! -s "$FAKE_LOG" ]
check "a folder with other files: said so" grep -q "no virtual environment" "$tmp/other.txt"

checks_done "$tmp/first.txt"
