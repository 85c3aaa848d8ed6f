#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The bash completion of ksmctl, sourced as bash-completion sources it: what
# COMPREPLY holds for a few command lines, its commands and options equal to
# those of ksmctl --help, and the pids of "explain" read from a ksmctl that
# prints a canned "list --all --no-legend" (no daemon needed). The zsh one,
# where zsh is installed, on an interactive zsh through zpty.
set -u
export LC_ALL=C # one sort order
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
COMPLETION=$SOURCE_ROOT/conf/completion/ksmctl.bash

. "$COMPLETION" || fail "cannot source $COMPLETION"
[ "$(complete -p ksmctl)" = "complete -F _ksmctl ksmctl" ] || fail "not registered: $(complete -p ksmctl)"

# comp WORD... : COMPREPLY for the command line of those words, the cursor
# at the end of the last (an empty last word: after a blank). Words are
# given as bash splits them: "--json=p" is "--json" "=" "p".
comp() {
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMP_LINE="$*"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=()
        _ksmctl
        printf '%s\n' "${COMPREPLY[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//'
}
expect() { # want WORD...
        local want=$1 got
        shift
        got=$(comp "$@")
        [ "$got" = "$want" ] || fail "completing '$*': got '$got', want '$want'"
}

# Commands and options: the same as ksmctl --help's.
help_verbs=$("$KSMCTL" --help | awk '/^Commands:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' | sort | tr '\n' ' ')
[ "$(comp ksmctl '') " = "$help_verbs" ] || fail "commands: completion has '$(comp ksmctl '')', --help has '$help_verbs'"
options=" $(comp ksmctl -) "
for o in $("$KSMCTL" --help | grep -o -e ' --[a-z][a-z-]*=\?' -e ' -[a-zA-Z] ' | tr -d ' ' | sort -u); do
        [[ $options == *" $o "* ]] || fail "option $o of --help is not completed: $options"
done
for o in $options; do
        "$KSMCTL" --help | grep -q -e "${o%=}\([^a-z-]\|$\)" || fail "completion offers $o, which --help does not show"
done

expect "list" ksmctl li
expect "reload resume" ksmctl re
expect "--json --json=" ksmctl --js
expect "--cgroups" ksmctl list --cg
expect "--no-legend --no-pager" ksmctl status --no-
expect "off pretty short" ksmctl --json = ''
expect "pretty" ksmctl status --json = p
expect "auto observe tune-only" ksmctl set-mode ''
expect "tune-only" ksmctl -q set-mode t
expect "" ksmctl set-mode auto ''
expect "10s 1s 2s 500ms 5s" ksmctl monitor --interval ''
# Options and their values are skipped to find the command.
expect "auto observe tune-only" ksmctl --json=short --interval 2s set-mode ''
expect "auto observe tune-only" ksmctl --json = short -M box set-mode ''
expect "echo" ksmctl exec ech
expect "echo" ksmctl exec -- ech
touch "$tmp/a-file"
expect "$tmp/a-file" ksmctl exec ls "$tmp/a-"

# explain: the pids of "ksmctl list --all --no-legend", from the same ksmctl
# (and with -M, of the same container); never over ssh (-H), which might ask
# for a password in the middle of the command line.
mkdir "$tmp/bin"
cat > "$tmp/bin/ksmctl" <<'FAKE'
#!/bin/sh
printf '%s\n' "$*" >> "${0%/*}/calls"
case " $* " in
*" list --all --no-legend "*)
        echo "101      worker            1.0 MiB    1.0 MiB merge        prctl    yes /system.slice/a.service /etc/ksmtuned2/policy.d/50-a.policy:2"
        echo "2022     qemu-system-x86   3.0 GiB    2.9 GiB merge        inject   yes vm:web      -" ;;
esac
FAKE
chmod +x "$tmp/bin/ksmctl"
PATH="$tmp/bin:$PATH"
expect "101 2022" ksmctl explain ''
expect "2022" ksmctl explain 2
expect "" ksmctl explain 101 ''
grep -qx "list --all --no-legend --no-pager" "$tmp/bin/calls" || fail "ksmctl called as: $(cat "$tmp/bin/calls")"
expect "101 2022" ksmctl -M box explain ''
grep -qx -- "-M box list --all --no-legend --no-pager" "$tmp/bin/calls" || fail "-M not passed on: $(cat "$tmp/bin/calls")"
: > "$tmp/bin/calls"
expect "" ksmctl -H root@far explain ''
[ ! -s "$tmp/bin/calls" ] || fail "ksmctl run over -H while completing: $(cat "$tmp/bin/calls")"
rm "$tmp/bin/ksmctl"
expect "" "$tmp/bin/ksmctl" explain '' # no such ksmctl: nothing, and no error

if command -v zsh >/dev/null; then
        zsh -n "$SOURCE_ROOT/conf/completion/_ksmctl" || fail "zsh completion: syntax"
        # The same commands as --help, in the zsh completion's list.
        zsh_verbs=$(sed -n "s/^ *'\([a-z-]*\):.*/\1/p" "$SOURCE_ROOT/conf/completion/_ksmctl" | sort | tr '\n' ' ')
        [ "$zsh_verbs" = "$help_verbs" ] || fail "zsh commands '$zsh_verbs', --help has '$help_verbs'"
        # An interactive zsh on a pseudo-terminal (zpty), TAB after the line:
        # what it lists, escape sequences and all.
        cat > "$tmp/zcomp" <<'ZSH'
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "PS1='>'; fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D; unsetopt zle_bracketed_paste"
zpty -w z "print -r RE''ADY"
zpty -r z out '*READY*'
zpty -n -w z "$2"$'\t'
out=
for i in {1..50}; do # until the pattern shows, or 5 s
        sleep 0.1
        while zpty -r -t z chunk; do out+=$chunk; done
        [[ $out == *${~3}* ]] && break
done
print -r -- "$out"
zpty -d z
ZSH
        zcomp() { zsh -f "$tmp/zcomp" "$SOURCE_ROOT/conf/completion" "$1" "$2" | tr -d '\r'; }
        out=$(zcomp "ksmctl set-mode " "tune-only")
        grep -q "auto  *observe  *tune-only" <<<"$out" || fail "zsh: set-mode: $(cat -v <<<"$out")"
        out=$(zcomp "ksmctl --json=" "short")
        grep -q "off  *pretty  *short" <<<"$out" || fail "zsh: --json=: $(cat -v <<<"$out")"
        cat > "$tmp/bin/ksmctl" <<'FAKE'
#!/bin/sh
printf '%s\n' "$*" >> "${0%/*}/calls"
echo "101      worker            1.0 MiB    1.0 MiB merge        prctl    yes /system.slice/a.service -"
FAKE
        chmod +x "$tmp/bin/ksmctl"
        : > "$tmp/bin/calls"
        out=$(zcomp "ksmctl -M box explain " "explain 101")
        grep -q "explain 101" <<<"$out" || fail "zsh: explain pids: $(cat -v <<<"$out")"
        grep -qx -- "-M box list --all --no-legend --no-pager" "$tmp/bin/calls" || fail "zsh: ksmctl called as: $(cat "$tmp/bin/calls")"
else
        echo "zsh not installed: its completion not checked"
fi
echo "PASS: bash completion of commands, options, values and pids"
