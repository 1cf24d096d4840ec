#!/usr/bin/env bash
# Print the path of a Python >= 3.12 interpreter, preferring the version pinned in .python-version.
# Exit 1 with a clear message when none is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(tr -d '[:space:]' < .python-version)
candidates=()
if command -v pyenv >/dev/null 2>&1; then
  root=$(pyenv root)
  candidates+=("$root/versions/$want/bin/python" "$root"/versions/3.1[2-9]*/bin/python)
fi
candidates+=("${HOME}/.pyenv/versions/$want/bin/python" /root/.pyenv/versions/3.1[2-9]*/bin/python)
for name in python3.14 python3.13 python3.12 python3; do
  p=$(command -v "$name" 2>/dev/null) && candidates+=("$p")
done
for py in "${candidates[@]}"; do
  [[ -x $py ]] || continue
  if "$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null; then
    echo "$py"
    exit 0
  fi
done
cat >&2 <<MSG
TraceTrack needs Python 3.12 or newer (Django 6 refuses older versions), and none was found.
.python-version pins $want. Install it, for example with:  pyenv install $want
MSG
exit 1
