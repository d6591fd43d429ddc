#!/usr/bin/env python3
"""Writes table seeds for the fast JSON reader's pieces path (compiler/io/table_json_fast.cpp).

Usage: fuzz/make_piece_seeds.py COLLSCHED OUTDIR

The pieces path cuts the transfers array at a comma followed by a line end (every 96 bytes in
fuzzing builds), so its seeds are tables with 50 to 300 transfers one per line, and the layouts
it must hand to the whole-document path or to the reference reader: CRLF, transfers spread over
lines, transfers before or between other fields, escapes, leading commas, one line, extra fields
in transfers, and a few broken documents. Every seed stays under the harness's 16 KiB
(fuzz/run.sh -max_len). The tables come from schedules compiled with COLLSCHED.
See fuzz/README.md ("Corpus").
"""
import json
import os
import subprocess
import sys

MAX_LEN = 16384


def compile_table(collsched, schedule, *args):
    out = subprocess.run([collsched, "compile", schedule, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def head_fields(table, order=None):
    keys = [k for k in table if k != "transfers"] if order is None else order
    return [f"{json.dumps(k)}: {json.dumps(table[k], separators=(',', ':'))}" for k in keys]


def transfer(x, sep=", "):
    return "{" + sep.join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in x.items()) + "}"


def layout(table, lines, head_order=None, tail=(), nl="\n", comma=",", lead=False):
    """The table with the given transfer texts one per line; `tail` keys come after the transfers."""
    head = head_fields(table, head_order)
    if lead:
        body = "[\n  " + ("\n " + comma + " ").join(lines) + "\n]"
    else:
        body = "[\n  " + (comma + "\n  ").join(lines) + "\n]"
    parts = head + [f'"transfers": {body}'] + [f"{json.dumps(k)}: {json.dumps(table[k])}" for k in tail]
    return ("{" + ",\n ".join(parts) + "}\n").replace("\n", nl)


def main():
    collsched, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    ring11 = compile_table(collsched, "schedules/chunks/ring_allgather.sched", "-D", "n=11")
    ring10 = compile_table(collsched, "schedules/chunks/ring_allgather.sched", "-D", "n=10")
    ring6 = compile_table(collsched, "schedules/chunks/ring_allgather.sched", "-D", "n=6")
    ring8_at = compile_table(collsched, "schedules/chunks/ring_allgather.sched", "-D", "n=8", "--locations")
    hc32 = compile_table(collsched, "schedules/cm/hypercube_complement.sched", "-D", "n=32")
    ebft8 = compile_table(collsched, "schedules/bft/ebft_alltoall.sched", "-D", "n=8")
    ar8 = compile_table(collsched, "schedules/reduce/allreduce_ring.sched", "-D", "n=8")

    def lines(t, sep=", "):
        return [transfer(x, sep) for x in t["transfers"]]

    seeds = {
        # the common layout: transfers last, one per line (chunked messages, an alltoall, a reduction)
        "pieces_ring11_chunks": layout(ring11, lines(ring11)),
        "pieces_ebft8_compact": layout(ebft8, [transfer(x, ",").replace(": ", ":") for x in ebft8["transfers"]]),
        "pieces_allreduce_ring8": layout(ar8, lines(ar8)),
        # CRLF line ends, and spaces and tabs between the comma and the line end
        "pieces_hc32_crlf": layout(hc32, lines(hc32), nl="\r\n"),
        "pieces_ring10_comma_blanks": layout(ring10, lines(ring10), comma=", \t"),
        # a transfer spread over four lines: cuts fall inside elements
        "pieces_ring10_multiline": layout(ring10, lines(ring10, sep=",\n    ")),
        # transfers before the other fields, and between them
        "pieces_ring11_transfers_first": "{" + layout(ring11, lines(ring11), head_order=[])[1:].rstrip("}\n")
        + ",\n " + ",\n ".join(head_fields(ring11)) + "}\n",
        "pieces_hc32_transfers_middle": layout(hc32, lines(hc32), head_order=["format", "topology", "model", "collective"],
                                               tail=[k for k in hc32 if k not in ("format", "topology", "model", "collective", "transfers")]),
        # commas at the start of the line (no cut), and the whole table on one line
        "pieces_ring10_leading_commas": layout(ring10, lines(ring10), lead=True),
        "pieces_hc32_one_line": layout(hc32, lines(hc32)).replace("\n", ""),
        # escapes in transfer strings and in a key; an extra field in every transfer
        "pieces_ring6_escapes": layout(ring6, lines(ring6)).replace('"msg": "b(1,', '"msg": "b\\u00281,')
        .replace('"from": "2"', '"from": "\\u0032"').replace('"collective"', '"c\\u006fllective"'),
        "pieces_ring8_locations": layout(ring8_at, lines(ring8_at)),
        # broken: a trailing comma, a missing comma between two lines, a second transfers array
        "pieces_ring10_trailing_comma": layout(ring10, lines(ring10)).replace("\n]", ",\n]"),
        "pieces_ring10_missing_comma": layout(ring10, lines(ring10)).replace(lines(ring10)[90] + ",", lines(ring10)[90]),
        "pieces_ring6_two_transfer_arrays": layout(ring6, lines(ring6)).rstrip("}\n")
        + ',\n "transfers": [\n  ' + ",\n  ".join(lines(ring6)[:5]) + "\n]}\n",
    }
    for name, text in seeds.items():
        data = text.encode()
        if len(data) > MAX_LEN:
            sys.exit(f"{name}: {len(data)} bytes is more than {MAX_LEN}")
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        print(name, len(data), "bytes,", text.count('"step"'), "transfers")


if __name__ == "__main__":
    main()
