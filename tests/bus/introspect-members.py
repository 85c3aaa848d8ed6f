#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Reads D-Bus introspection XML on stdin and prints the members of one
interface (argv[1]) in the interface block format of org.ksmtuned2(5), one
member per line, in the order sd-bus emits them (methods, signals,
properties as in the vtable):
    method NAME(in s mode, out a(...) processes)
    property NAME TYPE readonly|readwrite [const]
"""
import sys
import xml.etree.ElementTree as ET

root = ET.fromstring(sys.stdin.read())
for iface in root.iter("interface"):
    if iface.get("name") != sys.argv[1]:
        continue
    for m in iface:
        if m.tag == "method":
            args = ", ".join(f"{a.get('direction', 'in')} {a.get('type')} {a.get('name', '_')}"
                             for a in m.iter("arg"))
            print(f"method {m.get('name')}({args})")
        elif m.tag == "signal":
            args = ", ".join(f"{a.get('type')} {a.get('name', '_')}" for a in m.iter("arg"))
            print(f"signal {m.get('name')}({args})")
        elif m.tag == "property":
            const = any(a.get("value") == "const" for a in m.iter("annotation"))
            access = "readonly" if m.get("access") == "read" else "readwrite"
            print(f"property {m.get('name')} {m.get('type')} {access}{' const' if const else ''}")
    break
else:
    sys.exit(f"interface {sys.argv[1]} not found")
