# The arguments the callgrind scripts share (sourced): `callgrind_opts N1 N2 "$@"` sets
# n1 and n2 (these defaults, or --n1 / --n2), keep (--keep DIR: keep each callgrind.out)
# and bins (every other argument: the binaries to compare); `callgrind_args` the same,
# at least one binary required.
callgrind_opts() {
  n1=$1; n2=$2; shift 2
  bins=(); keep=
  while [ $# -gt 0 ]; do
    case "$1" in
      --n1) n1=$2; shift 2;;
      --n2) n2=$2; shift 2;;
      --keep) keep=$2; shift 2;;
      *) bins+=("$1"); shift;;
    esac
  done
}

callgrind_args() {
  callgrind_opts "$@"
  [ ${#bins[@]} -gt 0 ] || { echo "usage: $0 BIN [BIN...] [--n1 N] [--n2 N] [--keep DIR]" >&2; exit 2; }
}
