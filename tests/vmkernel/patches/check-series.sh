#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Check that the test kernel's patch series applies, in series order, to a
# pristine kernel tree; name the first patch that does not.
#
#   check-series.sh [--apply] TREE
#
# Without --apply TREE is not touched: the files the series touches are
# copied to a scratch directory and the patches applied there one after the
# other (each one's context includes the ones before it, so a --dry-run of
# every patch against the untouched tree would not do). With --apply the
# series is then applied to TREE itself, after the same check, so a tree is
# never left half patched. Fuzz is 0: a patch that only applies with fuzz is
# reported, since kvm's build applies with plain `patch -p1`.
# Exit status: 0 all apply, 1 a patch does not (named on stderr), 2 usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
apply=no
if [ "${1-}" = --apply ]; then
        apply=yes
        shift
fi
if [ $# -ne 1 ] || [ ! -d "$1" ]; then
        echo "usage: $0 [--apply] KERNEL-TREE" >&2
        exit 2
fi
tree=$(cd "$1" && pwd)
if [ ! -f "$tree/Makefile" ] || [ ! -d "$tree/mm" ]; then
        echo "$0: $tree: not a kernel source tree (no Makefile or mm/)" >&2
        exit 2
fi

series=$here/series
patches=
n=0
while IFS= read -r p || [ -n "$p" ]; do
        n=$((n + 1))
        case $p in
        '' | '#'*) continue ;;
        */* | *' '*)
                echo "$series:$n: '$p': not a file name in $here" >&2
                exit 1
                ;;
        esac
        if [ ! -f "$here/$p" ]; then
                echo "$series:$n: $p: no such patch in $here" >&2
                exit 1
        fi
        patches="$patches $p"
done <"$series"
if [ -z "$patches" ]; then
        echo "$series: lists no patches" >&2
        exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/check-series.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM HUP

# The files the series touches, from the +++ lines ("b/path"), copied from
# the tree with their directories; files the series creates are absent.
for p in $patches; do
        sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$here/$p"
done | sort -u | while IFS= read -r f; do
        if [ -e "$tree/$f" ]; then
                mkdir -p "$scratch/$(dirname "$f")"
                cp -p "$tree/$f" "$scratch/$f"
        fi
done

for p in $patches; do
        if ! out=$(patch -p1 --forward --batch --fuzz=0 --dry-run -d "$scratch" -i "$here/$p" 2>&1); then
                echo "$0: $p does not apply to $tree (after the patches before it in $series):" >&2
                echo "$out" | sed 's/^/  /' >&2
                exit 1
        fi
        patch -p1 --forward --batch --fuzz=0 --silent -d "$scratch" -i "$here/$p" >/dev/null
done

if [ $apply = yes ]; then
        for p in $patches; do
                if ! out=$(patch -p1 --forward --batch --fuzz=0 -d "$tree" -i "$here/$p" 2>&1); then
                        echo "$0: $p failed to apply to $tree although the check passed:" >&2
                        echo "$out" | sed 's/^/  /' >&2
                        exit 1
                fi
        done
        echo "applied $(echo $patches | wc -w) patches to $tree"
else
        echo "all $(echo $patches | wc -w) patches of $series apply to $tree"
fi
