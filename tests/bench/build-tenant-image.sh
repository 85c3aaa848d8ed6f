#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-tenant-image.sh: the boot image of the tuning benchmark's QEMU tenants
# (scenario Q1), made once and printed as two lines "kernel PATH" and
# "initrd PATH".
#
#   kernel  Debian's own amd64 kernel (the package linux-image-amd64 depends
#           on), its vmlinuz taken out of the .deb with dpkg-deb: nothing is
#           installed, this machine has no /boot kernel of its own
#   initrd  a newc cpio holding only tests/bench/tenant-init.c linked
#           statically as /init (no busybox, no modules: the serial console,
#           devtmpfs and the initramfs are built into Debian's kernel)
#
# Cached in $KSMTUNED2_CI_CACHE/tenant/<key>/ (default
# /var/cache/ksmtuned2-ci), key = hash of the kernel package and version, the
# compiler, tenant-init.c and this script; built under a lock on the key in
# <key>.tmp and renamed into place only when complete, so a failed or killed
# build leaves no half cache. The download is about 70 MB (10 s here).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${KSMTUNED2_CI_CACHE:-/var/cache/ksmtuned2-ci}/tenant
INIT_SRC=$HERE/tenant-init.c
building=
dl=
trap '[ -z "$building" ] || rm -rf "$building"; [ -z "$dl" ] || rm -rf "$dl"' EXIT
die() { echo "build-tenant-image: $*" >&2; exit 1; }
log() { echo "build-tenant-image: $*" >&2; }
for t in apt-cache apt-get dpkg-deb gcc cpio; do
        command -v $t >/dev/null || die "$t missing (.ci/install-deps installs it)"
done

# The flavour Debian's metapackage points at today, e.g. linux-image-6.1.0-57-amd64.
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1)
[ -n "$pkg" ] || die "apt-cache knows no linux-image-amd64 dependency (apt-get update?)"
version=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: //p')
case $version in ""|"(none)") die "no candidate version of $pkg";; esac
key=$({ echo "$pkg $version"; gcc --version | head -1; sha256sum < "$INIT_SRC"; sha256sum < "$0"; } |
        sha256sum | cut -c1-16)
dest=$CACHE/$key
mkdir -p "$CACHE"
exec 9>"$CACHE/$key.lock"
flock 9
if [ ! -f "$dest/vmlinuz" ] || [ ! -f "$dest/initrd.cpio" ]; then
        log "building the tenant image ($pkg $version) once, into $dest"
        t0=$(date +%s)
        building=$dest.tmp
        rm -rf "$building"
        mkdir -p "$building/root"
        dl=$(mktemp -d)
        chown _apt "$dl" 2>/dev/null || true    # apt downloads as _apt where it can
        (cd "$dl" && apt-get download -qq "$pkg=$version") || die "apt-get download $pkg=$version failed"
        deb=$(ls "$dl"/*.deb)
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dl" --wildcards './boot/vmlinuz-*' ||
                die "no /boot/vmlinuz-* in $deb"
        mv "$dl"/boot/vmlinuz-* "$building/vmlinuz"
        gcc -O2 -static -Wall -Wextra -Werror -o "$building/root/init" "$INIT_SRC" ||
                die "cannot link $INIT_SRC statically (libc6-dev has libc.a)"
        (cd "$building/root" && echo init | cpio -o -H newc --quiet) > "$building/initrd.cpio"
        echo "$pkg $version" > "$building/kernel-version"
        rm -rf "$building/root"
        rm -rf "$dest"
        mv "$building" "$dest"
        building=
        log "done in $(( $(date +%s) - t0 )) s"
fi
echo "kernel $dest/vmlinuz"
echo "initrd $dest/initrd.cpio"
