# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by shell tests: a bounded wait for a condition.
#
#   wait_for SECONDS COMMAND [ARG...]
#       runs COMMAND every 0.1 s until it succeeds (returns 0) or SECONDS
#       have gone by (returns 1). Its output is the caller's.
#   pid_gone PID
#       whether PID has exited: gone, or a zombie (its mm went before it
#       became one).
wait_for() {
        local n=$(($1 * 10)); shift
        for _ in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
        return 1
}

pid_gone() { [ ! -e "/proc/$1/stat" ] || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
