#!/usr/bin/env python3
"""The command line of the scripts in schedules/found/ (imported by them, not run by itself).

--help prints the running script's docstring; a missing or malformed argument prints the reason
and the script's usage lines (its docstring from "usage:" to the next blank line) and exits with
code 2, as tests/check_script_help.sh checks.

usage: python3 schedules/found/SCRIPT.py --help
"""
import os
import sys


def _doc():
    return sys.modules["__main__"].__doc__ or ""


def handle_help():
    """Prints the script's docstring and exits 0 when -h or --help is among the arguments."""
    if {"-h", "--help"} & set(sys.argv[1:]):
        print(_doc().strip())
        sys.exit(0)


def usage_error(why):
    """A bad command line: the reason and the script's usage lines, exit code 2."""
    doc = _doc()
    usage = doc[doc.index("usage:"):].split("\n\n")[0] if "usage:" in doc else ""
    print(f"{os.path.basename(sys.argv[0])}: {why}\n{usage}", file=sys.stderr)
    sys.exit(2)


def int_arg(i, name, default=None, least=1):
    """sys.argv[i] as an integer >= least (default when absent)."""
    if len(sys.argv) <= i:
        if default is None:
            usage_error(f"missing {name}")
        return default
    try:
        v = int(sys.argv[i])
    except ValueError:
        usage_error(f"{name} must be an integer, got {sys.argv[i]!r}")
    if v < least:
        usage_error(f"{name} must be at least {least}, got {v}")
    return v


if __name__ == "__main__":
    handle_help()
    usage_error("this module is imported by the scripts of schedules/found/, not run")
