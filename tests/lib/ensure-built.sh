#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Brings a second build directory (build-san/) up to date before a test of
# the plain build uses its binaries. `meson test -C build` rebuilds only
# build/, and several such tests start at once, so compile under a lock: the
# first compiles, the others find nothing to do.
set -eu
dir=$1
flock "$dir/.ksmtuned2-compile.lock" meson compile -C "$dir" >"$dir/.ksmtuned2-compile.log" 2>&1 || {
        cat "$dir/.ksmtuned2-compile.log" >&2
        echo "FAIL: cannot build $dir" >&2
        exit 1
}
