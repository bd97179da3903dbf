#!/usr/bin/env bash
# Prints the Depends of a binary, as dpkg-shlibdeps would for this one: the Debian
# package of each shared library it links (libc6 at the newest GLIBC_ symbol version
# it uses).
set -euo pipefail
bin="$1"
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
deps=()
for lib in $(objdump -p "$bin" | awk '/NEEDED/ {print $2}'); do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l {print $NF; exit}')
  [ -n "$path" ] || { echo "depends.sh: $lib not found" >&2; exit 1; }
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1) ||
    pkg=$(dpkg -S "$path" | head -1 | cut -d: -f1)
  case "$pkg" in
    libc6) deps+=("libc6 (>= $glibc)") ;;
    *) deps+=("$pkg") ;;
  esac
done
printf '%s\n' "${deps[@]}" | sort -u | paste -sd, - | sed 's/,/, /g'
