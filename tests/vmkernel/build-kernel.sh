#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# build-kernel.sh stock|patched: builds a test kernel once and prints the
# path of its bzImage.
#
#   stock    Debian's linux-source-6.12 as packaged (/usr/src), `make
#            tinyconfig` plus kernel.config.
#   patched  the same tree with tests/vmkernel/patches/series applied, built
#            from a copy of the stock tree, objects and all, so that only what
#            the patches touch is recompiled.
#
# Kernels are cached in $KSMTUNED2_CI_CACHE/kernel/<key>/ (default
# /var/cache/ksmtuned2-ci/kernel), key = hash of the source package's version,
# the compiler, kernel.config, this script and (patched) the patch files in
# series order: a machine builds each once, and again only when one of
# those changes. A build runs under a lock on its key, in <key>.tmp, and is
# renamed into place only once complete: a failed or killed build leaves no
# half cache. Progress and timings go to stderr, the build log to
# <key>.tmp/build.log (kept as <key>/build.log).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${KSMTUNED2_CI_CACHE:-/var/cache/ksmtuned2-ci}/kernel
PKG=linux-source-6.12
TARBALL=/usr/src/$PKG.tar.xz
FRAGMENT=$HERE/kernel.config
PATCHES=${KSMTUNED2_KERNEL_PATCHES:-$HERE/patches}
JOBS=${KSMTUNED2_KERNEL_JOBS:-$(nproc)}

# The build directory in progress, removed on every exit path but success.
building=
trap '[ -z "$building" ] || rm -rf "$building"' EXIT
die() { echo "build-kernel: $*" >&2; exit 1; }
log() { echo "build-kernel: $*" >&2; }
flavour=${1:-}
case $flavour in stock|patched) ;; *) die "usage: build-kernel.sh stock|patched";; esac
[ -r "$TARBALL" ] || die "$TARBALL missing: apt-get install $PKG (.ci/install-deps does)"
version=$(dpkg-query -W -f='${Version}' "$PKG" 2>/dev/null) || die "package $PKG is not installed"
for t in make gcc bc bison flex; do command -v $t >/dev/null || die "$t missing (.ci/install-deps installs it)"; done

# The patch files, in the order series lists them (quilt's format: one name
# a line, # comments, options after the name ignored).
patch_files() {
        [ -f "$PATCHES/series" ] || die "no $PATCHES/series: no patch set to build the patched kernel from"
        local line name
        while read -r line; do
                name=${line%%#*}; name=${name%% *}
                [ -n "$name" ] || continue
                [ -f "$PATCHES/$name" ] || die "$PATCHES/series: no patch file $name"
                echo "$PATCHES/$name"
        done < "$PATCHES/series"
}
stock_key() {
        { echo "$PKG $version"; gcc --version | head -1; sha256sum < "$FRAGMENT"; sha256sum < "$HERE/build-kernel.sh"; } |
                sha256sum | cut -c1-16
}
patched_key() {
        { echo "stock $(stock_key)"; for p in $(patch_files); do echo "${p##*/}"; sha256sum < "$p"; done; } |
                sha256sum | cut -c1-16
}

# make with a fixed identity, so that the same inputs give the same kernel,
# and at a fixed path: kbuild records absolute paths (objtool's objects,
# which every object depends on), so the patched copy of the stock tree must
# be built where the stock one was for make to find its objects up to date.
# Each build bind-mounts its tree there in a mount namespace of its own.
BUILD_PATH=$CACHE/build-path
kmake() {
        unshare --mount --propagation private -- /bin/sh -c 'mount --bind "$0" "$1" && cd "$1" && shift && exec make "$@"' \
                "$1" "$BUILD_PATH" ARCH=x86_64 KBUILD_BUILD_USER=ksmtuned2 KBUILD_BUILD_HOST=ci \
                KBUILD_BUILD_TIMESTAMP="$PKG $version" "${@:2}"
}
# Every CONFIG_...=... line of the fragment must have survived olddefconfig
# (a symbol whose dependencies are missing is dropped silently otherwise); a
# "is not set" line that something selects is only reported.
check_config() {
        local line sym missing=
        while read -r line; do
                case $line in
                CONFIG_*) grep -qx -- "$line" "$1/.config" || missing="$missing $line";;
                "# CONFIG_"*" is not set")
                        sym=${line#\# }; sym=${sym%% *}
                        grep -q "^$sym=" "$1/.config" && log "$FRAGMENT: $sym is selected by something else: kept";;
                esac
        done < "$FRAGMENT"
        [ -z "$missing" ] || die "$FRAGMENT: not in the final .config (a dependency is missing?):$missing"
}
finish() { # tmp dir, final dir, seconds
        cp "$1/linux/arch/x86/boot/bzImage" "$1/bzImage"
        cp "$1/linux/.config" "$1/config"
        echo "$3" > "$1/build-seconds"
        mv "$1" "$2"
}

# The package's source, extracted once per version (read-only; each build
# copies it).
ensure_source() {
        SOURCE=$CACHE/source-$version/linux
        [ -d "$SOURCE" ] && return 0
        exec 7>"$CACHE/source-$version.lock"
        flock 7
        if [ ! -d "$SOURCE" ]; then
                log "extracting $TARBALL (once per package version)"
                rm -rf "$CACHE/source-$version.tmp"
                building=$CACHE/source-$version.tmp
                mkdir -p "$building"
                tar -xJf "$TARBALL" -C "$building" || die "cannot extract $TARBALL"
                mv "$building/$PKG" "$building/linux"
                mv "$building" "$CACHE/source-$version"
                building=
        fi
        exec 7>&-
}

# Sets STOCK to the directory of the stock kernel, building it first if needed.
ensure_stock() {
        local key dir tmp t0
        key=$(stock_key)
        dir=$CACHE/$key
        exec 8>"$CACHE/$key.lock"
        flock 8
        if [ ! -f "$dir/bzImage" ]; then
                ensure_source
                tmp=$dir.tmp
                rm -rf "$tmp" "$dir"
                mkdir -p "$tmp"
                building=$tmp
                log "building the stock kernel ($PKG $version, key $key; once, in $tmp)"
                t0=$(date +%s)
                cp -a "$SOURCE" "$tmp/linux" || die "cannot copy $SOURCE"
                if ! { kmake "$tmp/linux" tinyconfig &&
                       "$tmp/linux/scripts/kconfig/merge_config.sh" -m -O "$tmp/linux" "$tmp/linux/.config" "$FRAGMENT" &&
                       kmake "$tmp/linux" olddefconfig; } >"$tmp/build.log" 2>&1; then
                        tail -20 "$tmp/build.log" >&2
                        die "configuring the stock kernel failed"
                fi
                check_config "$tmp/linux"
                if ! kmake "$tmp/linux" -j"$JOBS" bzImage >>"$tmp/build.log" 2>&1; then
                        grep -E 'error|Error' "$tmp/build.log" | head -20 >&2
                        die "building the stock kernel failed"
                fi
                finish "$tmp" "$dir" $(( $(date +%s) - t0 ))
                building=
                log "stock kernel built in $(cat "$dir/build-seconds") s"
        fi
        exec 8>&-
        STOCK=$dir
}

# Sets PATCHED likewise.
ensure_patched() {
        local stock key dir tmp t0 p
        patch_files > /dev/null
        ensure_stock
        stock=$STOCK
        key=$(patched_key)
        dir=$CACHE/$key
        exec 8>"$CACHE/$key.lock"
        flock 8
        if [ ! -f "$dir/bzImage" ]; then
                tmp=$dir.tmp
                rm -rf "$tmp" "$dir"
                mkdir -p "$tmp"
                building=$tmp
                log "building the patched kernel (key $key; once, in $tmp, from $stock)"
                t0=$(date +%s)
                # -a keeps the timestamps: make rebuilds only what the patches
                # make newer than its objects.
                cp -a "$stock/linux" "$tmp/linux" || die "cannot copy $stock/linux"
                : > "$tmp/build.log"
                for p in $(patch_files); do
                        echo "patch: ${p##*/}" >> "$tmp/build.log"
                        if ! patch -d "$tmp/linux" -p1 --no-backup-if-mismatch -f < "$p" >>"$tmp/build.log" 2>&1; then
                                tail -20 "$tmp/build.log" >&2
                                die "$p does not apply to $PKG $version"
                        fi
                done
                # A patch may add Kconfig symbols: take their defaults.
                if ! { kmake "$tmp/linux" olddefconfig && kmake "$tmp/linux" -j"$JOBS" bzImage; } >>"$tmp/build.log" 2>&1; then
                        grep -E 'error|Error' "$tmp/build.log" | head -20 >&2
                        die "building the patched kernel failed"
                fi
                check_config "$tmp/linux"
                finish "$tmp" "$dir" $(( $(date +%s) - t0 ))
                building=
                # Only the stock tree is needed again (for the next patch set).
                rm -rf "$dir/linux"
                log "patched kernel built in $(cat "$dir/build-seconds") s"
        fi
        exec 8>&-
        PATCHED=$dir
}

mkdir -p "$CACHE" "$BUILD_PATH"
command -v unshare >/dev/null || die "unshare missing (package util-linux)"
case $flavour in
stock) ensure_stock; echo "$STOCK/bzImage";;
patched) ensure_patched; echo "$PATCHED/bzImage";;
esac
