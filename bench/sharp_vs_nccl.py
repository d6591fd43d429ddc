#!/usr/bin/env python3
"""Allreduce on machines whose network switches reduce (InfiniBand SHARP; issue 44), against NCCL's
CollNet and NVLS_TREE: the tables of docs/time.md, "SHARP across boxes".

For every machine one `collsched optimize --topology graph:M --collective allreduce --sizes S --json`
(every candidate that can win verified by the direct checker, timed by the asynchronous model,
docs/time.md). Per size it prints collsched's fastest and its time; NCCL's algorithms through SHARP
generated for the machine (verifier/constructions/compose/nvls.hpp: `nccl collnet_direct`, `nccl collnet_chain`,
`nccl nvls + collnet`, the best of their piece counts) and NCCL's NVLS_TREE generated (`nccl
nvls_tree`); NCCL's own model of CollNet Direct, CollNet Chain and NVLS across boxes
(`nccl_collnet_model` in the JSON: src/graph/tuning.cc, nccl::nccl_collnet_models); the proved
lower bound and the gap to it. A generated table slower than a verified one at every size is
timed but not verified by optimize (its "unchecked" list); the same constructions are verified on
the same machines by tests/tools/test_sharp.cpp.

Usage: bench/sharp_vs_nccl.py [--bin build/tools/collsched] [--machines h100sharp2x8,h100sharp4x8,h100sharp8x8,h100sharp16x8]
                              [--sizes 64K,1M,16M,256M,1G] [--timeout 600] [--json-dir DIR]
Exit 0, 1 when a run fails or collsched is slower than a generated NCCL algorithm, 2 on usage errors.
"""
import sys


from nvls_vs_nccl import fmt_b, fmt_t, optimize_json, parse_args  # the same cells and runs as the NVLS tables


def main():
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    parsed = parse_args("h100sharp2x8,h100sharp4x8,h100sharp8x8,h100sharp16x8", "600")
    if parsed is None:
        return 2
    a, here = parsed
    failed = False
    print("| machine | size | collsched's fastest | time | CollNet Direct gen. | CollNet Chain gen. | NVLS + CollNet gen. | "
          "NVLS_TREE gen. | NCCL's model: Direct / Chain / NVLS | bound | gap |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in a.machines.split(","):
        j = optimize_json(a, here, m)
        if j is None:
            failed = True
            continue
        timed = j["candidates"] + j.get("unchecked", [])
        for i, s in enumerate(j["sizes"]):
            def best(prefix):
                xs = [c["seconds"][i] for c in timed if c["name"].startswith(prefix + ",")]
                return min(xs) if xs else None
            gens = [best(p) for p in ("nccl collnet_direct", "nccl collnet_chain", "nccl nvls + collnet", "nccl nvls_tree")]
            models = {x["algorithm"]: x["seconds"] for x in s.get("nccl_collnet_model", [])}
            mtext = " / ".join(fmt_t(models.get(k)) for k in ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS"))
            t = s["predicted_time_s"]
            if any(g is not None and t > g * (1 + 1e-9) for g in gens):
                failed = True
            print(f"| {m} | {fmt_b(s['size_bytes'])} | {s['winner']} | {fmt_t(t)} | " + " | ".join(fmt_t(g) for g in gens) +
                  f" | {mtext} | {fmt_t(s['time_lower_bound_s'])} | {s['gap_percent']:.1f} % |")
        sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
