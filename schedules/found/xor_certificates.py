#!/usr/bin/env python3
"""One-processor certificates for XOR-invariant total exchange on the EBFT (docs/findings.md, 1).

For n a power of two, find f(1..n-1) with f(k) >= 1 distinct and f(k) + len(k) - 1 distinct
and <= T = n + 2 log n - 3, where len(k) = 2 * bitlength(k) is the distance from s to s XOR k.
Then "every s sends m(s, s XOR k) in step f(k)" is a total exchange in T steps on ebft:n (the
leaf branches carry one message per step each way; inner branches cannot overflow on the EBFT,
see findings.md). Min-conflicts local search, fixed seed; each certificate is checked by a
separate plain test before it is reported. Independent of collsched's code.

usage: xor_certificates.py [MAX_N]   (default 1024; 4096 takes a few minutes)
"""
import random
import sys

from script_args import handle_help, int_arg  # this directory: --help and usage errors


def search(n, T, rng, max_moves=2_000_000):
    ks = range(1, n)
    length = {k: 2 * k.bit_length() for k in ks}
    starts, ends = [0] * (T + 2), [0] * (T + 2)
    f = {}
    for k in ks:
        f[k] = rng.randint(1, T - length[k] + 1)
        starts[f[k]] += 1
        ends[f[k] + length[k] - 1] += 1
    for _ in range(max_moves):
        bad = [k for k in ks if starts[f[k]] > 1 or ends[f[k] + length[k] - 1] > 1]
        if not bad:
            return f
        k = rng.choice(bad)
        starts[f[k]] -= 1
        ends[f[k] + length[k] - 1] -= 1
        if rng.random() < 0.1:
            s = rng.randint(1, T - length[k] + 1)
        else:
            costs = [(starts[s] + ends[s + length[k] - 1], s) for s in range(1, T - length[k] + 2)]
            low = min(c for c, _ in costs)
            s = rng.choice([s for c, s in costs if c == low])
        f[k] = s
        starts[s] += 1
        ends[s + length[k] - 1] += 1
    return None


def check(n, T, f):
    starts = [f[k] for k in range(1, n)]
    ends = [f[k] + 2 * k.bit_length() - 1 for k in range(1, n)]
    return min(starts) >= 1 and max(ends) <= T and len(set(starts)) == n - 1 and len(set(ends)) == n - 1




def main():
    top = int_arg(1, "MAX_N", 1024, least=2)
    rng = random.Random(2024)
    n = 8
    while n <= top:
        L = n.bit_length() - 1
        T = n + 2 * L - 3
        f = search(n, T, rng)
        ok = f is not None and check(n, T, f)
        print(f"n = {n}: T = {T} = n + 2 log n - 3: {'certificate found and checked' if ok else 'NOT FOUND'}", flush=True)
        if n <= 16 and ok:
            print("  f:", " ".join(f"{k}:{f[k]}" for k in range(1, n)))
        n *= 2


if __name__ == "__main__":
    handle_help()
    main()
