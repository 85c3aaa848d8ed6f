# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced: a Debian 12 (bookworm) tree made by debootstrap, built once and
# reused while its inputs stay the same. Used by the e2e suite (booted under
# systemd-nspawn) and the vmkernel suite (the root filesystem of the QEMU
# guests).
#   debian_lib_packages FILE...   the Debian packages holding the shared
#                                 libraries FILE... link against, comma-separated
#   debian_mirror                 the Debian mirror apt uses here
#   debian_tree_ensure TREE PACKAGES
#                                 (re)builds TREE with debootstrap --variant=minbase
#                                 --include=PACKAGES unless it was built from
#                                 the same inputs; returns 77 without debootstrap,
#                                 1 on failure (log: TREE.debootstrap.log), leaving
#                                 no half tree. The caller holds a lock.

debian_lib_packages() {
        local f
        for f in $(ldd "$@" | awk '/=> \//{print $3}' | sort -u); do
                dpkg -S "$f" 2>/dev/null || dpkg -S "${f#/usr}" 2>/dev/null || dpkg -S "/usr$f" 2>/dev/null
        done | cut -d: -f1 | sort -u | tr '\n' ',' | sed 's/,$//'
}
# Only Debian's archive is reachable: use the mirror apt uses here.
debian_mirror() {
        local m
        m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
                grep -v '^ *#' | grep -o -E 'https?://[^ ]*/debian/?( |$)' | grep -v security | head -1 | tr -d ' ')
        echo "${m:-http://deb.debian.org/debian}"
}
debian_tree_ensure() {
        local tree=$1 packages=$2 mirror want t0
        mirror=$(debian_mirror)
        want="bookworm minbase $packages $mirror"
        [ "$(cat "$tree/.ksmtuned2-tree" 2>/dev/null)" = "$want" ] && return 0
        if ! command -v debootstrap >/dev/null; then
                echo "debootstrap not installed and no cached tree in $tree" >&2
                return 77
        fi
        echo "Building the Debian 12 tree with debootstrap from $mirror (once; cached in $tree)"
        t0=$(date +%s)
        rm -rf "$tree.tmp" "$tree"
        mkdir -p "$(dirname "$tree")"
        if ! debootstrap --variant=minbase --include="$packages" bookworm "$tree.tmp" "$mirror" \
                        >"$tree.debootstrap.log" 2>&1; then
                tail -20 "$tree.debootstrap.log" >&2
                rm -rf "$tree.tmp"
                echo "debootstrap failed (log: $tree.debootstrap.log)" >&2
                return 1
        fi
        echo "$want" > "$tree.tmp/.ksmtuned2-tree"
        mv "$tree.tmp" "$tree"
        echo "debootstrap took $(( $(date +%s) - t0 )) s"
}
