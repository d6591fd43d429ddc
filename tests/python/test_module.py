"""The Python module against the command line: the same tables, verdicts, counterexamples and
optima (docs/python.md)."""
import _thread
import json
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import collsched


def cli(binary, *args, cwd=None):
    r = subprocess.run([binary, *map(str, args)], capture_output=True, text=True, cwd=cwd)
    return r.returncode, r.stdout


def test_topology_from_spec():
    t = collsched.Topology("ring:8")
    assert (t.spec, t.processors, t.routers, t.diameter) == ("ring:8", 8, 0, 4)
    ch = t.channel_array()
    assert ch.shape == (16, 3) and ch.dtype == np.uint32
    assert {(int(a), int(b)) for a, b, _ in ch} == {(p, (p + 1) % 8) for p in range(8)} | {((p + 1) % 8, p) for p in range(8)}
    assert len(t.to_dict()["processors"]) == 8 and len(t.to_dict()["channels"]) == 16
    assert t.distance(0, 5) == 3


def test_bad_spec_raises_input_error():
    with pytest.raises(collsched.InputError) as e:
        collsched.Topology("rnig:8")
    assert e.value.message == ("topology 'rnig:8': unknown family 'rnig': expected ebft, cbft, bft, fattree, ideal, ring, "
                               "linear, mesh, torus, hypercube, complete, product, butterfly or graph")
    assert e.value.line is None and e.value.diagnostics == []


def test_ring_allgather_holds_in_seven_steps(ring_text):
    t = collsched.compile(ring_text)
    assert (t.steps, len(t), t.collective, t.topology.spec) == (7, 56, "allgather", "ring:8")
    r = collsched.verify(t)
    assert r["verdict"] == "holds" and r["exit_code"] == 0
    assert r["steps"] == 7 and r["transfers"] == 56
    assert r["properties"] == {"capacity": "holds", "ports": "skipped", "queues": "skipped", "replication": "holds",
                               "causality": "holds", "routes": "skipped", "completeness": "holds"}
    s = collsched.simulate(t)
    assert (s["status"], s["steps"], s["exit_code"]) == ("completed", 7, 0)


def test_defines_change_the_schedule(ring_text):
    t = collsched.compile(ring_text, defines={"n": 5})
    assert (t.steps, len(t), t.topology.spec) == (4, 20, "ring:5")
    assert collsched.verify(t)["verdict"] == "holds"


def test_topology_replaces_the_schedules_machine(ring_text, tmp_path):
    # ring:8 written in the schedule; complete:8 given: the same sends, on the other machine
    t = collsched.compile(ring_text, topology="complete:8")
    assert (t.steps, len(t), t.topology.spec) == (7, 56, "complete:8")
    assert collsched.verify(t)["verdict"] == "holds"
    f = tmp_path / "ring.sched"
    f.write_text(ring_text)
    assert collsched.compile(file=f, topology=collsched.Topology("complete:8")).topology.spec == "complete:8"
    assert collsched.load(f, topology="complete:8").topology.spec == "complete:8"
    with pytest.raises(collsched.InputError, match="E040"):
        collsched.compile(ring_text, topology="ring:4")


def test_broken_table_names_step_channel_and_statement(ring_text):
    broken = ring_text.replace("% n) }\n", "% n) }\n    if t == 3 { hop 2 -> 3 msg b(6) }\n")
    t = collsched.compile(broken, name="broken.sched")
    r = collsched.verify(t)
    assert r["verdict"] == "violated" and r["exit_code"] == 1
    assert r["violation_counts"]["capacity"] == 1 and r["violation_counts"]["causality"] == 1
    cap, cause = r["violations"]
    assert cap == {"property": "capacity", "step": 3, "channel": {"from": "2", "to": "3"}, "node": None,
                   "messages": ["b(0)", "b(6)"], "detail": "2 messages (b(0), b(6)) but capacity 1",
                   "origin": "broken.sched:6:27", "when": "t = 3, p = 2"}
    assert (cause["property"], cause["step"], cause["node"], cause["origin"], cause["when"]) == (
        "causality", 3, "2", "broken.sched:7:17", "t = 3")
    assert cause["detail"] == "2 sends b(6) in step 3 but holds it only from the end of step 4"
    sim = collsched.simulate(t)
    assert sim["status"] == "halted" and sim["exit_code"] == 1


def test_dsl_typo_raises_input_error_with_place(ring_text):
    with pytest.raises(collsched.InputError) as e:
        collsched.compile(ring_text.replace("collective", "colective"), name="typo.sched")
    err = e.value
    assert (err.file, err.line, err.column) == ("typo.sched", 3, 1)
    assert err.message == "1 error in typo.sched"
    assert [(d["code"], d["line"], d["column"]) for d in err.diagnostics] == [("E002", 3, 1)]
    assert "(did you mean 'collective'?)" in err.diagnostics[0]["message"]
    assert "  colective allgather\n  ^\n" in err.rendered


def test_numpy_columns_equal_the_command_lines_table(ring_text, binary, tmp_path):
    (tmp_path / "ring.sched").write_text(ring_text)
    code, out = cli(binary, "compile", "ring.sched", cwd=tmp_path)
    assert code == 0
    rows = json.loads(out)["transfers"]
    t = collsched.load(tmp_path / "ring.sched")
    assert t.step.tolist() == [x["step"] for x in rows]
    assert t.src.tolist() == [int(x["from"]) for x in rows]
    assert t.dst.tolist() == [int(x["to"]) for x in rows]
    assert t.message_names() == [x["msg"] for x in rows]
    # step, channel and message are views of the table's own transfers (12 bytes each), read-only
    assert t.step.strides == (12,) and t.channel.ctypes.data == t.step.ctypes.data + 4
    assert not t.step.flags.writeable and t.step.base is not None
    ch = t.topology.channel_array()
    assert (ch[t.channel, 0] == t.src).all() and (ch[t.channel, 1] == t.dst).all()


def test_formats_round_trip(ring_text, tmp_path):
    t = collsched.compile(ring_text)
    for fmt in ("json", "csv"):
        back = collsched.parse_table(t.dumps(fmt))
        assert back.step.tolist() == t.step.tolist() and back.message_names() == t.message_names()
    assert collsched.table_dict(t)["collective"] == "allgather"
    xml = t.save(tmp_path / "ring.xml")
    report = collsched.verify(xml)
    assert report["verdict"] == "holds" and report["exit_code"] == 0
    assert collsched.load(xml).steps == 7
    plan = t.save(tmp_path / "ring.mscclpp.json")  # the format follows the extension, as -o's does
    assert (collsched.verify(plan)["verdict"], collsched.verify(plan)["format"]) == ("holds", "mscclpp")
    first = t.save(tmp_path / "trace", "chakra")
    assert first == str(tmp_path / "trace.0.et")
    assert sorted(p.name for p in tmp_path.glob("trace.[0-9].et")) == [f"trace.{r}.et" for r in range(8)]
    back = collsched.load(first)
    assert (back.steps, len(back)) == (7, 56)
    again = collsched.compile(t.dumps("dsl"))  # the table as a schedule of hops compiles to itself
    assert again.step.tolist() == t.step.tolist() and again.message_names() == t.message_names()


def test_predicted_time_equals_the_command_lines(ring_text, binary, tmp_path):
    (tmp_path / "ring.sched").write_text(ring_text)
    # 8 MiB: NCCL's size of the allgather (its output), 1 MiB per datum (docs/time.md, "Sizes")
    code, out = cli(binary, "verify", "ring.sched", "--size", "8M", "--json", cwd=tmp_path)
    assert code == 0
    t = collsched.load(tmp_path / "ring.sched")
    mine = collsched.verify(t, size="8M")["time"]
    assert mine == json.loads(out)["time"]
    assert mine["sizes"][0]["size"] == 8 << 20 and mine["sizes"][0]["datum_bytes"] == 1 << 20
    # 7 steps of 1 MiB at 10 GB/s per unit of capacity, 1 us each (docs/time.md): 7 * (1 us + 1048576 / 1e10 s)
    assert mine["sizes"][0]["synchronous_s"] == pytest.approx(7 * (1e-6 + 1048576 / 1e10))
    assert collsched.simulate(t, size=8 << 20)["time"] == mine


def test_optimize_proves_the_least_steps():
    r = collsched.optimize("ring:6", "alltoall", timeout=60)
    assert (r["optimum"], r["status"], r["lower_bound"], r["exit_code"]) == (5, "proved", 5, 0)
    w = r["table"]
    assert w.steps == 5 and w.collective == "alltoall"
    assert collsched.verify(w)["verdict"] == "holds"


def test_optimize_at_a_size_returns_the_fastest_with_its_bound():
    r = collsched.optimize("ring:8", "allgather", size=["8K", "8M"], timeout=60)
    assert r["exit_code"] in (0, 3)
    assert [row["size_bytes"] for row in r["sizes"]] == [8192, 8388608]
    for row in r["sizes"]:
        assert row["time_lower_bound_s"] <= row["predicted_time_s"] * (1 + 1e-9)
        t = r["tables"][row["size_bytes"]]
        assert t is not None and collsched.verify(t)["verdict"] == "holds"
    assert r["time_bound"]["assumptions"]
    one = collsched.optimize("ring:8", "allgather", size="8M", timeout=60)
    assert one["table"] is not None and one["predicted_time_s"] == r["sizes"][1]["predicted_time_s"]


def test_optimize_with_a_bad_collective_raises():
    with pytest.raises(collsched.InputError) as e:
        collsched.optimize("ring:4", "allgathr")
    assert "allgathr" in e.value.message


def test_machine_built_in_python(tmp_path):
    # four GPUs on an NVSwitch: every pair linked, each GPU one chunk in and one out per round
    m = collsched.Machine(4, alpha="1 us", bandwidth="25 GB/s")
    for a in range(4):
        for b in range(a + 1, 4):
            m.link(a, b)
    for g in range(4):
        m.group(f"gpu{g}.in", 1, into=g)
        m.group(f"gpu{g}.out", 1, out_of=g)
    topo = m.save(tmp_path / "box.json")
    assert (topo.processors, topo.routers, len(topo.channel_array())) == (4, 0, 12)
    assert [g["name"] for g in topo.to_dict()["groups"]][:2] == ["gpu0.in", "gpu0.out"]
    r = collsched.bandwidth(topo, "allgather", timeout=30)
    # each GPU receives 3 data through its port of 1 per round: R/C >= 3, met by a packing
    assert (r["bound"]["rounds_per_chunk"], r["schedule"]["rounds_per_chunk"], r["exit_code"]) == ("3", "3", 0)
    assert r["schedule"]["bandwidth_optimal"] is True
    assert collsched.verify(r["table"])["verdict"] == "holds"
    # a router is a node of the graph file
    s = collsched.Machine(2)
    s.link(0, "switch").link(1, "switch")
    sw = s.save(tmp_path / "sw.json")
    assert (sw.routers, sw.node_name(2)) == (1, "r1.0")


def test_pareto_frontier_of_a_ring():
    r = collsched.pareto("ring:4", "allgather", max_chunks=2, timeout=60)
    assert (r["complete"], r["end"], r["exit_code"]) == (True, "the bandwidth bound 3/2 is met", 0)
    assert [(p["steps"], p["rounds"], p["chunks"], p["rounds_per_chunk"]) for p in r["frontier"]] == [(2, 3, 2, "3/2")]
    t = r["tables"]["allgather-S2-R3-C2"]
    assert t.steps == 2
    assert collsched.verify(t)["verdict"] == "holds"


def test_schedule_built_step_by_step(ring_text):
    s = collsched.Schedule("ring:8", "allgather")
    for t in range(1, 8):
        st = s.step(t)
        for p in range(8):
            st.send(p, (p + 1) % 8, f"b({(p - t + 1) % 8})")
    built = s.compile()
    written = collsched.compile(ring_text)
    assert built.step.tolist() == written.step.tolist() and built.message_names() == written.message_names()
    assert collsched.verify(built)["verdict"] == "holds"
    s.step(8).send(0, 1, "b(9)")
    with pytest.raises(collsched.InputError) as e:
        s.compile()
    # 2 header lines, 7 steps of 10 lines, then step 8: the send is line 74
    assert (e.value.line, e.value.column, e.value.diagnostics[0]["code"]) == (74, 21, "E040")
    assert e.value.diagnostics[0]["message"] == "processor 9 does not exist (ring:8 has processors 0..7)"


def test_hostile_values_are_input_errors_with_the_reason(ring_text, tmp_path):
    # issue 41: IndexError, IsADirectoryError and FileNotFoundError came from deep inside
    topo = collsched.Topology("ring:8")
    with pytest.raises(collsched.InputError, match=r"node 8 does not exist: ring:8 has nodes 0\.\.7"):
        topo.node_name(8)
    # below 0, past 64 bits or not an int: pybind11's TypeError ("incompatible function arguments") before
    for bad in (-1, 2**70):
        with pytest.raises(collsched.InputError, match=r"node .* does not exist: ring:8 has nodes 0\.\.7"):
            topo.node_name(bad)
    with pytest.raises(collsched.InputError, match=r"node 1\.5: expected an integer"):
        topo.distance(0, 1.5)
    with pytest.raises(collsched.InputError, match="node -2 does not exist"):
        topo.distance(-2, 0)
    with pytest.raises(collsched.InputError, match="is a directory, not a schedule"):
        collsched.compile(file=tmp_path)
    with pytest.raises(collsched.InputError, match="cannot read a schedule: No such file"):
        collsched.compile(file=tmp_path / "missing.txt")
    with pytest.raises(collsched.InputError, match="cannot write the graph file: No such file or directory"):
        collsched.Machine(2).link(0, 1).save(tmp_path / "no" / "box.json")
    t = collsched.compile(ring_text)
    # a message id past the table's was named "composite #N", a message that does not exist
    last = len(t.message_names()) and t.message_name(int(t.message.max()))
    assert last and not last.startswith("composite")
    for bad in (10**6, -1, 2**64):
        with pytest.raises(collsched.InputError, match=r"message id .* does not exist: the table's message ids are 0\.\."):
            t.message_name(bad)
    # sizes: 2^64 bytes and an empty list were accepted (the list as no size at all)
    for size in (2**64, 1e-5, [], float("nan"), True):
        with pytest.raises(collsched.InputError):
            collsched.verify(t, size=size)
    # a time limit of nan or -1 answered "unknown" instead of refusing the value
    for timeout in (float("nan"), -1, 0, float("inf")):
        with pytest.raises(collsched.InputError, match="expected a number of seconds above 0"):
            collsched.verify(t, engine="z3", timeout=timeout)
    path = tmp_path / "r.sched"
    path.write_text(ring_text)
    with pytest.raises(collsched.InputError, match="timeout=-1"):
        collsched.verify(path, engine="z3", timeout=-1)
    # a message of None, or one with a line break (which wrote statements of its own into the schedule)
    step = collsched.Schedule("ring:4", "allgather").step(1)
    with pytest.raises(collsched.InputError, match="msg=None"):
        step.send(0, 1, None)
    with pytest.raises(collsched.InputError, match="one expression on one line"):
        step.send(0, 1, "b(0)\n}\nstep 2 {\n  send 1 -> 2 msg b(1)")
    with pytest.raises(collsched.InputError, match="one expression on one line"):
        step.hop(0, "1 msg b(0)\n  hop 1", "b(0)")
    with pytest.raises(collsched.InputError, match="src=None"):
        step.send(None, 1)
    step.send(0, 1)  # no msg: the sender's own datum, as the language's `send 0 -> 1`


def test_compare_tables(ring_text):
    fast = collsched.compile(ring_text)
    r = collsched.compare({"ring": fast, "ring_again": collsched.compile(ring_text)}, sizes="1K,1M")
    assert [c["name"] for c in r["schedules"]] == ["ring", "ring_again"]


def test_ctrl_c_stops_a_long_optimize_and_releases_the_gil():
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    counter = threading.Thread(target=count)
    counter.start()
    threading.Timer(1.0, _thread.interrupt_main).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            # without collsched's constructions (the translates prove it at once): the solver's climb
            collsched.optimize("torus:4x4", "alltoall", model="ports=single", timeout=600, no_constructions=True)
    finally:
        stop.set()
        counter.join()
    assert len(ticks) > 10  # the other thread ran while optimize did
    # the stop request is cleared: the next run goes to its end
    assert collsched.optimize("ring:6", "alltoall", timeout=60)["status"] == "proved"


def test_without_numpy_the_module_imports_and_arrays_name_the_package(tmp_path):
    # issue 45: a Python without numpy (a pyenv) got a bare ModuleNotFoundError; the module needs
    # numpy only for arrays, so it imports, works, and says what to install when an array is asked for
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    code = (
        "import collsched\n"
        "topo = collsched.Topology('ring:4')\n"
        "assert topo.distance(0, 2) == 2\n"
        "try:\n"
        "    topo.channel_array()\n"
        "except ImportError as e:\n"
        "    print(e)\n"
        "else:\n"
        "    raise SystemExit('no ImportError')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "need numpy" in r.stdout
    assert "apt-get install python3-numpy" in r.stdout


def test_machine_and_compare_refuse_values_that_were_taken_silently(ring_text):
    # Machine(2.5) was truncated to 2, Machine(True) was 1 processor, None became router "None"
    # or link type "null", and compare({None: t}) wrote a table named "None"
    for bad in (2.5, True, "4", None, 0):
        with pytest.raises(collsched.InputError, match="Machine\\(processors\\)"):
            collsched.Machine(bad)
    m = collsched.Machine(2)
    with pytest.raises(collsched.InputError, match="node None: expected a processor"):
        m.link(None, 1)
    with pytest.raises(collsched.InputError, match="node True"):
        m.link(True, 1)
    with pytest.raises(collsched.InputError, match="cap=1.5: expected a whole number"):
        m.link(0, 1, cap=1.5)
    with pytest.raises(collsched.InputError, match="link type None"):
        m.link_type(None, bandwidth="1 GB/s")
    with pytest.raises(collsched.InputError, match="router name None"):
        m.router(None)
    assert m.edges == [] and m.link_types == {}
    t = collsched.compile(ring_text)
    with pytest.raises(collsched.InputError, match="compare\\(\\) schedule name None"):
        collsched.compare({None: t}, sizes="1K")
