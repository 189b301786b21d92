#!/usr/bin/env bash
# Creates (or updates) the project's virtualenv in .venv and installs wanwide with
# its test extras, constrained by requirements/wanwide.lock (the same versions
# everywhere, whatever pip the venv comes with). Idempotent: a second run only checks.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
LOG_TAG=python-env
# shellcheck source=lib.sh
source "$root/hack/lib.sh"
trap 'on_error_report $? "$BASH_COMMAND" $LINENO' ERR
venv=${WANWIDE_VENV:-$root/.venv}
py=${PYTHON:-python3}
lock="$root/requirements/wanwide.lock"
if [[ ! -x $venv/bin/python ]]; then
  "$py" -m venv "$venv"
fi
stamp="$venv/.wanwide-installed"
if [[ ! -f $stamp || $root/pyproject.toml -nt $stamp || $lock -nt $stamp ]]; then
  step "pip install -c requirements/wanwide.lock -e .[test]" "$venv/pip.log"
  "$venv/bin/pip" install --disable-pip-version-check -c "$lock" -e "${root}[test]" >"$venv/pip.log" 2>&1
  touch "$stamp"
  step_end
fi
