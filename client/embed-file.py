#!/usr/bin/env python3
# Writes a C header holding a file's bytes as a NUL-terminated array: embed-file.py NAME IN OUT.
import sys

name, src, dst = sys.argv[1:4]
data = open(src, "rb").read()
with open(dst, "w") as out:
    out.write("/* Generated from %s by embed-file.py: do not edit. */\n" % src.split("/")[-1])
    out.write("static const char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        out.write("        " + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    out.write("        0x00,\n};\n")
