// collsched-compose: the constructions for time (verifier/compose/allreduce.hpp) from the command
// line, until `optimize --size` takes them as one of its providers. For a machine, a collective
// (allreduce, reduce_scatter, allgather) and a size it prints every shape that applies with its
// pieces and predicted asynchronous time, fastest first, each verified by the direct checker, and
// writes the fastest table (-o FILE) or every table (--dir DIR) as collsched.table JSON, which
// `collsched verify FILE --size M` and `collsched compare` read.
//
//   collsched-compose --topology graph:schedules/machines/h100rail4x8.json --collective allreduce --size 1G -o best.json
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "compiler/io/table_io.hpp"
#include "runtime/timing.hpp"
#include "support/error.hpp"
#include "runtime/cost_report.hpp"
#include "tools/size_options.hpp"
#include "verifier/compose/allreduce.hpp"

namespace {

using namespace collsched;

void write_file(const std::string& path, const SendTable& t) {
    std::ofstream f(path, std::ios::binary);
    f << table_to_json(t);
    if (!f) throw InputError(fmt::format("{}: cannot write the table", path));
}

/// A file name from a candidate's name: "hierarchical rsag+ring, 64 pieces" -> "hierarchical_rsag+ring_64_pieces".
std::string slug(const std::string& name) {
    std::string s;
    for (char c : name)
        if (c == ' ') s += '_';
        else if (c != ',') s += c;
    return s;
}

int run(int argc, char** argv) {
    CLI::App app{"collsched-compose: constructions for time (hierarchical and flat allreduce, reduce_scatter, allgather), "
                 "the pieces chosen by the asynchronous time at a size; docs/synthesis.md, \"Constructions for time\""};
    std::string topo_spec, coll_spec = "allreduce", size_text, model_text, out_file, out_dir;
    double timeout = 0;
    app.add_option("--topology", topo_spec, "the machine, e.g. graph:schedules/machines/h100rail4x8.json")->required();
    app.add_option("--collective", coll_spec, "allreduce (default), reduce_scatter or allgather");
    app.add_option("--size", size_text, "the size M (bytes per datum, docs/time.md: 64K, 16M, 1G)")->required();
    app.add_option("--model", model_text, "model options, e.g. replicate=yes");
    app.add_option("-o,--output", out_file, "write the fastest table here (collsched.table JSON)");
    app.add_option("--dir", out_dir, "write every candidate's table into this folder");
    std::uint32_t pieces = 0;
    app.add_option("--pieces", pieces, "every hierarchical shape with this many pieces on the machine's boxes, unverified, instead of the choice");
    std::string only;
    app.add_option("--shape", only, "with --pieces: only the shape of this name, e.g. \"hierarchical rsag+direct\"");
    app.add_option("--timeout", timeout, "seconds after which no more pieces, shapes or rings are tried (0: none)")->check(CLI::NonNegativeNumber);
    CLI11_PARSE(app, argc, argv);
    const std::vector<double> sizes = tools::parse_sizes(size_text);
    if (sizes.size() != 1) throw InputError("--size: give one size");
    auto topo = Topology::parse(topo_spec);
    SynthInstance in{topo, topo->default_model(), Collective::parse(coll_spec, *topo), RouteSpace::any};
    if (!model_text.empty()) in.model = apply_model_options(in.model, model_text);
    auto deadline = std::chrono::steady_clock::time_point::max();
    if (timeout > 0) deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeout));
    if (pieces > 0) {
        const compose::Boxes boxes = compose::find_boxes(*topo);
        fmt::print("{} boxes{}\n", boxes.boxes.size(), boxes.why.empty() ? "" : ": " + boxes.why);
        for (auto i : {compose::InBox::none, compose::InBox::rsag, compose::InBox::ar, compose::InBox::ring, compose::InBox::halving})
            for (auto a : {compose::Across::none, compose::Across::direct_ar, compose::Across::direct_rsag, compose::Across::ring, compose::Across::halving,
                           compose::Across::doubling}) {
                const compose::Shape sh{i, a, false};
                if (!only.empty() && compose::shape_name(sh, in.collective.kind) != only) continue;
                std::string why;
                auto t = compose::build_shape(in, boxes.boxes, sh, pieces, &why);
                if (!t) {
                    if (why.find("disagree") == std::string::npos)
                        fmt::print("  {:<48} does not apply: {}\n", compose::shape_name(sh, in.collective.kind), why);
                    continue;
                }
                const TimePrediction p = predict_time(*t, TimeOptions{sizes[0], std::nullopt});
                fmt::print("  {:>12.6g} us  {:<48} C = {:>5}, {:>8} transfers\n", p.asynchronous * 1e6, compose::shape_name(sh, in.collective.kind),
                           t->collective.chunks, t->transfers.size());
                if (!out_dir.empty()) write_file(out_dir + "/" + slug(compose::shape_name(sh, in.collective.kind)) + ".json", *t);
            }
        return 0;
    }
    const std::vector<compose::Candidate> cs = compose::time_candidates(in, sizes[0], deadline);
    if (cs.empty()) {
        std::fprintf(stderr, "collsched-compose: no construction applies to %s on %s (model %s)\n", coll_spec.c_str(), topo_spec.c_str(),
                     to_string(in.model).c_str());
        return 3;
    }
    fmt::print("{} on {} at {} bytes, asynchronous time (docs/time.md); every table verified by the direct checker:\n", coll_spec, topo_spec, sizes[0]);
    for (const compose::Candidate& c : cs)
        fmt::print("  {:>12.6g} us  {:<48} C = {:>5}, {:>4} steps, {:>8} transfers\n", c.predicted_s * 1e6, c.name, c.table.collective.chunks, c.table.steps(),
                   c.table.transfers.size());
    if (!out_file.empty()) write_file(out_file, cs.front().table);
    if (!out_dir.empty())
        for (const compose::Candidate& c : cs) write_file(out_dir + "/" + slug(c.name) + ".json", c.table);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const collsched::InputError& e) {
        std::fprintf(stderr, "collsched-compose: error: %s\n", e.what());
        return 2;
    }
}
