# SPDX-License-Identifier: GPL-2.0-or-later
# bash completion for ksmctl(1): its commands and options, option values,
# and for explain the pids the daemon knows (ksmctl list --all --no-legend).
# Plain bash: it needs nothing from the bash-completion package.
# tests/unit/test-completion.sh keeps the lists equal to ksmctl --help.

__ksmctl_verbs='status list explain monitor top history reload pause resume set-mode exec help'
__ksmctl_options='-h --help --version --json --json= --no-pager --no-legend -q --quiet
        -H --host= -M --machine= --cgroups --all --interval= -n --iterations= --since='
# Options whose value may be the next word ("-H host", "--interval 2s").
__ksmctl_with_value='-H --host -M --machine --interval -n --iterations --since'

__ksmctl_contains() { # word list...
        local w=$1 x
        shift
        for x; do [[ $x == "$w" ]] && return 0; done
        return 1
}

__ksmctl_values() { # option: what may follow it
        case $1 in
        --json) echo 'pretty short off' ;;
        --interval) echo '500ms 1s 2s 5s 10s' ;;
        --since) echo '10min 1h 6h 24h' ;;
        -H | --host) compgen -A hostname ;;
        -M | --machine) command -v machinectl >/dev/null && machinectl list --no-legend 2>/dev/null | awk '{ print $1 }' ;;
        esac
}

_ksmctl() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        local i w verb= n_args=0 option= dashdash= ksmctl=${COMP_WORDS[0]}
        local -a transport=()

        COMPREPLY=()
        # "--json=pr" arrives as "--json" "=" "pr": '=' breaks words.
        if [[ $cur == = ]]; then
                option=$prev
                cur=
        elif [[ $prev == = ]] && ((COMP_CWORD >= 2)); then
                option=${COMP_WORDS[COMP_CWORD-2]}
        elif __ksmctl_contains "$prev" $__ksmctl_with_value; then
                option=$prev
        fi
        if [[ -n $option ]]; then
                COMPREPLY=($(compgen -W "$(__ksmctl_values "$option")" -- "$cur"))
                return 0
        fi

        # The command, its arguments so far, and the container to ask.
        for ((i = 1; i < COMP_CWORD; i++)); do
                w=${COMP_WORDS[i]}
                if [[ $verb == exec ]]; then
                        # Everything after exec (and its "--") is the command's.
                        if ((n_args == 0)) && [[ $w == -- && -z $dashdash ]]; then
                                dashdash=1
                        else
                                ((n_args++))
                        fi
                elif [[ $w == = ]]; then
                        ((i++)) # the value of --option=
                elif __ksmctl_contains "$w" $__ksmctl_with_value; then
                        if [[ ${COMP_WORDS[i+1]-} == = ]]; then
                                ((i++))
                        fi
                        ((i++))
                        [[ $w == -M || $w == --machine ]] && transport=(-M "${COMP_WORDS[i]-}")
                        # Over ssh a listing may ask for a password: no pids then.
                        [[ $w == -H || $w == --host ]] && transport=(-H)
                elif [[ $w == -* ]]; then
                        :
                elif [[ -z $verb ]]; then
                        verb=$w
                else
                        ((n_args++))
                fi
        done

        if [[ $verb == exec ]]; then
                if ((n_args == 0)); then
                        COMPREPLY=($(compgen -c -- "$cur"))
                else
                        COMPREPLY=($(compgen -f -- "$cur"))
                fi
                return 0
        fi
        if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$__ksmctl_options" -- "$cur"))
                # --json= and its kind want their value right after the '='.
                if ((${#COMPREPLY[@]} == 1)) && [[ ${COMPREPLY[0]} == *= ]]; then
                        compopt -o nospace 2>/dev/null
                fi
                return 0
        fi
        if [[ -z $verb ]]; then
                COMPREPLY=($(compgen -W "$__ksmctl_verbs" -- "$cur"))
                return 0
        fi
        case $verb in
        explain)
                if ((n_args == 0)) && [[ ${transport[0]-} != -H ]]; then
                        COMPREPLY=($(compgen -W "$("$ksmctl" "${transport[@]}" list --all --no-legend --no-pager 2>/dev/null |
                                awk '{ print $1 }')" -- "$cur"))
                fi
                ;;
        set-mode)
                ((n_args == 0)) && COMPREPLY=($(compgen -W 'auto tune-only observe' -- "$cur"))
                ;;
        esac
        return 0
}

complete -F _ksmctl ksmctl
