#!/usr/bin/env bash
# Includes point down only: launcher > solvers > io > comm (docs/layout.md). Reads every #include line of
# the sources under SOURCE_DIR/comm, io and solvers and names, file:line, each one that points up a layer:
# comm/ including io/, solvers/ or launcher/; io/ including solvers/ or launcher/; solvers/ including launcher/.
# A quoted include is looked up beside the including file first (as the compiler does), then from the
# source root (the include directory of every spotrun target).
# Usage: check_layering.sh SOURCE_DIR. Exit 0: none; 1: some (listed); 2: bad usage or nothing to check.
set -u
root=${1:-}
if [[ -z $root || ! -d $root ]]; then
  echo "usage: check_layering.sh SOURCE_DIR (a spotrun source tree)" >&2
  exit 2
fi
root=$(cd "$root" && pwd -P)

# The layer of a path relative to the root, as a number (higher is above), or -1 when it is in none.
layer_rank() {
  case ${1%%/*} in
    comm) echo 0 ;;
    io) echo 1 ;;
    solvers) echo 2 ;;
    launcher) echo 3 ;;
    *) echo -1 ;;
  esac
}

files=0
includes=0
bad=0
re='^[[:space:]]*#[[:space:]]*include[[:space:]]*([<"])([^">]+)[">]'
for top in comm io solvers; do
  [[ -d $root/$top ]] || continue
  own=$(layer_rank "$top")
  while IFS= read -r -d '' file; do
    files=$((files + 1))
    rel=${file#"$root"/}
    lineno=0
    while IFS= read -r text || [[ -n $text ]]; do
      lineno=$((lineno + 1))
      [[ $text =~ $re ]] || continue
      includes=$((includes + 1))
      quote=${BASH_REMATCH[1]}
      target=${BASH_REMATCH[2]}
      dir=$(dirname "$file")
      if [[ $quote == '"' && -e $dir/$target ]]; then
        # Beside the including file: its own folder (same layer) unless it climbs out with "..".
        [[ $target == *..* ]] || continue
        resolved=$(realpath -m --relative-to="$root" "$dir/$target")
      else
        resolved=$target
      fi
      to=$(layer_rank "$resolved")
      if ((to > own)); then
        echo "$rel:$lineno: includes \"$target\" (${resolved%%/*}/ is above ${top}/): includes point down only," \
             "launcher > solvers > io > comm"
        bad=$((bad + 1))
      fi
    done <"$file"
  done < <(find "$root/$top" -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.hh' -o -name '*.cc' \
                 -o -name '*.cu' -o -name '*.cuh' -o -name '*.inc' -o -name '*.in' \) -print0 | sort -z)
done

if ((files == 0)); then
  echo "layering: no sources under $root/comm, $root/io or $root/solvers: nothing checked" >&2
  exit 2
fi
if ((bad > 0)); then
  echo "layering: FAILED: $bad upward include(s) in $files files ($includes includes read)"
  exit 1
fi
echo "layering: ok: $includes includes in $files files point down only"
