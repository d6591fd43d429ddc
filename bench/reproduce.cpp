#include "bench/reproduce.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <limits>
#include <tuple>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/lower/formula.hpp"
#include "compiler/lower/lower.hpp"
#include "dsl/diagnostics.hpp"
#include "runtime/simulator.hpp"
#include "verifier/check/direct.hpp"

namespace collsched::bench {

namespace {

using ojson = nlohmann::ordered_json;
using Params = std::vector<std::pair<std::string, std::int64_t>>;

std::string params_text(const Params& p) {
    std::string s;
    for (const auto& [k, v] : p) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
    return s;
}

/// The first line of the first diagnostic (without the source line and caret).
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

/// The value of the table's claim of `kind` (with `at_most` as given), if it states one.
template <class T>
std::optional<T> claimed(const SendTable& t, Claim::Kind kind, bool at_most = false) {
    for (const Claim& c : t.claims)
        if (c.kind == kind && c.at_most == at_most)
            if (const T* v = std::get_if<T>(&c.value)) return *v;
    return std::nullopt;
}

}  // namespace

std::int64_t evaluate_formula(const std::string& expr, const Params& params, const std::vector<std::string>& let) {
    std::vector<Define> bound;
    for (const auto& [k, v] : params) bound.push_back({k, v});
    Diagnostics diags;
    std::optional<std::int64_t> v = compiler::evaluate_formula(expr, bound, let, diags);
    if (!v) throw InputError(fmt::format("formula '{}': {}", expr, first_line(diags.render())));
    return *v;
}

// ---------------------------------------------------------------------------------------------
// One row

ReproRow run_row(const CatalogEntry& entry, const Params& params) {
    auto t0 = std::chrono::steady_clock::now();
    ReproRow row;
    row.entry = &entry;
    row.params = params;
    row.size = row_size(entry, params);
    auto finish = [&]() {
        row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (row.verdict != "holds")
            for (const CatalogNote& n : entry.notes) {
                bool match = n.verdict == row.verdict;
                for (const auto& [k, v] : n.when)
                    match = match && std::any_of(params.begin(), params.end(), [&, k = k, v = v](const auto& p) { return p.first == k && p.second == v; });
                if (match) {
                    row.note = &n;
                    break;
                }
            }
        return row;
    };
    std::vector<std::string> defines;
    for (const auto& [k, v] : params) defines.push_back(fmt::format("{}={}", k, v));
    Diagnostics diags;
    std::optional<SendTable> table;
    try {
        table = compile_file(entry.file, defines, {}, diags);
    } catch (const InputError& e) {
        row.verdict = "error";
        row.error = e.what();
        return finish();
    }
    if (!table) {
        row.verdict = "error";
        row.error = first_line(diags.render());
        return finish();
    }
    const SendTable& t = *table;
    row.topology = t.topology->spec();
    row.model = to_string(t.model);
    row.claim = claimed<std::int64_t>(t, Claim::Kind::steps);
    if (!row.claim) {
        row.claim = claimed<std::int64_t>(t, Claim::Kind::steps, true);
        row.claim_at_most = row.claim.has_value();
    }
    row.lower_bound = claimed<std::int64_t>(t, Claim::Kind::lower_bound);
    row.claim_queue = claimed<std::vector<std::int64_t>>(t, Claim::Kind::queue);
    row.claim_buffer = claimed<std::int64_t>(t, Claim::Kind::buffer);
    row.transfers = t.transfers.size();

    VerifyReport v = verify_direct(t);
    row.steps = v.steps;
    if (t.uses_bandwidth_model()) row.bandwidth = bandwidth_cost(t);
    row.claim_rounds = claimed<std::int64_t>(t, Claim::Kind::rounds);
    SimReport s = simulate(t);
    bool sim_ok = s.status == SimStatus::completed;
    if (sim_ok != v.holds() || (sim_ok && s.steps != v.steps))
        row.simulator = fmt::format("{} in {} steps{}", to_string(s.status), s.steps,
                                    s.violation ? ": " + s.violation->message : std::string());
    else
        row.simulator = "agrees";
    if (row.claim_queue) {
        row.queue_high_water = link_queue_high_water(t);
        row.router_high_water = s.level_high_water;
    }
    if (row.claim_buffer) {
        BufferUse b = processor_buffers(t);
        row.buffer_high_water = b.high_water;
        row.fifo = b.fifo;
    }

    if (t.model.timing == Timing::wormhole) {
        row.wormhole = true;
        row.payload = wormhole_payload(t);
        row.cost = v.cost;
        for (const CatalogCompare& c : entry.compare) {
            ReproRow::Compared k{c.name, {}, {}, {}};
            try {
                k.rounds = evaluate_formula(c.rounds, params, entry.let);
                k.payload = evaluate_formula(c.payload, params, entry.let);
            } catch (const InputError& e) {
                k.error = e.what();
            }
            row.compared.push_back(std::move(k));
        }
    }

    auto steps = static_cast<std::int64_t>(row.steps);
    if (!v.holds()) {
        row.verdict = "violated";
        if (!v.violations.empty()) row.error = fmt::format("{}: {}", to_string(v.violations.front().property), v.violations.front().detail);
    } else if (row.simulator != "agrees") {
        row.verdict = "simulator-disagrees";
    } else if (row.lower_bound && steps < *row.lower_bound) {
        row.verdict = "below-lower-bound";
    } else if (row.claim && (row.claim_at_most ? steps > *row.claim : steps != *row.claim)) {
        row.verdict = "claim-mismatch";
    } else if (row.claim_rounds && static_cast<std::int64_t>(bandwidth_cost(t).rounds) != *row.claim_rounds) {
        row.verdict = "claim-mismatch";
        row.error = fmt::format("claimed {} rounds, measured {}", *row.claim_rounds, bandwidth_cost(t).rounds);
    } else if (row.claim_queue && [&] {
                   if (row.claim_queue->size() != row.queue_high_water.size()) return true;
                   for (std::size_t i = 0; i < row.queue_high_water.size(); ++i)
                       if ((*row.claim_queue)[i] != std::int64_t{row.queue_high_water[i]}) return true;
                   return false;
               }()) {
        row.verdict = "queue-mismatch";
    } else if (row.claim_buffer && (std::int64_t{row.buffer_high_water} != *row.claim_buffer || !row.fifo)) {
        row.verdict = "buffer-mismatch";
    } else {
        row.verdict = "holds";
    }
    return finish();
}

// ---------------------------------------------------------------------------------------------
// Output

namespace {

std::string list_text(const auto& xs) {
    std::string s;
    for (auto x : xs) s += fmt::format("{}{}", s.empty() ? "" : ",", x);
    return s;
}

/// Extra measurements of a row, for the last column of the text table.
std::string details(const ReproRow& r) {
    std::string d;
    if (r.claim_queue) d += fmt::format("queue {} (claim {})", list_text(r.queue_high_water), list_text(*r.claim_queue));
    if (r.claim_buffer)
        d += fmt::format("{}buffer {}{} (claim {})", d.empty() ? "" : "; ", r.buffer_high_water, r.fifo ? " fifo" : " NOT fifo", *r.claim_buffer);
    if (r.wormhole && r.verdict != "error") {
        d += fmt::format("{}cost {} ts + {} tc", d.empty() ? "" : "; ", r.steps, r.payload);
        for (const auto& c : r.compared) {
            if (c.error.empty()) d += fmt::format("; {}: {} ts + {} tc", c.name, *c.rounds, *c.payload);
            else d += fmt::format("; {}: {}", c.name, c.error);
        }
    }
    if (r.simulator != "agrees") d += fmt::format("{}simulator: {}", d.empty() ? "" : "; ", r.simulator);
    if (!r.error.empty()) d += fmt::format("{}{}", d.empty() ? "" : "; ", r.error);
    return d;
}

}  // namespace

std::string format_rows(const Catalog& catalog, const std::vector<ReproRow>& rows) {
    // Column widths from the content, so the table stays aligned for any catalog.
    struct Line {
        std::string algorithm, params, claim, steps, lower, sim, verdict, details;
    };
    std::vector<Line> lines;
    std::vector<const CatalogNote*> notes;
    for (const ReproRow& r : rows) {
        Line l;
        l.algorithm = r.entry->file;
        l.params = params_text(r.params);
        l.claim = r.claim ? fmt::format("{}{}", r.claim_at_most ? "<= " : "", *r.claim) : "-";
        l.steps = r.verdict == "error" ? "-" : std::to_string(r.steps);
        if (r.bandwidth && r.verdict != "error")
            l.steps += fmt::format(" (R {}, R/C {})", r.bandwidth->rounds, r.bandwidth->fraction());
        l.lower = r.lower_bound ? std::to_string(*r.lower_bound) : "-";
        l.sim = r.verdict == "error" ? "-" : r.simulator == "agrees" ? "agrees" : "DIFFERS";
        l.verdict = r.verdict;
        if (r.note) {
            auto it = std::find_if(notes.begin(), notes.end(), [&](const CatalogNote* n) { return n->text == r.note->text; });
            if (it == notes.end()) {
                notes.push_back(r.note);
                it = notes.end() - 1;
            }
            l.verdict += fmt::format(" [{}]", it - notes.begin() + 1);
        }
        l.details = details(r);
        lines.push_back(std::move(l));
    }
    Line head{"algorithm", "params", "claim", "steps", "lower", "simulator", "verdict", "details"};
    std::size_t w[7] = {};
    auto widen = [&](const Line& l) {
        w[0] = std::max(w[0], l.algorithm.size());
        w[1] = std::max(w[1], l.params.size());
        w[2] = std::max(w[2], l.claim.size());
        w[3] = std::max(w[3], l.steps.size());
        w[4] = std::max(w[4], l.lower.size());
        w[5] = std::max(w[5], l.sim.size());
        w[6] = std::max(w[6], l.verdict.size());
    };
    widen(head);
    for (const Line& l : lines) widen(l);
    auto put = [&](const Line& l) {
        std::string s = fmt::format("{:<{}}  {:<{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {:<{}}", l.algorithm, w[0], l.params, w[1], l.claim,
                                    w[2], l.steps, w[3], l.lower, w[4], l.sim, w[5], l.verdict, w[6]);
        if (!l.details.empty()) s += "  " + l.details;
        while (!s.empty() && s.back() == ' ') s.pop_back();
        return s + "\n";
    };
    std::string out = put(head);
    std::string paper;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].entry->paper != paper) {
            paper = rows[i].entry->paper;
            auto it = std::find_if(catalog.papers.begin(), catalog.papers.end(), [&](const CatalogPaper& p) { return p.id == paper; });
            out += fmt::format("# {}\n", it != catalog.papers.end() ? it->title : paper);
        }
        out += put(lines[i]);
    }
    for (std::size_t i = 0; i < notes.size(); ++i) out += fmt::format("[{}] {}\n", i + 1, notes[i]->text);
    return out;
}

std::string rows_to_json(const std::vector<ReproRow>& rows) {
    ojson list = ojson::array();
    for (const ReproRow& r : rows) {
        ojson j;
        j["algorithm"] = r.entry->file;
        ojson p = ojson::object();
        for (const auto& [k, v] : r.params) p[k] = v;
        j["params"] = p;
        j["claim"] = r.claim ? ojson(*r.claim) : ojson(nullptr);
        if (r.claim_at_most) j["claim_relation"] = "<=";
        j["steps"] = r.verdict == "error" ? ojson(nullptr) : ojson(r.steps);
        j["lower_bound"] = r.lower_bound ? ojson(*r.lower_bound) : ojson(nullptr);
        if (r.bandwidth) {
            j["rounds"] = r.bandwidth->rounds;
            j["chunks"] = r.bandwidth->chunks;
            j["rounds_per_chunk"] = r.bandwidth->fraction();
            if (r.claim_rounds) j["claim_rounds"] = *r.claim_rounds;
        }
        j["verdict"] = r.verdict;
        if (r.note) j["note"] = r.note->text;
        if (!r.error.empty()) j["error"] = r.error;
        if (r.verdict != "error") {
            j["simulator"] = r.simulator;
            j["topology"] = r.topology;
            j["model"] = r.model;
            j["transfers"] = r.transfers;
        }
        if (r.claim_queue) {
            j["claim_queue"] = *r.claim_queue;
            j["queue_high_water"] = r.queue_high_water;
            j["router_queue_high_water"] = r.router_high_water;
        }
        if (r.claim_buffer) {
            j["claim_buffer"] = *r.claim_buffer;
            j["buffer_high_water"] = r.buffer_high_water;
            j["fifo"] = r.fifo;
        }
        if (r.wormhole && r.verdict != "error") {
            j["rounds"] = r.steps;
            j["payload"] = r.payload;
            j["cost"] = r.cost;
            ojson cs = ojson::array();
            for (const auto& c : r.compared) {
                ojson x;
                x["name"] = c.name;
                x["rounds"] = c.rounds ? ojson(*c.rounds) : ojson(nullptr);
                x["payload"] = c.payload ? ojson(*c.payload) : ojson(nullptr);
                if (!c.error.empty()) x["error"] = c.error;
                cs.push_back(std::move(x));
            }
            if (!cs.empty()) j["compare"] = std::move(cs);
        }
        j["paper"] = r.entry->paper;
        j["seconds"] = std::round(r.seconds * 1000) / 1000;
        list.push_back(std::move(j));
    }
    std::string out = "[";
    for (std::size_t i = 0; i < list.size(); ++i) out += fmt::format("{}\n {}", i ? "," : "", list[i].dump());
    return out + "\n]\n";
}

}  // namespace collsched::bench
