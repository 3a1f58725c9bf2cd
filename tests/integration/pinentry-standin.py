#!/usr/bin/env python3
"""A pinentry stand-in for the tests: speaks the Assuan protocol on stdin/stdout as pinentry does,
appends every command line it gets to $PINENTRY_STANDIN_LOG (one JSON string a line, as sent,
still percent-escaped) and answers as $PINENTRY_STANDIN_ANSWERS says: a comma-separated list
taken in order, one per CONFIRM or GETPIN: "ok" (CONFIRM), "cancel" (either), "value:TEXT"
(GETPIN; TEXT is sent percent-escaped, split over D lines of at most 20 bytes to exercise the
client's joining). A command it does not know is answered ERR, as pinentry does."""

import json
import os
import sys

LOG = os.environ["PINENTRY_STANDIN_LOG"]
ANSWERS = [a for a in os.environ.get("PINENTRY_STANDIN_ANSWERS", "").split(",") if a]
# libgpg-error's GPG_ERR_CANCELED from pinentry (source 5): what Cancel answers.
CANCELED = (5 << 24) | 99
KNOWN = ("SETDESC", "SETPROMPT", "SETTITLE", "SETOK", "SETCANCEL", "SETNOTOK", "SETERROR",
         "SETKEYINFO", "SETREPEAT", "OPTION", "GETINFO", "SETTIMEOUT", "SETQUALITYBAR")


def out(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def escape(data):
    return "".join(c if c not in "%\r\n" and ord(c) >= 0x20 else "%%%02X" % ord(c) for c in data)


def main():
    out("OK Pleased to meet you")
    for raw in sys.stdin:
        line = raw.rstrip("\n")
        with open(LOG, "a") as f:
            f.write(json.dumps(line) + "\n")
        verb = line.split(" ", 1)[0]
        if verb == "BYE":
            out("OK closing connection")
            return
        if verb in ("CONFIRM", "GETPIN"):
            answer = ANSWERS.pop(0) if ANSWERS else "cancel"
            if answer == "cancel":
                out(f"ERR {CANCELED} Operation cancelled <Pinentry>")
            elif verb == "CONFIRM" and answer == "ok":
                out("OK")
            elif verb == "GETPIN" and answer.startswith("value:"):
                tokens = [escape(c) for c in answer[len("value:"):]]
                # D lines break only between escapes, never inside one.
                while tokens:
                    chunk = ""
                    while tokens and len(chunk) + len(tokens[0]) <= 20:
                        chunk += tokens.pop(0)
                    out("D " + chunk)
                out("OK")
            else:
                out("ERR 83886335 unexpected answer in the test's list")
            continue
        if verb in KNOWN:
            out("OK")
        else:
            out("ERR 83886355 Unknown IPC command <Pinentry>")


if __name__ == "__main__":
    main()
