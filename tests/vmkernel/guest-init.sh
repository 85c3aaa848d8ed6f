# SPDX-License-Identifier: GPL-2.0-or-later
# PID 1 of a test guest (run by bash from the run directory, which
# run-in-guest.sh shares as /ksmtuned2-run): mounts what the kernel tests
# need, mounts the host's shares at their host paths, runs the command as
# root with its output and exit status in the run directory, and reboots
# (QEMU runs with -no-reboot, so it exits).
R=/ksmtuned2-run
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
note() { echo "ksmtuned2-vm: $*" > /dev/console 2>&1; }
bye() {
        sync
        echo b > /proc/sysrq-trigger
        sleep 10
        exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
ln -sf /proc/self/fd /dev/fd 2>/dev/null
# The root is shared by every guest and read-only: what is written goes to tmpfs.
for d in /run /tmp /var/tmp /var/log /root; do
        mount -t tmpfs -o mode=0755 tmpfs "$d"
done
chmod 1777 /tmp /var/tmp
mount -t tracefs tracefs /sys/kernel/tracing
# cgroup v2 only (the unified layout), with its controllers available below
# the root.
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
        echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null
done
hostname ksmtuned2-vm

# The host's directories, at the same paths (one "tag path ro|rw" a line).
# run-in-guest.sh made each mount point in the read-only root, but one under
# /tmp, /run, /var/tmp or /root is hidden by the tmpfs mounted there above:
# made again, in the tmpfs (a no-op elsewhere).
while read -r tag path mode; do
        mkdir -p "$path" 2>/dev/null
        if ! mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000,$mode" "$tag" "$path"; then
                note "cannot mount $path ($tag)"
                echo 125 > $R/rc
                bye
        fi
done < $R/mounts

# The command, NUL-separated; the environment, one VAR=value a line.
mapfile -d '' -t cmd < $R/cmd
mapfile -t envs < $R/env
cd "$(cat $R/cwd)" 2>/dev/null || cd /
env -i PATH="$PATH" HOME=/root TERM=dumb LANG=C.UTF-8 "${envs[@]}" "${cmd[@]}" > $R/stdout 2> $R/stderr < /dev/null
echo $? > $R/rc.tmp
mv $R/rc.tmp $R/rc
bye
