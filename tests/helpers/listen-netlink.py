#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Runs a command with one socket passed as systemd passes a socket unit's
(fd 3, LISTEN_FDS=1, LISTEN_PID its own pid: the command is exec'd in this
process). Opened here, with this process's capabilities, before the command
drops any: as the service manager opens ListenNetlink= sockets.

  listen-netlink.py KIND COMMAND [ARG...]

KIND: connector  NETLINK_CONNECTOR joined to group 1, the proc connector's
                 (what ksmtuned2-proc-events.socket's ListenNetlink=connector 1
                 makes)
      unjoined   NETLINK_CONNECTOR bound to no group
      route      NETLINK_ROUTE joined to group 1
      file       an unlinked temporary file, not a socket
      probe      no command: exits 0 when this process may join the proc
                 connector's group itself, 1 when bind() says EPERM (what the
                 kernel asks of a daemon that opens its own socket)
"""
import errno
import os
import socket
import sys

NETLINK_ROUTE, NETLINK_CONNECTOR, CN_IDX_PROC = 0, 11, 1


def open_kind(kind):
    if kind == "file":
        return os.open(os.environ.get("TMPDIR", "/tmp"), os.O_TMPFILE | os.O_RDWR, 0o600)
    proto = NETLINK_ROUTE if kind == "route" else NETLINK_CONNECTOR
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto)
    s.bind((0, 0 if kind == "unjoined" else CN_IDX_PROC))
    return s.detach()


def main():
    if len(sys.argv) == 2 and sys.argv[1] == "probe":
        try:
            open_kind("connector")
        except PermissionError:
            return 1
        return 0
    if len(sys.argv) < 3 or sys.argv[1] not in ("connector", "unjoined", "route", "file"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    fd = open_kind(sys.argv[1])
    if fd != 3:
        os.dup2(fd, 3)
        os.close(fd)
    os.set_inheritable(3, True)
    # what it is, for a test to find out whether the command kept it open
    print(f"listen-netlink: fd 3 is {os.readlink('/proc/self/fd/3')}", file=sys.stderr, flush=True)
    os.environ["LISTEN_FDS"] = "1"
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.execvp(sys.argv[2], sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
