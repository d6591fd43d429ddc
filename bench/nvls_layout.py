#!/usr/bin/env python3
"""NCCL's one-box NVLS allreduce below 2 MiB, by its channel layout (docs/time.md, "Calibration").

Usage: nvls_layout.py [--expect PCT PCT]   (from the source root; reads runtime/executor/calibration/measurements.csv)

With --expect: exit 1 unless the two runs' held-out worst errors, to 0.1 %, are those (docs/time.md's).

The analysis behind the executor model's NVLS layout (verifier/time/nccl_tuner.hpp nccl_nvls_layout,
which `collsched calibrate` times as tables): for the Azure NVLS rows of ND H100 v5 (NCCL 2.18.5) and ND
H200 v5 (NCCL 2.20.5) up to 2 MiB, where every NCCL channel runs one loop (16 channels x 8 heads x
16 KiB chunks), it lays the buffer out as that NCCL version does and charges the busiest channel
(one thread block: scatter, reduce, gather in turn) a + sum over its chunks of (t0 + chunk / R).
NCCL 2.18.5 (src/enqueue.cc chunk size, src/collectives/device/all_reduce.h NVLS RunWorkElement)
gives channel b the bytes from b x 8 x chunk, so one channel carries everything up to 128 KiB;
NCCL 2.20.5 (src/enqueue.cc maxBytesPerChannel, lastChunkCount, NCCL_SIMPLE_ALIGNMENT) gives every
channel size / 16 rounded up to 4 KiB and spreads it over the heads in chunks of a whole 4 KiB. a, t0 and R are fitted (least relative error, a grid)
on every other size (calibrate's training split) and the rest is printed as held out.
"""
import argparse
import csv
import math
import sys

CSV = "runtime/executor/calibration/measurements.csv"
RUNS = [("ND H100 v5", "2.18"), ("ND H200 v5", "2.20")]
CHANNELS, HEADS, CHUNK = 16, 8, 16384  # nvlsChannels, heads on one box, the chunk below 8 MiB


def busiest_channel(size, version):
    """Chunk sizes the busiest channel moves, one loop (size <= CHANNELS x HEADS x CHUNK)."""
    if version == "2.18":  # channel 0 takes the first HEADS chunks
        head = min(size, HEADS * CHUNK)
        return [min(CHUNK, head - j * CHUNK) for j in range(math.ceil(head / CHUNK))]
    per_channel = math.ceil(math.ceil(size / CHANNELS / 16) * 16 / 4096) * 4096  # 16-byte aligned, then whole 4 KiB
    work = min(per_channel, size)
    chunk = math.ceil(math.ceil(work / HEADS) / 4096) * 4096  # the last loop's chunk: its rest / heads, whole 4 KiB
    return [min(chunk, work - j * chunk) for j in range(math.ceil(work / chunk))]


def rows(machine):
    out = []
    with open(CSV, newline="") as f:
        for r in csv.DictReader(f):
            if r["machine"] == machine and r["source"].startswith("Azure/AI-benchmarking-guide") and r["busbw_gbps"]:
                size = float(r["size_bytes"])
                if size <= CHANNELS * HEADS * CHUNK:
                    out.append((size, size * 2 * 7 / 8 / float(r["busbw_gbps"]) / 1e3))  # us, nccl-tests' bus factor
    return sorted(out)


def predict(size, version, a, t0, rate):
    return a + sum(t0 + c / rate / 1e3 for c in busiest_channel(size, version))  # rate in GB/s, times in us


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--expect", type=float, nargs=2, metavar="PCT", help="exit 1 unless the held-out worst errors are these")
    worst = []
    for machine, version in RUNS:
        pts = rows(machine)
        train = pts[0::2]
        best = None
        for t0 in [i / 10 for i in range(41)]:
            for rate in [4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 25, 30, 40, 60, 100]:
                a = sorted(t - predict(s, version, 0, t0, rate) for s, t in train)[len(train) // 2]
                loss = sum(abs(predict(s, version, a, t0, rate) / t - 1) for s, t in train)
                if best is None or loss < best[0]:
                    best = (loss, a, t0, rate)
        _, a, t0, rate = best
        held = [abs(predict(s, version, a, t0, rate) / t - 1) for s, t in pts[1::2]]
        worst.append(round(100 * max(held), 1))
        print(f"{machine} (NCCL {version} layout): a {a:.1f} us, t0 {t0:.1f} us a chunk, R {rate} GB/s a channel; "
              f"held-out worst {100 * max(held):.1f} %")
        for i, (s, t) in enumerate(pts):
            p = predict(s, version, a, t0, rate)
            print(f"  {'fit ' if i % 2 == 0 else 'held'} {int(s):>8} B  measured {t:6.1f} us  predicted {p:6.1f} us  {100 * (p / t - 1):+6.1f} %")
    expect = ap.parse_args().expect
    if expect is not None and worst != expect:
        sys.exit(f"expected the held-out worst errors {expect} %, got {worst} %")


if __name__ == "__main__":
    main()
