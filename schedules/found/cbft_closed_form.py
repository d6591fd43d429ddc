#!/usr/bin/env python3
"""Independent check of the optimal total exchange on the CBFT (docs/findings.md, Theorem 2).

Plain Python, no collsched code. Builds the construction of findings.md (root messages: in step
1 + a + m r leaf a of each half sends to leaf a XOR r of the other half; a message u -> v inside
a half at level h is injected in step t' + 2(L - h) with t' = 1 + p + m q, p = (u XOR 2^(h-1) -
2(L - h)) mod m, q = p XOR v XOR 2^(h-1)), routes every message hop by hop on the binary tree
(capacity 1 per branch and direction, one branch per step, no waiting), and checks: every
ordered pair once, no branch carries two messages in a step, every arrival <= n^2/4 + 2 log n - 1,
and the last arrival equals it.

usage: cbft_closed_form.py [MAX_N]   (default 256)
"""
import sys

from script_args import handle_help, int_arg  # this directory: --help and usage errors
def sched(n):
    L=n.bit_length()-1; m=n//2; out=[]
    for o,oo in ((0,m),(m,0)):
        for a in range(m):
            for r in range(m):
                out.append((o+a, oo+(a^r), 1+a+m*r))
        for h in range(1,L):
            d=2*(L-h)
            for u in range(m):
                for w in range(2**(h-1)):
                    v=u^(2**(h-1))^w
                    al=u^(2**(h-1)); be=u^w
                    p=(al+m*L-d)%m; q=p^be
                    tp=1+p+m*q
                    out.append((o+u,o+v,tp+d))
    return out
def check(n,sc):
    L=n.bit_length()-1; T=n*n//4+2*L-1
    load={}; pairs=set()
    for s,d,x in sc:
        assert s!=d; pairs.add((s,d))
        h=(s^d).bit_length()
        assert x>=1
        for j in range(h):
            k=('u',j,s>>j,x+j); load[k]=load.get(k,0)+1
        for j in range(h-1,-1,-1):
            k=('d',j,d>>j,x+h+(h-1-j)); load[k]=load.get(k,0)+1
        assert x+2*h-1<=T,(s,d,x)
    assert len(pairs)==n*(n-1)==len(sc)
    bad=[k for k,c in load.items() if c>1]
    return bad, max(x+2*((s^d).bit_length())-1 for s,d,x in sc), T


def main():
    top = int_arg(1, "MAX_N", 256, least=2)
    n, failures = 2, 0
    while n <= top:
        bad, last, T = check(n, sched(n))
        ok = not bad and last == T
        failures += not ok
        print(f"n = {n}: T = n^2/4 + 2 log n - 1 = {T}: last arrival {last}, "
              f"{len(bad)} overloaded (branch, step): {'OK' if ok else 'FAIL'}", flush=True)
        n *= 2
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    handle_help()
    main()
