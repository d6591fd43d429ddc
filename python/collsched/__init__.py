"""collsched in Python: topologies, schedules, send tables, and the proofs about them.

    import collsched
    topo = collsched.Topology("ring:8")
    t = collsched.compile(open("schedules/nccl/ring_allgather.sched").read(), defines={"n": 8})
    collsched.verify(t)["verdict"]          # 'holds'

Every report is the dict the command line's `--json` prints (docs/python.md lists them); bad
input raises InputError with the file, line and column; a property that fails is a report, not
an exception. Long calls (optimize, pareto, bandwidth, verify of large tables) release the GIL
and stop cleanly on Ctrl-C (KeyboardInterrupt).
"""
import json as _json
import os as _os
import re as _re
import math as _math
import tempfile as _tempfile

from . import _collsched
from ._collsched import Table, Topology

__all__ = ["InputError", "ProgramViolation", "Topology", "Table", "Machine", "Schedule", "compile", "load", "parse_table", "verify",
           "simulate", "optimize", "pareto", "bandwidth", "compare", "run", "formats", "table_dict"]

_PLACE = _re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+): ")


class InputError(ValueError):
    """Bad input (the command line's exit code 2): a schedule that does not compile, a table or
    graph file that does not read, a spec or option that is wrong.

    Attributes: message (the command line's one-line message), file, line, column (of the first
    error; None where the input has no place), diagnostics (a schedule's: dicts with file, line,
    column, severity, code, message, as `--json` prints them) and rendered (the diagnostics with
    the source lines and carets, as the command line prints them on stderr).
    """

    def __init__(self, message, diagnostics=(), rendered=""):
        self.message = message
        self.diagnostics = list(diagnostics)
        self.rendered = rendered
        self.file = self.line = self.column = None
        first = next((d for d in self.diagnostics if d["severity"] == "error"), None)
        if first is not None:
            self.file, self.line, self.column = first["file"], first["line"], first["column"]
        else:
            m = _PLACE.match(message)
            if m:
                self.file, self.line, self.column = m.group("file"), int(m.group("line")), int(m.group("column"))
        super().__init__(rendered + message if rendered else message)


class ProgramViolation(InputError):
    """An MSCCL-IR program that deadlocks, races or computes the wrong result, met where a table
    was expected (load, simulate): the message holds its counterexamples. `verify(path)` reports
    such a program as a result instead."""


_collsched._set_error_types(InputError, ProgramViolation)


def _defines(defines):
    if defines is None:
        return []
    if isinstance(defines, dict):
        return [f"{k}={v}" for k, v in defines.items()]
    return [str(d) for d in defines]


def _spec(topology):
    if isinstance(topology, Topology):
        return topology.spec
    if isinstance(topology, Machine):
        raise InputError("a Machine is used through its graph file: topo = machine.save('box.json')")
    return str(topology)


def _size_text(size):
    """The command line's text of a size, a list of sizes or a range ("1K..1G"); None: no size.
    An empty list, a bool or another type is refused (an empty list used to mean no size)."""
    if size is None:
        return ""
    if isinstance(size, (list, tuple)):
        if not size:
            raise InputError(f"size={size!r}: an empty list names no size; give a size (1024, \"1M\") or a list of them")
        return ",".join(_size_text(s) for s in size)
    if isinstance(size, bool) or not isinstance(size, (int, float, str)):
        raise InputError(f"size={size!r}: expected bytes (an int), a text such as \"1M\" or \"1K..1G\", or a list of them")
    if isinstance(size, float):
        if not _math.isfinite(size):
            raise InputError(f"size={size!r}: expected a finite number of bytes")
        return repr(size)
    return str(size)


def _read_text(path, what):
    """The text of a file, or InputError with the reason (a directory, a missing file, bytes that
    are not UTF-8) instead of the OSError deep inside open()."""
    path = _os.fspath(path)
    if _os.path.isdir(path):
        raise InputError(f"{path}: is a directory, not {what}")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read {what}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: is not UTF-8 text (byte {e.start}), not {what}") from None


def _seconds(value, name):
    """A time limit as the command line's --timeout takes it: a finite number of seconds above 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _math.isfinite(value) or not 0 < value <= 1e7:
        raise InputError(f"{name}={value!r}: expected a number of seconds above 0 and up to 10000000")
    return value


def compile(text=None, *, file=None, defines=None, name=None, strict=False, topology=None):
    """Compiles a schedule (docs/dsl.md) to a Table: `text` (DSL source) or `file` (a .sched
    path), with `defines` overriding its params ({"n": 8} or ["n=8"]) and `topology` (a spec,
    "graph:FILE" or a Topology) replacing its topology statement, as --topology does. Raises
    InputError with every diagnostic of the failing stage; warnings (W001) go to stderr, or fail
    with `strict`."""
    if (text is None) == (file is None):
        raise TypeError("compile() takes the text of a schedule or file=PATH, one of them")
    machine = "" if topology is None else _spec(topology)
    if file is not None:
        if _os.path.isdir(_os.fspath(file)):
            raise InputError(f"{_os.fspath(file)}: is a directory, not a schedule")
        return _collsched._load(_os.fspath(file), _defines(defines), machine, strict) if str(file).endswith(".sched") else \
            _collsched._compile(_read_text(file, "a schedule"), _os.fspath(file), _defines(defines), strict,
                                _os.path.dirname(_os.fspath(file)), machine)
    return _collsched._compile(text, name or "<python>", _defines(defines), strict, "", machine)


def load(path, *, defines=None, topology=None, strict=False):
    """Reads what the command line reads: a table (JSON, CSV, per-rank JSON), a schedule
    (.sched, with `defines`; `topology` replaces its machine), an MSCCL-IR program (levelled onto
    `topology`, default complete:P)
    or Chakra traces (PREFIX.0.et). Raises InputError, or ProgramViolation for an MSCCL-IR
    program that does not hold."""
    return _collsched._load(_os.fspath(path), _defines(defines), "" if topology is None else _spec(topology), strict)


def parse_table(text, name="<python>"):
    """A table from its JSON or CSV text (docs/formats.md)."""
    return _collsched._parse_table(text, name)


def formats():
    """The output formats of Table.save (those of `collsched convert --format`); Table.dumps
    writes all but chakra."""
    return list(_collsched._formats())


def _dumps(self, format="json", *, proto="", instances=0):
    """The table in `format` (formats(): json, csv, ranks, msccl, mscclpp, dot, svg, html, dsl...)
    as text. `proto` and `instances` are MSCCL-IR's and MSCCL++'s (docs/exports.md)."""
    return self._write(format, proto, instances).decode("utf-8")


def _save(self, path, format=None, *, proto="", instances=0, bytes=1024):
    """Writes the table to `path` in `format` (default: the one the extension names, as `-o`
    does; else json), as `collsched convert -o PATH` does: atomically, written whole or not at
    all. chakra writes PATH.0.et, PATH.1.et, ... (PATH is the prefix; `bytes` per message) and
    returns PATH.0.et, which load() reads back; the other formats return `path`."""
    path = _os.fspath(path)
    if format is None:
        format = _collsched._output_format(path)
    self._save(path, format, proto, instances, bytes)
    return path + ".0.et" if format == "chakra" else path


def table_dict(table):
    """The table as the JSON table format's dict (docs/formats.md): topology, model, collective,
    transfers [{step, from, to, message}, ...] and the rest."""
    return _json.loads(table.dumps("json"))


def _columns(self):
    """The columns as numpy arrays: step, channel, message (views of the table's memory), src,
    dst (node numbers) and message names, in the table's order (by step, channel, message)."""
    return {"step": self.step, "from": self.src, "to": self.dst, "channel": self.channel, "message": self.message}


Table.dumps = _dumps
Table.save = _save
Table.columns = _columns
Topology.to_dict = lambda self: _json.loads(self._json())
Topology.to_dict.__doc__ = "The topology as `collsched topo --format json` prints it (processors, routers, channels, groups)."


def run(*args):
    """Runs a command line in memory: run("optimize", "--topology", "ring:8", ...) returns
    (exit_code, output text). The functions below are this with --json, read as dicts."""
    return _collsched._run([str(a) for a in args])


def _option_args(options):
    out = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-") if len(key) > 1 else "-" + key
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
        else:
            out += [flag, str(value)]
    return out


def _json_command(name, positional, options):
    code, out = run(name, *positional, *_option_args(options), "--json")
    report = _json.loads(out)
    report.setdefault("exit_code", code)
    return report


def verify(x, *, defines=None, engine="direct", routes="any", max_violations=20, timeout=60, size=None, link=None, **options):
    """Checks a Table, or a file (table, schedule, MSCCL-IR program, MSCCL++ plan, Chakra
    traces), against its model; returns `verify --json`'s report (verdict, properties,
    violations with step, channel, messages and the statement behind them, ...). With `size`
    (bytes, "1M" or "1K..1G") a table that holds also gets the predicted times (docs/time.md)."""
    _seconds(timeout, "timeout")
    if isinstance(x, Table):
        if options:
            raise TypeError(f"verify() of a Table takes no {', '.join(options)}")
        if engine == "both":
            raise InputError("engine both compares the two engines on a file: verify(path, engine='both')")
        report = _json.loads(_collsched._verify(x, engine, routes, max_violations, timeout, _size_text(size), link or ""))
        report["exit_code"] = 0 if report["verdict"] == "holds" else 3 if report["verdict"] == "unknown" else 1
        return report
    return _json_command("verify", [_os.fspath(x)], dict(D=_defines(defines), engine=engine, routes=routes,
                                                          max_violations=max_violations, timeout=timeout,
                                                          size=_size_text(size) or None, link=link, **options))


def simulate(x, *, defines=None, trace=False, size=None, link=None, **options):
    """Replays a Table (or a file) on the step simulator; returns `simulate --json`'s report
    (status, steps, deliveries, halt, queue high-water marks, holes, busiest channels, ...) and
    with `size` the predicted times."""
    if isinstance(x, Table):
        if options:
            raise TypeError(f"simulate() of a Table takes no {', '.join(options)}")
        report = _json.loads(_collsched._simulate(x, trace, _size_text(size), link or ""))
        report["exit_code"] = 0 if report["status"] == "completed" else 1
        return report
    return _json_command("simulate", [_os.fspath(x)], dict(D=_defines(defines), trace=trace, size=_size_text(size) or None,
                                                            link=link, **options))


def _with_tables(name, positional, options, flag, read):
    """Runs a command that writes schedules (optimize -o, bandwidth -o, pareto -d) into a
    temporary directory and reads them back as Tables with `read`."""
    with _tempfile.TemporaryDirectory(prefix="collsched-") as tmp:
        report = _json_command(name, positional, {**options, flag: _os.path.join(tmp, "w.json") if flag != "dir" else tmp})
        read(report, tmp)
    return report


def optimize(topology, collective, *, model=None, timeout=300, size=None, **options):
    """The least steps of `collective` on `topology` (a Topology or spec) under `model`
    ("queues=none,ports=half"): `optimize --json`'s report (optimum, status: proved / found /
    ..., lower bounds, attempts per horizon, the bandwidth end) and, when a schedule was found,
    report["table"], the witness as a Table. Other options as the command line's, in Python
    spelling: chunks=2, rounds=3, routes="fixed", solver="z3", solve_timeout=10, method="direct",
    greedy=True, memory="2G".

    With `size` (bytes, "16M", "64K..1G:16" or a list; NCCL's convention, docs/time.md "Sizes")
    time is the objective (`optimize --size`): the report has size_bytes, predicted_time_s,
    time_lower_bound_s, time_bound and one entry per size in report["sizes"]; report["table"] is
    the fastest schedule (one size) and report["tables"] maps each size in bytes to its fastest."""
    sizes = _size_text(size)
    def read(report, tmp):
        path = _os.path.join(tmp, "w.json")
        report["table"] = load(path) if _os.path.exists(path) else None
        if sizes and "sizes" in report:
            report["tables"] = {}
            for row in report["sizes"]:
                files = row.pop("witness", None) or []
                report["tables"][row["size_bytes"]] = load(files[0]) if files else None
            if report["table"] is None and len(report["sizes"]) == 1:
                report["table"] = report["tables"][report["sizes"][0]["size_bytes"]]
        report.pop("witness", None)
    return _with_tables("optimize", [], dict(topology=_spec(topology), collective=collective, model=model, timeout=timeout,
                                             size=sizes or None, **options), "output", read)


def bandwidth(topology, collective, *, model=None, timeout=60, size=None, **options):
    """The least rounds per chunk (R/C) any schedule can reach, proved by a cut, and a verified
    tree packing: `bandwidth --json`'s report, with report["table"] the packed schedule. With
    `size` also report["time"]: the proved lower bound on time at each size (and the packing's time)."""
    options["size"] = _size_text(size) or None
    def read(report, tmp):
        path = _os.path.join(tmp, "w.json")
        report["table"] = load(path) if _os.path.exists(path) else None
    return _with_tables("bandwidth", [], dict(topology=_spec(topology), collective=collective, model=model, timeout=timeout,
                                              **options), "output", read)


def pareto(topology, collective, *, max_chunks=8, timeout=300, size=None, **options):
    """The frontier of steps against rounds per chunk: `pareto --json`'s report; every point's
    schedule is in report["tables"] under its name (the file stem `pareto -d` writes)."""
    def read(report, tmp):
        report["tables"] = {name[:-5]: load(_os.path.join(tmp, name)) for name in sorted(_os.listdir(tmp)) if name.endswith(".json")}
        for point in report.get("frontier", []):
            point.pop("files", None)  # the temporary files, read into report["tables"]
    return _with_tables("pareto", [], dict(topology=_spec(topology), collective=collective, max_chunks=max_chunks,
                                           timeout=timeout, size=_size_text(size) or None, **options), "dir", read)


def compare(schedules, *, sizes="1K..1G", baseline=None, time="async", link=None, defines=None, **options):
    """Which schedule wins at which size (`compare --json`): `schedules` are paths, or Tables
    (given as {name: table} to name them), predicted at `sizes` on the topology's link speeds."""
    if isinstance(schedules, dict):
        named = list(schedules.items())
        for name, _ in named:
            _name("compare() schedule name", name)
    else:
        named = [(None, s) for s in schedules]
    with _tempfile.TemporaryDirectory(prefix="collsched-") as tmp:
        paths = []
        for i, (name, s) in enumerate(named):
            if isinstance(s, Table):
                paths.append(s.save(_os.path.join(tmp, f"{name or f'table{i}'}.json")))
            else:
                paths.append(_os.fspath(s))
        return _json_command("compare", paths, dict(sizes=_size_text(sizes), baseline=baseline, time=time, link=link,
                                                      D=_defines(defines), **options))


def _whole(what, value, least):
    """`value` when it is an int (not a bool) of at least `least`, else InputError naming `what`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what}={value!r}: expected a whole number (an int), not {type(value).__name__}")
    if value < least:
        raise InputError(f"{what}={value!r}: expected at least {least}")
    return value


def _name(what, value):
    """`value` when it is a non-empty text without '/' or NUL (it may become a file name), else InputError."""
    if not isinstance(value, str) or not value or "/" in value or "\0" in value:
        raise InputError(f"{what} {value!r}: expected a non-empty text without '/' or NUL")
    return value


class Machine:
    """A machine built in Python: processors, routers (switches, NICs), links with a capacity
    and a speed, and link groups; saved as a graph file (docs/topologies.md, "Graph files";
    docs/formats.md, "Link speeds"), which is the Topology the command line uses.

        m = collsched.Machine(processors=8, alpha="0.7 us", bandwidth="25 GB/s")
        for g in range(8):
            m.link(g, "sw", cap=1)                 # "sw" becomes router r1.0
        topo = m.save("box.json")                  # collsched.Topology("graph:box.json")
    """

    def __init__(self, processors, *, alpha=None, bandwidth=None):
        self.processors = _whole("Machine(processors)", processors, 1)
        self.alpha, self.bandwidth = alpha, bandwidth
        self._routers = {}
        self.link_types = {}
        self.edges = []
        self.groups = []

    def router(self, name):
        """The graph-file name (r1.K) of the router called `name`, adding it when new."""
        _name("router name", name)
        if name not in self._routers:
            self._routers[name] = f"r1.{len(self._routers)}"
        return self._routers[name]

    def _node(self, n):
        if isinstance(n, bool) or not isinstance(n, (int, str)):
            raise InputError(f"node {n!r}: expected a processor (an int) or a router's name (a text)")
        if isinstance(n, int):
            if not 0 <= n < self.processors:
                raise InputError(f"processor {n}: the machine has processors 0..{self.processors - 1}")
            return n
        return self.router(n)

    def link_type(self, name, *, alpha=None, bandwidth=None, note=None):
        """Names a speed (NVLink, InfiniBand) for links: {"alpha": "0.6 us", "bandwidth": "300 GB/s"}."""
        _name("link type", name)
        self.link_types[name] = {k: v for k, v in (("alpha", alpha), ("bandwidth", bandwidth), ("note", note)) if v is not None}
        return name

    def link(self, a, b, *, cap=1, type=None, alpha=None, bandwidth=None):
        """A bidirectional link between processors (ints) or routers (names), `cap` transfers per
        step each way; the speed from `type`, or its own alpha and bandwidth per unit of capacity."""
        edge = {"from": self._node(a), "to": self._node(b), "cap": _whole("cap", cap, 1)}
        for key, value in (("type", type), ("alpha", alpha), ("bandwidth", bandwidth)):
            if value is not None:
                edge[key] = value
        self.edges.append(edge)
        return self

    def group(self, name, cap, *, out_of=None, into=None, channels=(), bandwidth=None):
        """A link group: channels that share `cap` per step (all out of a node, into a node, or
        the directed pairs in `channels`)."""
        g = {"name": _name("group name", name), "cap": _whole("cap", cap, 1)}
        if out_of is not None:
            g["out_of"] = self._node(out_of)
        if into is not None:
            g["into"] = self._node(into)
        if channels:
            g["channels"] = [[self._node(u), self._node(v)] for u, v in channels]
        if bandwidth is not None:
            g["bandwidth"] = bandwidth
        self.groups.append(g)
        return self

    def to_dict(self):
        """The graph file as a dict."""
        d = {"processors": self.processors, "routers": len(self._routers)}
        if self.alpha is not None:
            d["alpha"] = self.alpha
        if self.bandwidth is not None:
            d["bandwidth"] = self.bandwidth
        if self.link_types:
            d["link_types"] = self.link_types
        d["edges"] = self.edges
        if self.groups:
            d["groups"] = self.groups
        return d

    def save(self, path):
        """Writes the graph file and returns its Topology (graph:PATH), checked as the command line checks it."""
        path = _os.fspath(path)
        try:
            with open(path, "w", encoding="utf-8") as f:
                _json.dump(self.to_dict(), f, indent=1)
                f.write("\n")
        except OSError as e:
            raise InputError(f"{path}: cannot write the graph file: {e.strerror or e}") from None
        return Topology("graph:" + path)


class Schedule:
    """A schedule built step by step in Python, written as the schedule language (docs/dsl.md)
    and compiled by the same compiler, so its diagnostics and checks are the language's:

        s = collsched.Schedule("ring:4", "allgather")
        for t in range(1, 4):
            st = s.step(t)
            for p in range(4):
                st.send(p, (p + 1) % 4, f"b({(p - t + 1) % 4})")
        table = s.compile()
    """

    class _Step:
        _NO_MESSAGE = object()

        def __init__(self, lines):
            self._lines = lines

        @staticmethod
        def _term(value, what):
            """A node or message as one line of the language: an int, or text without line breaks,
            braces or other control characters (a newline in it would add statements of its own)."""
            if isinstance(value, bool) or value is None or not isinstance(value, (int, str)):
                raise InputError(f"{what}={value!r}: expected " + ("a message name such as 'b(0)'" if what == "msg" else
                                                                    "a processor number or a node name"))
            text = str(value)
            if not text.strip() or any(c in "{}#" or ord(c) < 0x20 or ord(c) == 0x7f for c in text):
                raise InputError(f"{what}={value!r}: a {'message' if what == 'msg' else 'node'} is one expression on one line "
                                 "(no line break, control character, brace or comment)")
            return text

        def send(self, src, dst, msg=_NO_MESSAGE):
            """`send src -> dst [msg M]`: cut-through along the route, the sender must hold M (left
            out: the sender's own datum)."""
            line = f"  send {self._term(src, 'src')} -> {self._term(dst, 'dst')}"
            if msg is not Schedule._Step._NO_MESSAGE:
                line += f" msg {self._term(msg, 'msg')}"
            self._lines.append(line)
            return self

        def hop(self, src, dst, msg):
            """`hop src -> dst msg M`: one channel, taken as written."""
            self._lines.append(f"  hop {self._term(src, 'src')} -> {self._term(dst, 'dst')} msg {self._term(msg, 'msg')}")
            return self

    def __init__(self, topology, collective, *, model=None):
        self.header = [f'topology "{_spec(topology)}"']
        if model is not None:
            self.header.append(f"model {model}")
        self.header.append(f"collective {collective}")
        self.steps = {}

    def step(self, t):
        """The statements of step t (created on first use); .send() and .hop() add to it."""
        return Schedule._Step(self.steps.setdefault(int(t), []))

    def text(self):
        """The schedule in the schedule language."""
        body = [f"step {t} {{\n" + "\n".join(lines) + "\n}" for t, lines in sorted(self.steps.items()) if lines]
        return "\n".join(self.header + body) + "\n"

    def compile(self, *, name="<schedule>", strict=False):
        return compile(self.text(), name=name, strict=strict)
