# Sourced by hack/ scripts: creates or refreshes the project's virtualenv and puts it on PATH.
sro_venv() {
  local root venv stamp
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  venv="${SRO_VENV:-$root/.venv}"
  stamp="$venv/.sro-installed"
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  if [ ! -f "$stamp" ] || [ "$root/pyproject.toml" -nt "$stamp" ]; then
    echo "== installing Python dependencies into $venv"
    "$venv/bin/pip" install -q --upgrade pip >/dev/null
    "$venv/bin/pip" install -q -e "$root[test,lint]"
    touch "$stamp"
  fi
  export PATH="$venv/bin:$PATH"
  export VIRTUAL_ENV="$venv"
}
