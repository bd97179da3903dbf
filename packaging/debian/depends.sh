#!/usr/bin/env bash
# Prints the Depends of a binary, as dpkg-shlibdeps would for this one: the Debian
# package of each shared library it links (libc6 at the newest GLIBC_ symbol version
# it uses).
set -euo pipefail
bin="$1"
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
deps=()
for lib in $(objdump -p "$bin" | awk '/NEEDED/ {print $2}'); do
  # Every reader below reads its input to the end: a reader that stops early (awk's
  # `exit`, `head -1`) kills the writer with SIGPIPE once its output outgrows the pipe's
  # buffer, and under pipefail that fails the build (exit 141 on a machine with a large
  # library cache).
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && !found {print $NF; found = 1}')
  [ -n "$path" ] || { echo "depends.sh: $lib not found" >&2; exit 1; }
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | sed -n '1s/:.*//p') ||
    pkg=$(dpkg -S "$path" | sed -n '1s/:.*//p')
  case "$pkg" in
    libc6) deps+=("libc6 (>= $glibc)") ;;
    *) deps+=("$pkg") ;;
  esac
done
printf '%s\n' "${deps[@]}" | sort -u | paste -sd, - | sed 's/,/, /g'
