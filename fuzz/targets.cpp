#include "fuzz/targets.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/table/collective.hpp"
#include "compiler/formats/export_formats.hpp"
#include "compiler/lower/lower.hpp"
#include "compiler/interop/msccl_import.hpp"
#include "compiler/io/ranks_import.hpp"
#include "compiler/io/table_io.hpp"
#include "compiler/io/table_printer.hpp"
#include "compiler/io/table_read.hpp"
#include "compiler/topology/topology.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "verifier/check/direct.hpp"

namespace collsched::fuzz {

void invariant_failed(std::string_view what) {
    std::fprintf(stderr, "fuzz invariant failed: %.*s\n", static_cast<int>(what.size()), what.data());
    std::abort();
}

bool small(const SendTable& t) {
    return t.topology->processors() <= check_max_processors && t.transfers.size() <= check_max_transfers &&
           t.topology->channels().size() <= check_max_channels;
}

void check_table(const SendTable& t) {
    if (!t.topology) invariant_failed("a reader returned a table without a topology");
    if (!t.is_sorted()) invariant_failed("a reader returned an unsorted table");
    const std::uint64_t channels = t.topology->channels().size(), messages = t.messages().size();
    for (const Transfer& x : t.transfers)
        if (x.step < 1 || idx(x.channel) >= channels || idx(x.message) >= messages)
            invariant_failed(fmt::format("a reader returned a transfer that does not exist in {}: step {}, channel {}, message {}",
                                         t.topology->spec(), x.step, idx(x.channel), idx(x.message)));
    for (const Requirement& r : t.requirements)
        if (idx(r.message) >= messages || !t.topology->is_processor(r.at)) invariant_failed("a reader returned a bad requirement");
    if (!small(t)) return;

    VerifyOptions vo;
    vo.max_violations = 4;
    (void)verify_direct(t, vo);
    vo.fixed_routes = true;
    (void)verify_direct(t, vo);
    try {
        SimReport r = simulate(t, SimOptions{.trace = true});
        (void)format_sim_report(r, t);
        (void)sim_report_to_json(r, t);
    } catch (const InputError&) {
        // the simulator refuses some tables (documented); that is an answer, not a crash
    }

    std::string json = table_to_json(t);
    SendTable back = parse_table_json(json, "roundtrip.json");
    if (back.topology->spec() != t.topology->spec() || !(back.model == t.model) || back.collective != t.collective ||
        back.transfers != t.transfers || back.requirements != t.requirements)
        invariant_failed("the JSON round trip changed the table:\n" + json);
    if (table_to_json(back) != json) invariant_failed("the JSON round trip is not stable:\n" + json);
    SendTable csv = parse_table_csv(table_to_csv(t), "roundtrip.csv");
    if (csv.transfers != t.transfers || csv.requirements != t.requirements || !(csv.model == t.model) ||
        csv.collective != t.collective || csv.claims != t.claims || csv.extra_fields != t.extra_fields || csv.transfer_extras != t.transfer_extras)
        invariant_failed("the CSV round trip changed the table:\n" + json);

    for (const OutputFormat& f : output_formats()) {
        const std::string_view format = f.name;
        if (format == "json" || format == "csv") continue;
        std::string text;
        fmt::memory_buffer out;
        try {
            write_table_as(t, format, {}, out, [&](fmt::memory_buffer& b) {
                text.append(b.data(), b.size());
                b.clear();
            });
        } catch (const InputError&) {
            continue;  // the format cannot express this table (a documented refusal)
        }
        if (format != "ranks") continue;
        try {
            SendTable r = parse_ranks_json(text, "roundtrip.ranks.json");
            if (r.transfers != t.transfers) invariant_failed("the per-rank round trip changed the transfers:\n" + json);
        } catch (const InputError& e) {
            invariant_failed(fmt::format("a per-rank file collsched wrote is refused: {}\n{}", e.what(), json));
        }
    }
    (void)table_to_dsl(t);
}

void run_dsl(std::string_view input) {
    CompileOptions options;
    options.max_transfers = 20'000;
    options.max_iterations = 200'000;
    Diagnostics diags;
    std::optional<SendTable> table;
    try {
        table = compile_text(input, "fuzz.sched", options, diags);
    } catch (const InputError&) {
        return;
    }
    (void)diags.render();
    if (!table) {
        if (!diags.has_errors()) invariant_failed("compile_text failed without an error");
        return;
    }
    check_table(*table);
    if (!small(*table)) return;
    std::string printed = table_to_dsl(*table);
    Diagnostics again;
    std::optional<SendTable> back = compile_text(printed, "printed.sched", options, again);
    if (!back) invariant_failed("the printed table does not compile:\n" + again.render() + "\n" + printed);
    if (back->transfers != table->transfers || back->requirements != table->requirements ||
        back->collective != table->collective || !(back->model == table->model))
        invariant_failed("the printed table compiles to a different table:\n" + printed);
}

namespace {

bool same_table(const SendTable& a, const SendTable& b) {
    return a.topology->spec() == b.topology->spec() && a.model == b.model && a.collective == b.collective && a.transfers == b.transfers &&
           a.requirements == b.requirements && a.claims == b.claims && a.extra_fields == b.extra_fields && a.transfer_extras == b.transfer_extras;
}

/// The fast JSON reader (simdjson, with its fallback) and the reference reader must give the same
/// table or the same error message on every input. The fast reader is also run with pieces of 1
/// and 7 bytes (every line end after a comma a cut, and cuts at other places than the default
/// 96 bytes of fuzzing builds), with the plain-shape matcher (at 1 byte on two threads) and, at 7
/// bytes, with simdjson alone: whatever it reads must be the reference reader's table.
SendTable parse_json_both(std::string_view input) {
    std::optional<SendTable> fast, ref;
    std::string fast_error, ref_error;
    try {
        fast = parse_table_json(input, "fuzz.json");
    } catch (const InputError& e) {
        fast_error = e.what();
    }
    try {
        ref = parse_table_json_reference(input, "fuzz.json");
    } catch (const InputError& e) {
        ref_error = e.what();
    }
    if (fast_error != ref_error)
        invariant_failed(fmt::format("the JSON readers disagree: fast '{}', reference '{}'", fast_error, ref_error));
    struct How {
        std::size_t piece_bytes;
        bool plain;
        unsigned threads;
    };
    for (auto [piece_bytes, plain, threads] : {How{1, true, 2}, How{7, true, 1}, How{7, false, 1}}) {
        bool ranks = false;
        std::size_t pieces = 0;
        std::optional<SendTable> t;
        table_read::FastOptions options;
        options.piece_bytes = piece_bytes;
        options.pieces = &pieces;
        options.plain = plain;
        options.threads = threads;
        const std::string how = fmt::format("{}-byte pieces{}{}", piece_bytes, plain ? "" : " (simdjson alone)", threads == 2 ? " (two threads)" : "");
        try {
            t = table_read::parse_fast(input, false, "fuzz.json", ranks, options);
        } catch (const InputError& e) {
            invariant_failed(fmt::format("the fast reader with {} threw '{}' instead of leaving the input to the reference reader", how, e.what()));
        }
        if (t && !ref) invariant_failed(fmt::format("the fast reader with {} read a table the reference reader refuses: '{}'", how, ref_error));
        if (t && !same_table(*t, *ref)) invariant_failed(fmt::format("the fast reader with {} ({} read) and the reference reader read different tables", how, pieces));
    }
    if (!ref) throw InputError(ref_error);
    if (!same_table(*fast, *ref)) invariant_failed("the JSON readers read different tables");
    return std::move(*ref);
}

}  // namespace

void run_table(std::string_view input) {
    std::size_t first = input.find_first_not_of(" \t\r\n");
    try {
        SendTable t;
        if (first != std::string_view::npos && input[first] == '<')
            t = parse_msccl_ir(input, "fuzz.xml");
        else if (first != std::string_view::npos && input[first] == '{' && looks_like_ranks(input))
            t = parse_ranks_json(input, "fuzz.ranks.json");
        else if (first != std::string_view::npos && (input[first] == '{' || input[first] == '['))
            t = parse_json_both(input);
        else
            t = parse_table_csv(input, "fuzz.csv");
        check_table(t);
    } catch (const InputError&) {
    }
}

namespace {

void check_topology(const Topology& t) {
    const std::uint32_t N = t.nodes();
    auto ch = t.channels();
    for (std::size_t i = 0; i < ch.size(); ++i) {
        if (idx(ch[i].from) >= N || idx(ch[i].to) >= N || ch[i].from == ch[i].to) invariant_failed("a bad channel");
        if (ch[i].cap < 1) invariant_failed("a channel of capacity 0");
        if (i > 0 && std::pair(idx(ch[i - 1].from), idx(ch[i - 1].to)) >= std::pair(idx(ch[i].from), idx(ch[i].to)))
            invariant_failed("channels are not sorted and unique");
        auto c = t.find_channel(ch[i].from, ch[i].to);
        if (!c || idx(*c) != i) invariant_failed("find_channel does not find a channel");
    }
    if (N > 2048 || ch.size() > 100'000) return;
    for (std::uint32_t v = 0; v < N; ++v) {
        std::string name = t.node_name(Node{v});
        auto back = t.find_node(name);
        if (!back || idx(*back) != v) invariant_failed(fmt::format("node name '{}' does not find node {}", name, v));
    }
    const std::uint32_t P = t.processors();
    std::vector<ChannelId> r;
    std::uint32_t pairs = 0;
    for (std::uint32_t s = 0; s < P && pairs < 4096; ++s) {
        for (std::uint32_t d = 0; d < P && pairs < 4096; d += 1 + d / 4, ++pairs) {
            r.clear();
            t.route(Node{s}, Node{d}, r);
            Node at{s};
            for (ChannelId c : r) {
                if (t.channel(c).from != at) invariant_failed("a route is not a path");
                at = t.channel(c).to;
            }
            if (at != Node{d}) invariant_failed("a route ends elsewhere");
            if (t.distance(Node{s}, Node{d}) != r.size()) invariant_failed("distance() differs from the route");
        }
    }
    if (P <= 64) (void)t.diameter();
    (void)t.to_json();
    (void)t.to_dot();
    (void)t.default_model();
}

std::string_view next_line(std::string_view& text) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    return line;
}

}  // namespace

void run_topology(std::string_view input) {
    std::string_view spec = next_line(input);
    std::shared_ptr<const Topology> t;
    try {
        t = Topology::parse(spec);
    } catch (const InputError&) {
        return;
    }
    check_topology(*t);
    if (input.empty()) return;
    try {
        Collective c = Collective::parse(next_line(input), *t);
        (void)c.goal_count(t->processors());
        if (!(Collective::parse(c.to_string(), *t) == c)) invariant_failed("a collective does not round-trip through to_string");
    } catch (const InputError&) {
    }
    Messages ms(t->processors());
    while (!input.empty()) {
        std::string_view line = next_line(input);
        if (auto n = t->find_node(line); n && idx(*n) >= t->nodes()) invariant_failed("find_node returned a node that does not exist");
        if (auto m = ms.parse(line)) {
            if (idx(*m) >= ms.size()) invariant_failed("Messages::parse returned a message that does not exist");
            if (ms.parse(ms.name(*m)) != m) invariant_failed("a message name does not round-trip");
        }
    }
}

}  // namespace collsched::fuzz
