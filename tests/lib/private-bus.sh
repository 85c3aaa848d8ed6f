# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by bus tests: a private dbus-daemon of our own with a system-bus-like
# policy (connect: anyone; own names: nobody by default) that includes the
# project's own systemd/org.ksmtuned2.conf, so that file is tested too.
#   private_bus_start DIR   writes DIR/bus.conf, starts the daemon on
#                           DIR/system_bus_socket, exports DBUS_SYSTEM_BUS_ADDRESS
#   private_bus_stop        stops it (also done by the caller's cleanup)
# DIR must be traversable by nobody, so tests can call as nobody.
PRIVATE_BUS_PID=
private_bus_write_config() {
        cat > "$1/bus.conf" <<CONF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=$1/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Properties"/>
  </policy>
  <include>$SOURCE_ROOT/systemd/org.ksmtuned2.conf</include>
</busconfig>
CONF
}
private_bus_start() {
        [ -f "$1/bus.conf" ] || private_bus_write_config "$1"
        rm -f "$1/system_bus_socket"
        dbus-daemon --config-file="$1/bus.conf" --nofork --nopidfile 2>>"$1/dbus-daemon.log" &
        PRIVATE_BUS_PID=$!
        export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$1/system_bus_socket"
        for _ in $(seq 100); do
                [ -S "$1/system_bus_socket" ] && return 0
                sleep 0.05
        done
        echo "FAIL: private dbus-daemon did not start" >&2
        cat "$1/dbus-daemon.log" >&2
        return 1
}
private_bus_stop() {
        [ -n "$PRIVATE_BUS_PID" ] || return 0
        kill -TERM "$PRIVATE_BUS_PID" 2>/dev/null
        wait "$PRIVATE_BUS_PID" 2>/dev/null
        PRIVATE_BUS_PID=
}
