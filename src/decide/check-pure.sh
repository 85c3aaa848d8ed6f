#!/bin/sh
# check-pure.sh STAMP LIB...: fails when a pure library (src/basic,
# src/decide) calls a function that does I/O: files, sockets, processes,
# mounts, ptrace, netlink, libsystemd. Formatting into a stream the caller
# hands over (fprintf, fwrite, open_memstream) is allowed; opening one on a
# file is not. Names the library, the object and the call. Run by the build
# (src/decide/meson.build).
set -eu
stamp=$1; shift
deny='^(open|open64|openat|openat64|creat|fopen|fopen64|fdopen|freopen|read|pread|pread64|readv|preadv|write|pwrite|pwrite64|writev|close|fread|fgets|getline|getdelim|readlink|readlinkat|opendir|fdopendir|readdir|readdir64|stat|fstat|fstatat|lstat|statx|unlink|unlinkat|rename|renameat|mkdir|mkdirat|socket|connect|bind|sendmsg|recvmsg|send|recv|ioctl|mount|umount2|ptrace|process_vm_readv|process_vm_writev|process_madvise|syscall|kill|tgkill|pidfd_open|pidfd_send_signal|waitpid|waitid|fork|vfork|execve|prctl|madvise|pthread_create|sd_[a-z_]+|nl_[a-z_]+|genl_[a-z_]+|ini_[a-z_]+)$'
violations=$(for lib in "$@"; do nm -A -u "$lib" 2>/dev/null; done |
        awk -v deny="$deny" '{ sym = $NF; sub(/@.*/, "", sym); where = $1; sub(/:$/, "", where)
                               if (sym ~ deny) print where " calls " sym }')
if [ -n "$violations" ]; then
        printf '%s\n' "$violations" | sed 's/^/check-pure: /; s/$/: the pure stages do no I\/O (src\/meson.build)/' >&2
        exit 1
fi
: > "$stamp"
