#include "verifier/z3_partial.hpp"

#include <map>

#include <fmt/format.h>
#include <z3++.h>

#include "compiler/partials.hpp"

namespace collsched::detail {

namespace {

/// The bit vector of width P with the bits of `sources` set.
z3::expr set_bits(z3::context& c, std::uint32_t P, const std::vector<std::uint32_t>& sources) {
    std::vector<std::uint64_t> words((P + 63) / 64, 0);
    for (std::uint32_t s : sources) words[s / 64] |= std::uint64_t{1} << (s % 64);
    std::optional<z3::expr> out;
    for (std::size_t w = 0; w < words.size(); ++w) {  // least significant word last in concat
        unsigned width = static_cast<unsigned>(std::min<std::uint64_t>(64, P - 64 * w));
        z3::expr part = c.bv_val(static_cast<std::uint64_t>(words[w] & (width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1)), width);
        out = out ? z3::concat(part, *out) : part;
    }
    return *out;
}

}  // namespace

PartialAnswer z3_partials(const SendTable& t, unsigned timeout_ms) {
    PartialAnswer ans;
    const Topology& topo = *t.topology;
    const Messages ms = t.messages();
    const std::uint32_t P = topo.processors(), C = table_chunks(t);
    z3::context c;
    z3::solver solver(c);
    z3::params prm(c);
    prm.set("timeout", timeout_ms);
    solver.set(prm);
    const z3::expr zero = c.bv_val(0, P);
    // The buffer constants of (processor, chunk): index 0 is the initial {p}.
    std::vector<std::vector<z3::expr>> buf(std::size_t{P} * C);
    std::vector<std::vector<Step>> at_step(std::size_t{P} * C);  // step of each constant (0 initially)
    for (std::uint32_t p = 0; p < P; ++p)
        for (std::uint32_t ch = 0; ch < C; ++ch) {
            z3::expr b0 = c.bv_const(fmt::format("buf_{}_{}_0", p, ch).c_str(), P);
            solver.add(b0 == set_bits(c, P, {p}));
            buf[std::size_t{p} * C + ch].push_back(b0);
            at_step[std::size_t{p} * C + ch].push_back(0);
        }
    struct Bad {
        z3::expr flag;
        Violation v;
        bool completeness;
        std::optional<z3::expr> buffer;  ///< counted twice: the buffer before the arrival, named from the model
        std::uint32_t chunk = 0;
        std::uint32_t goal_hi = 0;  ///< completeness: the goal a({0..goal_hi})
        bool send = false;          ///< a send of a partial not held: name the buffer only
    };
    std::vector<Bad> bads;
    const auto& xs = t.transfers;
    // Sends first need the constants of earlier steps only; arrivals extend the sequences in
    // table order, step by step.
    for (std::size_t i = 0; i < xs.size();) {
        std::size_t end = i;
        while (end < xs.size() && xs[end].step == xs[i].step) ++end;
        for (std::size_t k = i; k < end; ++k) {
            const Transfer& x = xs[k];
            const Channel& ch = topo.channel(x.channel);
            auto pv = partial_of(ms, x.message);
            if (!pv || !topo.is_processor(ch.from)) continue;
            ans.checked.push_back(k);
            const auto& seq = buf[std::size_t{idx(ch.from)} * C + pv->chunk];
            z3::expr flag = c.bool_const(fmt::format("unheld_{}", k).c_str());
            solver.add(flag == (seq.back() != set_bits(c, P, pv->sources)));
            bads.push_back({flag,
                            {Property::causality, x.step, x.channel, ch.from, {x.message},
                             fmt::format("processor {} sends {} in {} {} but its buffer holds ", topo.node_name(ch.from),
                                         ms.name(x.message), t.model.timing == Timing::hop ? "step" : "round", x.step)},
                            false, seq.back(), pv->chunk, 0, true});
        }
        for (std::size_t k = i; k < end; ++k) {
            const Transfer& x = xs[k];
            const Channel& ch = topo.channel(x.channel);
            auto pv = partial_of(ms, x.message);
            if (!pv || !topo.is_processor(ch.to)) continue;
            const std::size_t key = std::size_t{idx(ch.to)} * C + pv->chunk;
            auto& seq = buf[key];
            z3::expr prev = seq.back(), in = set_bits(c, P, pv->sources);
            z3::expr next = c.bv_const(fmt::format("buf_{}_{}_{}", idx(ch.to), pv->chunk, seq.size()).c_str(), P);
            z3::expr twice = c.bool_const(fmt::format("twice_{}", k).c_str());
            z3::expr disjoint = (prev & in) == zero, covers = (prev & ~in) == zero;
            solver.add(twice == (!disjoint && !covers));
            solver.add(next == z3::ite(disjoint, prev | in, z3::ite(covers, in, prev)));
            seq.push_back(next);
            at_step[key].push_back(x.step);
            bads.push_back({twice,
                            {Property::causality, x.step, x.channel, ch.to, {x.message},
                             fmt::format("processor {} receives {} in {} {} while its buffer holds ", topo.node_name(ch.to),
                                         ms.name(x.message), t.model.timing == Timing::hop ? "step" : "round", x.step)},
                            false, prev, pv->chunk, 0});
        }
        i = end;
    }
    t.collective.for_each_partial_goal(P, C, [&](std::uint32_t ch, std::uint32_t hi, Node p) {
        const auto& seq = buf[std::size_t{idx(p)} * C + ch];
        SourceSet want = SourceSet::range(0, hi);
        z3::expr flag = c.bool_const(fmt::format("goal_{}_{}", idx(p), ch).c_str());
        solver.add(flag == (seq.back() != set_bits(c, P, want.items())));
        std::vector<MessageId> ids;
        if (auto id = find_partial(ms, want, ch)) ids.push_back(*id);
        bads.push_back({flag,
                        {Property::completeness, 0, std::nullopt, p, std::move(ids),
                         fmt::format("processor {} ends with ", topo.node_name(p))},
                        true, seq.back(), ch, hi});
    });
    if (bads.empty()) return ans;
    z3::expr_vector any(c);
    for (const Bad& b : bads) any.push_back(b.flag);
    switch (solver.check(z3::expr_vector([&] {
        z3::expr_vector v(c);
        v.push_back(z3::mk_or(any));
        return v;
    }()))) {
        case z3::unsat: return ans;
        case z3::unknown:
            ans.unknown = true;
            ans.reason = solver.reason_unknown();
            return ans;
        case z3::sat: break;
    }
    z3::model model = solver.get_model();
    for (Bad& b : bads) {
        if (!model.eval(b.flag, true).is_true()) continue;
        if (b.buffer) {  // name the buffer and the contributions counted twice from the model
            std::vector<std::uint32_t> held;
            for (std::uint32_t k = 0; k < P; ++k)
                if (model.eval(b.buffer->extract(k, k), true).get_numeral_uint64() == 1) held.push_back(k);
            if (b.send) {
                b.v.detail += partial_name(ms, SourceSet(held), b.chunk);
            } else if (b.completeness) {
                SourceSet want = SourceSet::range(0, b.goal_hi);
                b.v.detail += fmt::format("{} but needs {}: {}", partial_name(ms, SourceSet(held), b.chunk), partial_name(ms, want, b.chunk),
                                          goal_gap(SourceSet(held), want));
            } else {
                SourceSet buffer(held);
                std::string twice;
                apply_arrival(buffer, partial_of(ms, b.v.messages[0])->sources, &twice);
                b.v.detail += fmt::format("{}: combining them counts {} twice", partial_name(ms, SourceSet(held), b.chunk), twice);
            }
        }
        (b.completeness ? ans.completeness : ans.causality).push_back(std::move(b.v));
    }
    return ans;
}

}  // namespace collsched::detail
