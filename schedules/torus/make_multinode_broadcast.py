#!/usr/bin/env python3
"""Writes multinode_broadcast.sched (the torus wormhole multinode broadcast of Chen, Chen and
Tseng) from the templates below. The schedule language has no functions, so the few closed forms
the algorithm needs (balanced base-5 digits, the position of a source's message after each
phase, the source pattern) are expanded here as text; the .sched file is the program, this
script only spares writing the same expression many times. Run it after editing:

    python3 schedules/torus/make_multinode_broadcast.py
"""
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))


def dg(w, u):
    """Balanced base-5 digit u (1 = lowest) of the number whose standard digits are w's."""
    return f"(({w}) / 5 ** ({u} - 1) % 5 - 2)"


def vert(w, t, v):
    """Sum of the +-1 digits of w's lowest t digits, weighted: the vertical part of a path."""
    d = dg(w, v)
    return f"sum({d} * (abs({d}) % 2) * 5 ** ({v} - 1) for {v} in 1 .. {t})"


def horz(w, t, v):
    """Sum of the +-2 digits of w's lowest t digits, weighted: the horizontal part of a path."""
    d = dg(w, v)
    return f"sum({d} * (abs({d}) / 2) * 5 ** ({v} - 1) for {v} in 1 .. {t})"


def is_src(p):
    return f"(first == 0 && ({p}) * (P - s) % P < s || first == 1 && ({p}) < s)"


def ul(p, cx):
    """The destination offset of source p's message (aggregated at a root in row cx), plus (h-1)/2."""
    return f"(((1 - first) * ((({p}) * s + P - 1) / P) + first * ({p})) % h - ({cx}) + (h - 1) / 2) % h"


def source_of(cx, cy, i, v):
    """The source whose message the phase-1 aggregation takes to root (cx, cy) along subtree index i."""
    return f"(({cx}) - {vert(i, 'A', v)}) % n * n + (({cy}) + {horz(i, 'A', v)}) % n"


def tuned(a0, b0, j, i, v):
    """(source, condition) for a message at DDN node (a0, b0) of DDN k after phase 1 that came
    from the root (a0 h + k - l, b0 h + k - l), l = j - (h-1)/2, subtree index i."""
    cx = f"(({a0}) * h + k - ({j}) + (h - 1) / 2)"
    cy = f"(({b0}) * h + k - ({j}) + (h - 1) / 2)"
    p = source_of(cx, cy, i, v)
    return p, f"{is_src(p)} && {ul(p, cx)} == {j}"


def aligned_window(center, G, z):
    """(bundle body, condition) over z in 0 .. G*q*h*h - 1: the messages aligned (phase 2a) at
    the DDN diagonal nodes center - (G-1)/2 .. center + (G-1)/2."""
    jd = f"(({center}) - ({G} - 1) / 2 + ({z}) / (q * h * h)) % q"
    w = f"({z}) / (h * h) % q"
    a0 = f"(({jd}) - {vert(w, 'B', 'v1')}) % q"
    b0 = f"(({jd}) + {horz(w, 'B', 'v2')}) % q"
    return tuned(a0, b0, f"({z}) / h % h", f"({z}) % h", "v3")


def bundle(body, cond, var, last):
    """The bundle of the sources' messages, all m chunks of each (the comprehension runs over
    var * m + chunk); a send of a bundle with no message moves nothing."""
    v = var + "c"
    sub = lambda text: re.sub(rf"\b{var}\b", f"({v} / m)", text)
    return f"bundle(b({sub(body)}, {v} % m) for {v} in 0 .. ({last} + 1) * m - 1 if {sub(cond)})"


def main():
    # Phase 1: the messages at (x, y) at the start of aggregation round t.
    p1 = f"(x - {vert('w', 't - 1', 'v')}) % n * n + (y + {horz('w', 't - 1', 'v')}) % n"
    agg_msg = bundle(p1, is_src(p1), "w", "g - 1")

    # Phase 1b: at diagonal node (x, y), the messages of roots (x, y) - off (1, 1) whose offset
    # has lowest digits w = z / h and digit u equal to sg * e.
    cx = "(x - (z / h - (G - 1) / 2))"
    cy = "(y - (z / h - (G - 1) / 2))"
    p = source_of(cx, cy, "z % h", "v")
    u = ul(p, cx)
    tune_cond = f"{is_src(p)} && {u} % G == z / h && {u} / G % 5 - 2 == sg * e"
    tune_msg = bundle(p, tune_cond, "z", "G * h - 1")

    # Phase 2a: at DDN node (a, b) of DDN k, alignment round t.
    a0 = f"(ar - {vert('z / (h * h)', 't - 1', 'v1')}) % q"
    b0 = f"(bc + {horz('z / (h * h)', 't - 1', 'v2')}) % q"
    pa, ca = tuned(a0, b0, "z / h % h", "z % h", "v3")
    align_msg = bundle(pa, ca, "z", "G * h * h - 1")

    # Phase 2b: windows of aligned messages.
    windows = {}
    for name, center in [("own", "i"), ("up", "i + G"), ("dn", "i - G"), ("up2", "i + 2 * G"), ("dn2", "i - 2 * G")]:
        body, cond = aligned_window(center, "G", "z")
        windows[name] = bundle(body, cond, "z", "G * q * h * h - 1")

    with open(os.path.join(HERE, "multinode_broadcast.sched.in")) as f:
        text = f.read()
    subst = {"AGG_MSG": agg_msg, "TUNE_MSG": tune_msg, "ALIGN_MSG": align_msg}
    for name, m in windows.items():
        subst[f"WIN_{name.upper()}_MSG"] = m
    for k, v in subst.items():
        text = text.replace("@" + k + "@", v)
    assert "@" not in text, "unexpanded template"
    with open(os.path.join(HERE, "multinode_broadcast.sched"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
