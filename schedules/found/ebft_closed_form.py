#!/usr/bin/env python3
"""Independent check of the closed-form optimal total exchange on the EBFT (docs/findings.md, 1).

Plain Python, no collsched code. For n = 2^L, every processor s sends m(s, s XOR k) in step
f(k), where (p = n/4 - 1)

    f(k) = 2k - 1 (1 <= k < p),  2k + 1 (p <= k < n/2),  f(n/2) = n/2 - 3,  f(n/2 + j) = 2j.

The message climbs h = bitlength(k) branches and descends h, one branch per step, no waiting,
so it arrives in step f(k) + 2h - 1. For every n this script checks the certificate:

  1. f(k) >= 1 for every k, and f is one-to-one on 1 .. n-1 (each leaf's up-branch carries one
     message per step: processor s injects m(s, s^k) in step f(k));
  2. f(k) + 2h(k) - 1 is one-to-one (each leaf's down-branch: d receives m(d^k, d) then);
  3. the inner branches: the branch above a subtree of 2^i leaves has capacity 2^i in each
     direction (EBFT); in each step, per level i, it counts the k whose messages cross it
     (upward in step f(k) + i, downward in step f(k) + 2h - 1 - i, for h(k) > i); by the XOR
     symmetry each such k puts exactly 2^i messages on every branch of level i (one per leaf of
     the subtree, which all send the same k), so the load is 2^i * (number of such k) and must
     be at most 2^i;
  4. every arrival is at most T = n + 2 log n - 3.

For n <= EXPLICIT (default 256) it also routes all n(n-1) messages hop by hop on the tree and
counts every (branch, direction, step), without using the symmetry argument.

usage: ebft_closed_form.py [MAX_N [EXPLICIT]]   (default 2^20 and 256)
"""
import sys

from script_args import handle_help, int_arg  # this directory: --help and usage errors


def f_closed(n):
    """f as a list indexed by k = 1 .. n-1 (index 0 unused)."""
    p = n // 4 - 1
    f = [0] * n
    for k in range(1, n // 2):
        f[k] = 2 * k - 1 if k < p else 2 * k + 1
    f[n // 2] = n // 2 - 3
    for j in range(1, n // 2):
        f[n // 2 + j] = 2 * j
    return f


def check_certificate(n, f):
    L = n.bit_length() - 1
    T = n + 2 * L - 3
    ks = range(1, n)
    h = [0] + [k.bit_length() for k in ks]
    starts = [f[k] for k in ks]
    ends = [f[k] + 2 * h[k] - 1 for k in ks]
    if min(starts) < 1:
        return f"a start before step 1"
    if len(set(starts)) != n - 1:
        return "f is not one-to-one (two injections in one step)"
    if len(set(ends)) != n - 1:
        return "f + 2h - 1 is not one-to-one (two arrivals in one step)"
    if max(ends) != T:
        return f"last arrival {max(ends)} != T = {T}"
    for i in range(1, L):   # level-0 branches are items 1 and 2
        up, down = {}, {}
        for k in ks:
            if h[k] > i:
                t = f[k] + i
                up[t] = up.get(t, 0) + 1
                t = f[k] + 2 * h[k] - 1 - i
                down[t] = down.get(t, 0) + 1
        if max(up.values()) > 1 or max(down.values()) > 1:
            return f"inner branch of level {i} overloaded"
    return None


def check_explicit(n, f):
    """Route every message hop by hop; count every branch, direction and step."""
    L = n.bit_length() - 1
    T = n + 2 * L - 3
    load = {}
    for s in range(n):
        for k in range(1, n):
            d = s ^ k
            h = k.bit_length()
            x = f[k]
            for j in range(h):          # up from level j to j + 1
                key = ("up", j, s >> j, x + j)
                load[key] = load.get(key, 0) + 1
            for j in range(h - 1, -1, -1):  # down from level j + 1 to j
                key = ("down", j, d >> j, x + h + (h - 1 - j))
                load[key] = load.get(key, 0) + 1
            if x + 2 * h - 1 > T:
                return f"m({s},{d}) arrives after T"
    for (direction, j, node, t), c in load.items():
        if c > 2 ** j:
            return f"{direction} branch above node ({j},{node}) carries {c} > {2 ** j} in step {t}"
    return None




def main():
    top = int_arg(1, "TOP", 2 ** 20, least=2)
    explicit = int_arg(2, "EXPLICIT", 256, least=0)
    n, failures = 8, 0
    while n <= top:
        L = n.bit_length() - 1
        f = f_closed(n)
        err = check_certificate(n, f)
        how = "certificate"
        if err is None and n <= explicit:
            err = check_explicit(n, f)
            how = "certificate + explicit routing"
        status = "OK" if err is None else "FAIL: " + err
        failures += err is not None
        print(f"n = {n}: T = n + 2 log n - 3 = {n + 2 * L - 3}: {how}: {status}", flush=True)
        n *= 2
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    handle_help()
    main()
