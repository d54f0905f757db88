# shellcheck shell=bash
# Helpers for hack/image, sourced (bash). Nothing here runs on its own.
#
# They exist because this project builds and tests real OCI images on machines
# with no container engine and no reachable image registry: buildah (chroot
# isolation, vfs storage) builds, a Debian root filesystem made with debootstrap
# is the base image, and Debian's docker-registry serves a loopback registry.

# image_step NAME COMMAND...: runs one step and prints how long it took, so the
# cost of a cold and a warm run can be read straight from the output. The step
# runs under the caller's `set -e`: a failing command ends the script, and the
# last "== hack/image: NAME" line says in which step.
image_step() {
  local name=$1 start tenths line
  shift
  start=$(date +%s%N)
  echo "== hack/image: $name"
  "$@"
  tenths=$(( ($(date +%s%N) - start) / 100000000 ))
  line=$(printf '%-32s %5d.%ds' "$name" $(( tenths / 10 )) $(( tenths % 10 )))
  echo "hack/image: $line"
  IMAGE_TIMINGS+=("$line")
}

# image_need_packages PKG...: installs the Debian packages that are missing.
# `apt-get update` runs only when something has to be installed.
image_need_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && { echo "all present: $*"; return 0; }
  if [ "$(id -u)" -ne 0 ]; then
    echo "hack/image: need root to install ${missing[*]}" >&2
    return 1
  fi
  echo "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# image_debian_mirror: prints the URI of the machine's Debian archive (the one
# serving the release suite, not -security or -updates), read from its apt
# sources at run time so that no mirror host is written into the project.
image_debian_mirror() {
  local suite=$1 f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: blank-line separated stanzas of "Key: value" lines.
    uri=$(awk -v suite="$suite" '
      BEGIN { RS = ""; FS = "\n" }
      {
        uris = ""; ok = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", $i); split($i, u, /[ \t]+/); uris = u[1] }
          if ($i ~ /^Suites:/) {
            sub(/^Suites:[ \t]*/, "", $i); n = split($i, s, /[ \t]+/)
            for (j = 1; j <= n; j++) if (s[j] == suite) ok = 1
          }
        }
        if (ok && uris != "") { print uris; exit }
      }' "$f")
    [ -n "$uri" ] && { echo "$uri"; return 0; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri=$(awk -v suite="$suite" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ ) break;
      if ($(i + 1) == suite) { print $i; exit } }' "$f")
    [ -n "$uri" ] && { echo "$uri"; return 0; }
  done
  echo "hack/image: no apt source for Debian '$suite' found in /etc/apt" >&2
  return 1
}

# image_free_port: prints a TCP port on 127.0.0.1 that nothing listens on now.
image_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# image_http_status METHOD URL [ACCEPT]: prints the HTTP status of one request
# (000 when the server does not answer). python3 rather than curl: it is on
# every machine this project runs on.
image_http_status() {
  python3 - "$@" <<'PY'
import sys, urllib.error, urllib.request
method, url = sys.argv[1], sys.argv[2]
headers = {"Accept": sys.argv[3]} if len(sys.argv) > 3 else {}
try:
    with urllib.request.urlopen(urllib.request.Request(url, method=method, headers=headers), timeout=5) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except OSError:
    print("000")
PY
}

# image_wait_http URL SECONDS: waits until GET URL answers 200, or fails.
image_wait_http() {
  local url=$1 deadline=$(( $(date +%s) + $2 ))
  until [ "$(image_http_status GET "$url")" = 200 ]; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "hack/image: $url not answering after $2s" >&2; return 1; }
    sleep 0.2
  done
}

# image_start_registry DIR: starts Debian's docker-registry on a free loopback port,
# storage and log under DIR, and waits until it answers; sets registry_pid and
# registry_port (the caller's cleanup stops it).
image_start_registry() {
  local dir=$1
  registry_port=$(image_free_port)
  mkdir -p "$dir"
  cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
http:
  addr: 127.0.0.1:$registry_port
EOF
  docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 &
  registry_pid=$!
  image_wait_http "http://127.0.0.1:$registry_port/v2/" 30 || { cat "$dir/log" >&2; return 1; }
}
