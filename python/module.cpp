/** \file
 * The Python module `collsched._collsched` (pybind11): the compiler, the verifier, the simulator
 * and the commands of the command line, on values Python holds (docs/python.md). It adds no
 * logic of its own: a topology is Topology::parse's, a table is the compiler's or the readers'
 * (cli/input.hpp load_input, the command line's own loader), a report is the JSON object the
 * command's `--json` prints (cli/runs.hpp), and optimize, pareto, bandwidth and compare run
 * the command line in memory (run_command). python/collsched/__init__.py wraps these in keyword
 * functions and turns the reports into dicts.
 *
 * Every call that may take long runs on a worker thread while the calling thread, without the
 * GIL, waits; every 50 ms it takes the GIL and asks Python for pending signals. On Ctrl-C it
 * requests a stop (support/budget.hpp request_stop: every Deadline reads as passed and CaDiCaL
 * stops), waits for the run to end as at a time limit, and raises the KeyboardInterrupt.
 * Bad input raises collsched.InputError with the file, line, column and diagnostics.
 */
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cmath>
#include <cstddef>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "compiler/formats/export_formats.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/interop/msccl_import.hpp"
#include "compiler/io/table_io.hpp"
#include "support/budget.hpp"
#include "runtime/cost_report.hpp"
#include "cli/size_options.hpp"
#include "cli/input.hpp"
#include "cli/options.hpp"
#include "cli/output.hpp"
#include "cli/runs.hpp"

namespace py = pybind11;
using namespace collsched;

namespace {

/// The Python classes bad input and a failing MSCCL-IR program are raised as (set by
/// collsched/__init__.py through _set_error_types; kept for the life of the interpreter).
py::object* input_error_type = nullptr;
py::object* program_violation_type = nullptr;

/// Runs `work` on a worker thread, interruptibly (the file comment). Exceptions of the work are
/// rethrown here, for pybind11's translators.
template <class F>
auto interruptible(F&& work) -> decltype(work()) {
    using R = decltype(work());
    std::optional<R> result;
    std::exception_ptr error;
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
    {
        py::gil_scoped_release release;
        std::thread worker([&] {
            try {
                result.emplace(work());
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(m);
            done = true;
            cv.notify_all();
        });
        std::unique_lock lock(m);
        while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return done; })) {
            if (type) continue;  // a stop is requested: wait for the run to end
            lock.unlock();
            {
                py::gil_scoped_acquire acquire;
                if (PyErr_CheckSignals() != 0) {
                    PyErr_Fetch(&type, &value, &trace);
                    request_stop(true);
                }
            }
            lock.lock();
        }
        lock.unlock();
        worker.join();
    }
    if (type) {
        request_stop(false);
        PyErr_Restore(type, value, trace);
        throw py::error_already_set();
    }
    if (error) std::rethrow_exception(error);
    return std::move(*result);
}

/// A topology (Topology is immutable and shared by the tables built on it).
struct PyTopology {
    std::shared_ptr<const Topology> topo;
};

/// A table with what made it: a schedule's source, so that counterexamples name their loop values.
struct PyTable {
    std::shared_ptr<SendTable> table;
    ScheduleSource source;
};

/// numpy is needed only for tables and channels as arrays, so it is imported here, not with the
/// module, and a Python without it hears which package to install (pybind11 would raise a bare
/// ModuleNotFoundError from inside its own code).
void require_numpy() {
    try {
        py::module_::import("numpy");
    } catch (py::error_already_set& e) {
        if (!e.matches(PyExc_ImportError)) throw;
        throw py::import_error(fmt::format(
            "collsched: tables and channels as arrays need numpy, which this Python does not have: install it "
            "(Debian and Ubuntu: apt-get install python3-numpy; elsewhere: pip install numpy); the rest of the module "
            "works without it ({})",
            e.what()));
    }
}

/// A read-only array of one field of every transfer, over the table's own memory (12-byte stride).
py::array transfer_field(const py::object& self, std::size_t offset) {
    require_numpy();
    const PyTable& t = self.cast<const PyTable&>();
    const auto* base = reinterpret_cast<const char*>(t.table->transfers.data());
    py::array a(py::dtype::of<std::uint32_t>(), {t.table->transfers.size()}, {sizeof(Transfer)},
                reinterpret_cast<const std::uint32_t*>(base + offset), self);
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return a;
}

/// The end (`to` false: the source) of every transfer's channel: computed, so a new array.
py::array_t<std::uint32_t> channel_end(const PyTable& t, bool to) {
    require_numpy();
    const Topology& topo = *t.table->topology;
    py::array_t<std::uint32_t> a(static_cast<py::ssize_t>(t.table->transfers.size()));
    auto out = a.mutable_unchecked<1>();
    for (std::size_t i = 0; i < t.table->transfers.size(); ++i) {
        const Channel& c = topo.channel(t.table->transfers[i].channel);
        out(static_cast<py::ssize_t>(i)) = idx(to ? c.to : c.from);
    }
    return a;
}

/// The alpha-beta and size options of verify and simulate, from `size` ("1M", "1K..1G", or bytes)
/// and `link` ("500 ns, 50 GB/s").
AlphaBeta sizes_of(const std::string& size, const std::string& link) {
    AlphaBeta ab;
    if (!size.empty()) ab.sizes = tools::parse_sizes(size);
    if (!link.empty()) ab.link = tools::parse_link(link);
    return ab;
}

PyTable compile_text(const std::string& text, const std::string& name, const std::vector<std::string>& defines, bool strict,
                     const std::string& base_dir, const std::string& topology) {
    CompileOptions options;
    options.record_locations = true;
    options.warnings_are_errors = strict;
    options.base_dir = base_dir;
    options.topology = topology;
    Diagnostics diags;
    std::optional<SendTable> table = compile_source(text, name, defines, options, diags);
    if (!table) tools::fail_with_diagnostics(diags);
    tools::print_warnings(diags);
    return {std::make_shared<SendTable>(std::move(*table)), {text, name, defines, options}};
}

/// The export options of `convert --proto P --instances N -o FILE` (proto "" and instances 0: the defaults).
ExportOptions export_options(const std::string& file, const std::string& proto, std::uint32_t instances, std::uint64_t bytes = 1024) {
    ExportOptions options;
    options.file = file;
    options.bytes = bytes;
    if (!proto.empty()) options.msccl.proto = options.mscclpp.proto = proto;
    if (instances > 0) options.msccl.instances = options.mscclpp.instances = static_cast<int>(instances);
    return options;
}

/// The table in a one-file format, as text (Table.dumps).
std::string write_as(const SendTable& t, const std::string& format, const std::string& proto, std::uint32_t instances) {
    const ExportOptions options = export_options("", proto, instances);
    fmt::memory_buffer buf;
    std::string out;
    tools::write_table_text(
        t, format, options, buf,
        [&](fmt::memory_buffer& b) {
            out.append(b.data(), b.size());
            b.clear();
        });
    out.append(buf.data(), buf.size());
    return out;
}

void translate(const InputError& e) {
    py::object type = dynamic_cast<const ProgramViolation*>(&e) && program_violation_type ? *program_violation_type
                      : input_error_type                                                      ? *input_error_type
                                                                                              : py::reinterpret_borrow<py::object>(PyExc_ValueError);
    py::list diagnostics;
    std::string rendered;
    if (const auto* d = dynamic_cast<const tools::DiagnosticError*>(&e)) {
        rendered = d->rendered;
        for (const Diagnostic& x : d->list) {
            py::dict o;
            o["file"] = d->file;
            o["line"] = x.loc.line ? py::object(py::int_(x.loc.line)) : py::none();
            o["column"] = x.loc.line ? py::object(py::int_(x.loc.column)) : py::none();
            o["severity"] = x.severity == Severity::error ? "error" : x.severity == Severity::warning ? "warning" : "note";
            o["code"] = x.code;
            o["message"] = x.message;
            diagnostics.append(o);
        }
    }
    py::object exc = type(std::string(e.what()), diagnostics, rendered);
    PyErr_SetObject(type.ptr(), exc.ptr());
}

/// An index argument (a node, a message id) below `count`, else InputError with the reason: a
/// negative or huge int used to raise pybind11's TypeError ("incompatible function arguments"),
/// and a message id past the table's named "composite #N", a message that does not exist.
std::uint32_t index_arg(const py::handle& v, std::uint64_t count, std::string_view what, std::string_view range) {
    if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v))
        throw InputError(fmt::format("{} {}: expected an integer ({})", what, py::repr(v).cast<std::string>(), range));
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow != 0 || n < 0 || static_cast<unsigned long long>(n) >= count)
        throw InputError(fmt::format("{} {} does not exist: {}", what, py::repr(v).cast<std::string>(), range));
    return static_cast<std::uint32_t>(n);
}

}  // namespace

PYBIND11_MODULE(_collsched, m) {
    m.doc() = "collsched's compiler, verifier, simulator and commands (use the package collsched; docs/python.md)";

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const InputError& e) {
            translate(e);
        }
    });
    m.def("_set_error_types", [](py::object input_error, py::object program_violation) {
        input_error_type = new py::object(std::move(input_error));
        program_violation_type = new py::object(std::move(program_violation));
    });

    py::class_<PyTopology>(m, "Topology",
                                                 "A topology as the command line builds it from a spec (`ring:8`, `graph:FILE.json`).")
        .def(py::init([](const std::string& spec) { return PyTopology{Topology::parse(spec)}; }), py::arg("spec"))
        .def_property_readonly("spec", [](const PyTopology& p) { return p.topo->spec(); })
        .def_property_readonly("processors", [](const PyTopology& p) { return p.topo->processors(); })
        .def_property_readonly("routers", [](const PyTopology& p) { return p.topo->routers(); })
        .def_property_readonly("diameter", [](const PyTopology& p) { return p.topo->diameter(); })
        .def("node_name", [](const PyTopology& p, const py::object& n) {
            // InputError, as every other bad value the module is given (it was an IndexError, and a TypeError below 0)
            return p.topo->node_name(Node{index_arg(n, p.topo->nodes(), "node", fmt::format("{} has nodes 0..{}", p.topo->spec(), p.topo->nodes() - 1))});
        })
        .def("distance", [](const PyTopology& p, const py::object& a, const py::object& b) {
            const std::string range = fmt::format("{} has nodes 0..{}", p.topo->spec(), p.topo->nodes() - 1);
            return p.topo->distance(Node{index_arg(a, p.topo->nodes(), "node", range)}, Node{index_arg(b, p.topo->nodes(), "node", range)});
        })
        .def("channel_array",
             [](const PyTopology& p) {
                 require_numpy();
                 py::array_t<std::uint32_t> a({static_cast<py::ssize_t>(p.topo->channels().size()), py::ssize_t{3}});
                 auto out = a.mutable_unchecked<2>();
                 py::ssize_t i = 0;
                 for (const Channel& c : p.topo->channels()) {
                     out(i, 0) = idx(c.from), out(i, 1) = idx(c.to), out(i, 2) = c.cap;
                     ++i;
                 }
                 return a;
             },
             "The channels as rows (from, to, cap), in channel order (numpy uint32, shape (channels, 3))")
        .def("_json", [](const PyTopology& p) { return p.topo->to_json(); })
        .def("to_dot", [](const PyTopology& p) { return p.topo->to_dot(); })
        .def("__repr__", [](const PyTopology& p) { return fmt::format("Topology('{}')", p.topo->spec()); });

    py::class_<PyTable>(m, "Table", "A send table: which message crosses which channel in which step.")
        .def_property_readonly("topology", [](const PyTable& t) { return PyTopology{t.table->topology}; })
        .def_property_readonly("model", [](const PyTable& t) { return to_string(t.table->model); })
        .def_property_readonly("collective", [](const PyTable& t) { return t.table->collective.to_string(); })
        .def_property_readonly("steps", [](const PyTable& t) { return t.table->steps(); })
        .def_property_readonly("source_name", [](const PyTable& t) { return t.source.name; })
        .def("__len__", [](const PyTable& t) { return t.table->transfers.size(); })
        .def_property_readonly("step", [](const py::object& self) { return transfer_field(self, offsetof(Transfer, step)); },
                               "The step of every transfer (uint32, a view of the table's memory)")
        .def_property_readonly("channel", [](const py::object& self) { return transfer_field(self, offsetof(Transfer, channel)); },
                               "The channel index of every transfer (uint32, a view; Topology.channel_array() rows)")
        .def_property_readonly("message", [](const py::object& self) { return transfer_field(self, offsetof(Transfer, message)); },
                               "The message id of every transfer (uint32, a view; message_names() names them)")
        .def_property_readonly("src", [](const PyTable& t) { return channel_end(t, false); }, "The node each transfer leaves (uint32)")
        .def_property_readonly("dst", [](const PyTable& t) { return channel_end(t, true); }, "The node each transfer enters (uint32)")
        .def("message_name",
             [](const PyTable& t, const py::object& id) {
                 const Messages ms = t.table->messages();
                 return ms.name(MessageId{index_arg(id, ms.size(), "message id", fmt::format("the table's message ids are 0..{}", ms.size() - 1))});
             })
        .def("message_names",
             [](const PyTable& t) {
                 std::vector<std::string> names;
                 names.reserve(t.table->transfers.size());
                 const Messages ms = t.table->messages();
                 for (const Transfer& x : t.table->transfers) names.push_back(ms.name(x.message));
                 return names;
             },
             "The name of every transfer's message (m(0,3), b(2), a({0..3}), ...)")
        .def("_write", [](const PyTable& t, const std::string& format, const std::string& proto, std::uint32_t instances) {
            return py::bytes(write_as(*t.table, format, proto, instances));
        })
        .def("_save",
             [](const PyTable& t, const std::string& path, const std::string& format, const std::string& proto, std::uint32_t instances,
                std::uint64_t bytes) {
                 interruptible([&] {
                     tools::write_table_output(*t.table, format, path, export_options(path, proto, instances, bytes));
                     return 0;
                 });
             })
        .def("__repr__", [](const PyTable& t) {
            return fmt::format("<collsched.Table {} on {}: {} steps, {} transfers>", t.table->collective.to_string(),
                               t.table->topology->spec(), t.table->steps(), t.table->transfers.size());
        });

    m.def("_compile", [](const std::string& text, const std::string& name, const std::vector<std::string>& defines, bool strict,
                         const std::string& base_dir, const std::string& topology) {
        return interruptible([&] { return compile_text(text, name, defines, strict, base_dir, topology); });
    });
    m.def("_load", [](const std::string& path, const std::vector<std::string>& defines, const std::string& topology, bool strict) {
        return interruptible([&] {
            PyTable t;
            MscclImportOptions msccl;
            msccl.topology = topology;
            t.table = std::make_shared<SendTable>(tools::load_input(path, defines, true, strict, msccl, &t.source));
            return t;
        });
    });
    m.def("_parse_table", [](const std::string& text, const std::string& name) {
        return interruptible([&] { return PyTable{std::make_shared<SendTable>(parse_table(text, name)), {}}; });
    });
    m.def("_verify", [](const PyTable& t, const std::string& engine, const std::string& routes, std::size_t max_violations, double timeout,
                        const std::string& size, const std::string& link) {
        if (engine != "direct" && engine != "z3") throw InputError(fmt::format("engine '{}': expected direct or z3", engine));
        if (routes != "any" && routes != "fixed") throw InputError(fmt::format("routes '{}': expected any or fixed", routes));
        // the command line's --timeout rule (cli/options.hpp): nan or -1 used to give "unknown"
        if (!std::isfinite(timeout) || timeout <= 0 || timeout > tools::max_timeout_seconds)
            throw InputError(fmt::format("timeout={}: expected a number of seconds above 0 and up to {:.0f}", timeout, tools::max_timeout_seconds));
        const AlphaBeta ab = sizes_of(size, link);
        return interruptible([&] {
            VerifyOptions opt;
            opt.fixed_routes = routes == "fixed";
            opt.max_violations = max_violations;
            Z3Options zopt;
            zopt.fixed_routes = opt.fixed_routes;
            zopt.max_violations = max_violations;
            zopt.timeout_ms = static_cast<std::uint64_t>(std::ceil(std::min(timeout, 1e9) * 1000));
            VerifyReport r = verify_table(*t.table, t.source, engine == "z3", opt, zopt);
            return tools::verify_json(r, *t.table, ab).dump();
        });
    });
    m.def("_simulate", [](const PyTable& t, bool trace, const std::string& size, const std::string& link) {
        const AlphaBeta ab = sizes_of(size, link);
        return interruptible([&] { return tools::simulate_json(tools::simulate_table(*t.table, trace), *t.table, ab); });
    });
    m.def("_run", [](const std::vector<std::string>& args) {
        return interruptible([&] {
            std::string out;
            int code = tools::run_command(args, out);
            return std::make_pair(code, out);
        });
    });
    m.def("_output_format", [](const std::string& path) { return tools::output_format("", path, true); });
    m.def("_formats", [] { return tools::table_output_formats(); });
}
