#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# ksmtuned2-generator on fake configurations, called as systemd calls it
# (systemd.generator(7)): [Metrics] TextfilePath= becomes a drop-in with
# ReadWritePaths=- for its directory in the first output directory; no
# configuration, no TextfilePath=, a syntax error or a path it refuses
# leave no drop-in and exit 0, a refusal with one line that says why.
# Usage: test-generator.sh GENERATOR
set -u
GENERATOR=$1
dir=$(mktemp -d /tmp/ksmtuned2-generator.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail=0
conf=$dir/ksmtuned2.conf
dropin=$dir/normal/ksmtuned2.service.d/50-textfile-path.conf

# run [ARGS]: a fresh set of output directories, the generator on $conf;
# sets $rc and $err (its stderr).
run() {
        rm -rf "$dir/normal" "$dir/early" "$dir/late"
        mkdir "$dir/normal" "$dir/early" "$dir/late"
        [ $# -gt 0 ] || set -- "$dir/normal"
        err=$(KSMTUNED2_GENERATOR_CONFIG=$conf "$GENERATOR" "$@" 2>&1 >/dev/null)
        rc=$?
}
# nothing CASE: exit 0, no file in any output directory, nothing said.
nothing() {
        [ $rc = 0 ] || { echo "FAIL: $1: exit $rc: $err"; fail=1; }
        [ -z "$(find "$dir/normal" "$dir/early" "$dir/late" -mindepth 1)" ] ||
                { echo "FAIL: $1: wrote $(find "$dir/normal" "$dir/early" "$dir/late" -mindepth 1)"; fail=1; }
}

rm -f "$conf"
run; nothing "no configuration"
[ -z "$err" ] || { echo "FAIL: no configuration: said \"$err\""; fail=1; }

printf '[Daemon]\nInterval=2s\n' > "$conf"
run; nothing "no [Metrics]"
printf '[Metrics]\nTextfilePath=\n' > "$conf"
run; nothing "empty TextfilePath="
printf '[Metrics\nTextfilePath=/srv/metrics/ksm.prom\n' > "$conf"
run; nothing "syntax error"
[ -z "$err" ] || { echo "FAIL: syntax error: said \"$err\" (the daemon reports it)"; fail=1; }

# The daemon's parser: spaces around '=', a comment, an unknown key, the
# last assignment winning.
cat > "$conf" <<'CONF'
# metrics for node_exporter
[Metrics]
TextfilePath = /var/lib/elsewhere/old.prom
Colour=blue
TextfilePath = /srv/metrics/ksm.prom
CONF
want="# Written by ksmtuned2-generator from [Metrics] TextfilePath= in $conf.
[Unit]
SourcePath=$conf

[Service]
ReadWritePaths=-/srv/metrics"
for args in one three; do
        if [ $args = one ]; then run; else run "$dir/normal" "$dir/early" "$dir/late"; fi
        [ $rc = 0 ] || { echo "FAIL: $args argument(s): exit $rc: $err"; fail=1; }
        [ "$(cat "$dropin" 2>/dev/null)" = "$want" ] ||
                { echo "FAIL: $args argument(s): drop-in is [$(cat "$dropin" 2>&1)], want [$want]"; fail=1; }
        [ "$(find "$dir/normal" "$dir/early" "$dir/late" -type f | wc -l)" = 1 ] ||
                { echo "FAIL: $args argument(s): files $(find "$dir/normal" "$dir/early" "$dir/late" -type f)"; fail=1; }
        [ -z "$err" ] || { echo "FAIL: $args argument(s): said \"$err\""; fail=1; }
done
[ "$(stat -c %a "$dropin")" = 644 ] || { echo "FAIL: drop-in mode $(stat -c %a "$dropin")"; fail=1; }
# Run again over its own output (daemon-reload empties the directories;
# a person debugging may not): replaced, not appended to.
KSMTUNED2_GENERATOR_CONFIG=$conf "$GENERATOR" "$dir/normal" || { echo "FAIL: second run"; fail=1; }
[ "$(cat "$dropin")" = "$want" ] || { echo "FAIL: second run: [$(cat "$dropin")]"; fail=1; }

# Paths it refuses: each leaves no drop-in and one line naming the path.
refuse() { # path reason
        printf '[Metrics]\nTextfilePath=%s\n' "$1" > "$conf"
        run
        nothing "TextfilePath=$1"
        case $err in
        "ksmtuned2-generator: $conf: [Metrics] TextfilePath=$3 $2: not making its directory writable for ksmtuned2.service; a drop-in with ReadWritePaths= can, see ksmtuned2(8).") ;;
        *) echo "FAIL: TextfilePath=$1: said \"$err\""; fail=1;;
        esac
}
chars="has a character a unit file would read differently (a space, quote, backslash, '%' or non-ASCII)"
normal='is not a normalised path ("//", ".", ".." or a trailing "/")'
shallow="is in / or in a directory directly below it"
refuse "metrics/ksm.prom" "is not an absolute path" "metrics/ksm.prom"
refuse "/srv/my metrics/ksm.prom" "$chars" "/srv/my metrics/ksm.prom"
refuse "/srv/%H/ksm.prom" "$chars" "/srv/%H/ksm.prom"
refuse '/srv/"m"/ksm.prom' "$chars" '/srv/"m"/ksm.prom'
refuse '/srv/m\x/ksm.prom' "$chars" '/srv/m\x5cx/ksm.prom'
refuse "/srv/métriques/ksm.prom" "$chars" '/srv/m\xc3\xa9triques/ksm.prom'
refuse "/srv/../etc/ksm.prom" "$normal" "/srv/../etc/ksm.prom"
refuse "/srv/./m/ksm.prom" "$normal" "/srv/./m/ksm.prom"
refuse "/srv//m/ksm.prom" "$normal" "/srv//m/ksm.prom"
refuse "/srv/metrics/" "$normal" "/srv/metrics/"
refuse "/ksm.prom" "$shallow" "/ksm.prom"
refuse "/etc/ksm.prom" "$shallow" "/etc/ksm.prom"

# Misuse and an output directory it cannot write: exit 1, said.
printf '[Metrics]\nTextfilePath=/srv/metrics/ksm.prom\n' > "$conf"
run "$dir/normal" "$dir/early"
[ $rc = 1 ] || { echo "FAIL: two arguments: exit $rc"; fail=1; }
case $err in *"Expects one or three output directories"*) ;; *) echo "FAIL: two arguments: said \"$err\""; fail=1;; esac
: > "$dir/file"
run "$dir/file"
[ $rc = 1 ] || { echo "FAIL: output directory is a file: exit $rc"; fail=1; }
case $err in *"Cannot create $dir/file/ksmtuned2.service.d: Not a directory"*) ;;
*) echo "FAIL: output directory is a file: said \"$err\""; fail=1;; esac

[ $fail = 0 ] && echo "test-generator: all cases passed"
exit $fail
