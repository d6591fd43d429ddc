#!/usr/bin/env python3
"""Total exchange optimum for every capacity profile of the binary fat tree (bench/results/capacity_profiles.md).

For n = 2^L, every non-decreasing profile c_1 <= ... <= c_L with 1 <= c_i <= 2^(i-1) + 1 (the
leaves below a level-i branch number 2^(i-1): one more than that is one "beyond"), runs
`collsched optimize --topology bft:n:c1,...,cL --collective alltoall --model queues=Q --json`
and prints one JSON line per profile: the optimum, its status, the best counting bound and its
name, and the seconds.

       capacity_profiles.py table RESULTS.jsonl...   (the markdown tables of bench/results/capacity_profiles.md)
usage: capacity_profiles.py COLLSCHED N QUEUES [TIMEOUT [FIRST]]   (e.g. build/tools/collsched 8 none 120;
       FIRST skips the profiles before the FIRST-th, counted from 0, to resume a run)
"""
import json
import subprocess
import sys

from script_args import handle_help, int_arg, usage_error  # this directory: --help and usage errors


def profiles(L):
    out = []

    def rec(i, prev, cur):
        if i > L:
            out.append(cur)
            return
        for c in range(prev, 2 ** (i - 1) + 2):
            rec(i + 1, c, cur + [c])

    rec(1, 1, [])
    return out


def table(files):
    rows = {}
    for name in files:
        for line in open(name):
            j = json.loads(line)
            rows.setdefault(j["spec"], {})[j.get("queues")] = j
    print("| profile | optimum (queues=none) | status | best counting bound | bound | gap | queues=unbounded |")
    print("|---|---|---|---|---|---|---|")
    for spec, by in rows.items():
        j = by.get("none") or next(iter(by.values()))
        opt = j["optimum"] if j["status"] == "proved" else f"{j['lower_bound']} .. {j['upper_bound']}"
        gap = "" if j["status"] != "proved" else (j["optimum"] - j["counting_bound"] or "")
        status = j["status"] + (" (T-1 UNSAT)" if j.get("solver_unsat") else "")
        u = by.get("unbounded")
        uo = "" if not u else (u["optimum"] if u["status"] == "proved" else f"{u['lower_bound']} .. {u['upper_bound']}")
        print(f"| `{spec}` | {opt} | {status} | {j['counting_bound']} | {j['counting_name']} | {gap} | {uo} |")




def main():
    if len(sys.argv) > 1 and sys.argv[1] == "table":
        return table(sys.argv[2:])
    if len(sys.argv) < 4:
        usage_error("expected COLLSCHED N QUEUES")
    exe, n, queues = sys.argv[1], int_arg(2, "N", least=2), sys.argv[3]
    timeout = str(int_arg(4, "TIMEOUT", 120))
    first = int_arg(5, "FIRST", 0, least=0)
    L = n.bit_length() - 1
    for prof in profiles(L)[first:]:
        spec = f"bft:{n}:" + ",".join(map(str, prof))
        cmd = [exe, "optimize", "--topology", spec, "--collective", "alltoall", "--model", f"queues={queues}",
               "--json", "--timeout", timeout]
        r = subprocess.run(cmd, capture_output=True, text=True)
        try:
            j = json.loads(r.stdout)
        except json.JSONDecodeError:
            print(json.dumps({"spec": spec, "error": r.stderr.strip()}), flush=True)
            continue
        best = max(j["bounds"], key=lambda b: b["steps"]) if j.get("bounds") else {"steps": None, "name": None}
        print(json.dumps({"spec": spec, "queues": queues, "optimum": j.get("optimum"), "status": j["status"],
                          "lower_bound": j.get("lower_bound"), "upper_bound": j.get("upper_bound"),
                          "counting_bound": best["steps"], "counting_name": best["name"],
                          "bounds": {b["name"]: b["steps"] for b in j["bounds"]},
                          "solver_unsat": j.get("solver_unsat"), "source": j.get("upper_bound_source"),
                          "seconds": j.get("seconds")}), flush=True)


if __name__ == "__main__":
    handle_help()
    main()
