#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# meson install hook: install-if-absent.sh SOURCE TARGET (both absolute, below
# $DESTDIR). Copies the shipped default to TARGET unless something is already
# there, so that reinstalling never replaces an administrator's configuration.
set -eu
src="${DESTDIR:-}$1"
dst="${DESTDIR:-}$2"
if [ -e "$dst" ] || [ -L "$dst" ]; then
        echo "Keeping existing $2"
        exit 0
fi
if [ -n "${MESON_INSTALL_DRY_RUN:-}" ]; then
        echo "Would install $2"
        exit 0
fi
install -D -m 0644 "$src" "$dst"
echo "Installing $2"
