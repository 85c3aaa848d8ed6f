#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""notify-wait.py SOCKET TIMEOUT_S PID_FILE

Binds SOCKET (an AF_UNIX datagram socket, as systemd's NOTIFY_SOCKET) and
waits for READY=1 from the process whose pid is then written to PID_FILE.
Exit status: 0 on READY=1, 1 on timeout, 2 when that process is gone. Only
the daemon under test can send it, so a test that waits on it never passes
on a state left by an earlier step (a knob value that already holds)."""
import os
import socket
import sys
import time

path, timeout, pid_file = sys.argv[1], float(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o600)
deadline = time.monotonic() + timeout
pid = None
while time.monotonic() < deadline:
    if pid is None:
        try:
            pid = int(open(pid_file).read().strip())
        except (OSError, ValueError):
            pass
    if pid is not None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit(2)
    s.settimeout(0.1)
    try:
        msg = s.recv(4096).decode(errors="replace")
    except socket.timeout:
        continue
    if "READY=1" in msg.split("\n"):
        sys.exit(0)
sys.exit(1)
