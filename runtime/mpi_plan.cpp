#include "runtime/mpi_plan.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/table/collective.hpp"
#include "compiler/io/export_ranks.hpp"
#include "compiler/core/json_error.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::mpi {

namespace {

using json = nlohmann::json;

class PlanReader {
public:
    PlanReader(const json& j, std::string_view name) : j_(j), name_(name) {}

    Plan read() {
        if (!j_.is_object() || (j_.value("format", "") != ranks_format && j_.value("format", "") != ranks_format_2))
            fail(fmt::format("not a per-rank file (expected \"format\": \"{}\" or \"{}\")", ranks_format, ranks_format_2));
        plan_.topology = string_field("topology");
        plan_.collective = string_field("collective");
        if (!j_.contains("processors") || !j_["processors"].is_number_unsigned() || j_["processors"].get<std::uint64_t>() < 1 ||
            j_["processors"].get<std::uint64_t>() > 65534)
            fail("\"processors\" must be an integer 1..65534");
        plan_.processors = j_["processors"].get<std::uint32_t>();
        if (j_.contains("chunks")) {
            if (!j_["chunks"].is_number_unsigned() || j_["chunks"].get<std::uint64_t>() < 1 || j_["chunks"].get<std::uint64_t>() > max_chunks)
                fail(fmt::format("\"chunks\" must be an integer 1..{}", max_chunks));
            plan_.chunks = j_["chunks"].get<std::uint32_t>();
        }
        reg_.emplace(Messages(plan_.processors, nullptr, plan_.chunks).base_size());
        ms_.emplace(plan_.processors, &*reg_, plan_.chunks);
        plan_.reduction = !reduction_baseline(plan_.collective).empty();
        plan_.ranks.resize(plan_.processors);
        if (!j_.contains("ranks") || !j_["ranks"].is_array()) fail("missing \"ranks\" (a list of {\"rank\", \"steps\"} objects)");
        std::vector<std::map<Step, RankStep>> steps(plan_.processors);
        std::vector<std::map<Step, std::vector<std::pair<PeerMessage, Step>>>> arrives(plan_.processors);
        const json& ranks = j_["ranks"];
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            std::string where = fmt::format("ranks[{}]", i);
            const json& r = ranks[i];
            if (!r.is_object()) fail(fmt::format("{}: expected an object", where));
            std::uint32_t p = processor(r.value("rank", json()), where);
            RankPlan& rp = plan_.ranks[p];
            rp.initial = messages(r.value("initial", json::array()), where + ".initial");
            rp.final = messages(r.value("final", json::array()), where + ".final");
            const json& st = r.value("steps", json::array());
            if (!st.is_array()) fail(fmt::format("{}: \"steps\" must be a list", where));
            for (std::size_t k = 0; k < st.size(); ++k) {
                std::string at = fmt::format("{}.steps[{}]", where, k);
                const json& s = st[k];
                Step step = step_of(s.value("step", json()), at);
                for (const json& x : s.value("send", json::array())) {
                    Step sent = step;
                    std::uint32_t q = processor(x.value("to", json()), at + ".send");
                    steps[p][sent].sends.push_back({q, message(x.value("msg", json()), at + ".send")});
                    ++plan_.endpoint_transfers;
                }
                for (const json& x : s.value("recv", json::array())) {
                    Step sent = step_of(x.value("sent", json()), at + ".recv");
                    std::uint32_t q = processor(x.value("from", json()), at + ".recv");
                    steps[p][sent].recvs.push_back({q, message(x.value("msg", json()), at + ".recv")});
                    arrives[p][sent].push_back({{q, steps[p][sent].recvs.back().message}, step});
                }
            }
        }
        auto order = [](const PeerMessage& a, const PeerMessage& b) { return std::pair(a.peer, a.message) < std::pair(b.peer, b.message); };
        for (std::uint32_t p = 0; p < plan_.processors; ++p) {
            for (auto& [s, rs] : steps[p]) {
                rs.step = s;
                std::sort(rs.sends.begin(), rs.sends.end(), order);
                std::sort(rs.recvs.begin(), rs.recvs.end(), order);
                auto& arr = arrives[p][s];
                std::sort(arr.begin(), arr.end(), [&](const auto& a, const auto& b) { return order(a.first, b.first); });
                for (const auto& a : arr) rs.recv_arrives.push_back(a.second);
                plan_.steps = std::max(plan_.steps, s);
                plan_.ranks[p].steps.push_back(std::move(rs));
            }
        }
        if (j_.contains("steps") && j_["steps"].is_number_unsigned()) plan_.steps = std::max<Step>(plan_.steps, j_["steps"].get<Step>());
        plan_.message_names = std::move(names_);
        return std::move(plan_);
    }

private:
    [[noreturn]] void fail(std::string_view what) const { throw InputError(fmt::format("{}: {}", name_, what)); }

    std::string string_field(const char* key) const {
        if (!j_.contains(key) || !j_[key].is_string()) fail(fmt::format("missing \"{}\" (a string)", key));
        return j_[key].get<std::string>();
    }
    std::uint32_t processor(const json& v, std::string_view where) const {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= plan_.processors)
            fail(fmt::format("{}: expected a rank 0..{}, got {}", where, plan_.processors - 1, v.dump()));
        return v.get<std::uint32_t>();
    }
    Step step_of(const json& v, std::string_view where) const {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > (1u << 31))
            fail(fmt::format("{}: expected a step >= 1, got {}", where, v.dump()));
        return v.get<Step>();
    }
    std::uint32_t message(const json& v, std::string_view where) {
        auto m = v.is_string() ? parse_message(v.get<std::string>(), plan_.processors, *reg_, nullptr, plan_.chunks) : std::nullopt;
        if (!m) fail(fmt::format("{}: unknown message {}", where, v.dump()));
        if (names_.size() <= idx(*m)) names_.resize(idx(*m) + 1);
        if (names_[idx(*m)].empty()) names_[idx(*m)] = v.get<std::string>();
        if (plan_.reduction) {
            if (plan_.partials.size() <= idx(*m)) plan_.partials.resize(idx(*m) + 1);
            if (ms_->is_composite(*m)) {
                const Composite& c = ms_->composite(*m);
                if (c.kind != MessageKind::partial) fail(fmt::format("{}: {} is not a partial of a reduction", where, v.dump()));
                plan_.partials[idx(*m)] = PlanPartial{c.lo, c.sources};
            } else if (MessageKey k = ms_->key(*m); k.kind == MessageKind::value) {
                plan_.partials[idx(*m)] = PlanPartial{k.chunk, {k.src}};
            } else {
                fail(fmt::format("{}: {} is not a partial of a reduction", where, v.dump()));
            }
        }
        return idx(*m);
    }
    std::vector<std::uint32_t> messages(const json& list, std::string_view where) {
        if (!list.is_array()) fail(fmt::format("{}: expected a list of messages", where));
        std::vector<std::uint32_t> out;
        for (const json& x : list) out.push_back(message(x, where));
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    }

    const json& j_;
    std::string_view name_;
    Plan plan_;
    std::optional<Composites> reg_;
    std::optional<Messages> ms_;
    std::vector<std::string> names_;
};

}  // namespace

Plan read_plan(std::string_view text, std::string_view name) {
    json j = parse_json_document(name, text);
    return PlanReader(j, name).read();
}

std::string baseline_name(std::string_view c) {
    const CollectiveRow* row = find_collective_row(c.substr(0, c.find(':')));
    return row ? std::string(row->mpi) : "";
}

std::string reduction_baseline(std::string_view c) {
    const CollectiveRow* row = find_collective_row(c.substr(0, c.find(':')));
    return row && row->combining() ? std::string(row->mpi) : "";
}

}  // namespace collsched::mpi
