#!/usr/bin/env bash
# Fails unless README contains, word for word (indentation aside), the lines of EXAMPLE between
# "// README-BEGIN TAG" and "// README-END TAG" (TAG defaults to leader).
#   readme_example.sh README.md examples/leader.cpp [TAG]
set -euo pipefail
readme=$1 example=$2 tag=${3:-leader}
strip() { sed 's/^[[:space:]]*//'; }
block=$(sed -n "/README-BEGIN $tag\$/,/README-END $tag\$/p" "$example" | sed '1d;$d' | strip)
[[ -n $block ]] || { echo "$example: no README-BEGIN/README-END $tag block" >&2; exit 1; }
text=$(strip <"$readme")
if [[ $text != *"$block"* ]]; then
    echo "$readme does not contain the example of $example word for word:" >&2
    printf '%s\n' "$block" >&2
    exit 1
fi
echo "$readme contains the example of $example"
