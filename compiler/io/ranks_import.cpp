#include "compiler/io/ranks_import.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

#include "compiler/io/export_ranks.hpp"
#include "compiler/core/json_error.hpp"
#include "compiler/io/table_read.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

using json = nlohmann::json;

/// Stops at the top-level "format" value.
class FormatSniffer {
public:
    std::optional<std::string> format;

    bool null() { return scalar(); }
    bool boolean(bool) { return scalar(); }
    bool number_integer(json::number_integer_t) { return scalar(); }
    bool number_unsigned(json::number_unsigned_t) { return scalar(); }
    bool number_float(json::number_float_t, const std::string&) { return scalar(); }
    bool string(std::string& s) {
        if (depth_ == 1 && key_is_format_) {
            format = s;
            return false;
        }
        return scalar();
    }
    bool binary(json::binary_t&) { return scalar(); }
    bool start_object(std::size_t) { return open(); }
    bool end_object() { return close(); }
    bool start_array(std::size_t) {
        if (depth_ == 0) return false;
        return open();
    }
    bool end_array() { return close(); }
    bool key(std::string& k) {
        key_is_format_ = depth_ == 1 && k == "format";
        return true;
    }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

private:
    bool scalar() {
        key_is_format_ = false;
        return depth_ > 0;
    }
    bool open() {
        key_is_format_ = false;
        ++depth_;
        return true;
    }
    bool close() {
        --depth_;
        return depth_ > 0;
    }
    int depth_ = 0;
    bool key_is_format_ = false;
};

/// An endpoint record of the file and where it was written (for messages).
struct Record {
    EndpointTransfer e;
    std::string where;
};

class RanksReader {
public:
    RanksReader(const json& j, std::string_view name) : j_(j), name_(name) {}

    SendTable read() {
        if (!j_.is_object()) fail("expected a JSON object at the top level");
        const json& format = need("format", "\"collsched.ranks/1\"");
        if (!format.is_string()) fail("\"format\" must be a string");
        v2_ = format.get<std::string>() == ranks_format_2;
        if (format.get<std::string>() != ranks_format && !v2_)
            fail(fmt::format("unknown format version '{}': this collsched reads {} and {}", format.get<std::string>(), ranks_format,
                             ranks_format_2));
        const json& topo = need("topology", "a spec such as \"ebft:8\"");
        if (!topo.is_string()) fail("\"topology\" must be a spec string such as \"ebft:8\"");
        t_.topology = Topology::parse(spec_read_from(topo.get<std::string>(), name_));
        t_.model = t_.topology->default_model();
        if (j_.contains("model")) t_.model = model_from_json(j_["model"], t_.model);
        const json& coll = need("collective", "for example \"alltoall\" or \"broadcast:0\"");
        if (!coll.is_string()) fail("\"collective\" must be a string such as \"alltoall\"");
        t_.collective = Collective::parse(coll.get<std::string>(), *t_.topology);
        if (v2_ && j_.contains("chunks")) {
            auto bad = [&](std::string_view what) { fail(what); };
            t_.collective.set_chunks(table_read::chunks_value(j_["chunks"], bad), *t_.topology);
        }
        if (v2_ && j_.contains("rounds")) t_.step_rounds = table_read::read_rounds(j_["rounds"], [&](std::string_view what) { fail(what); });
        const std::uint32_t P = t_.topology->processors();
        if (j_.contains("processors") && (!j_["processors"].is_number_unsigned() || j_["processors"].get<std::uint64_t>() != P))
            fail(fmt::format("\"processors\" is {} but {} has {} processors", j_["processors"].dump(), t_.topology->spec(), P));
        if (j_.contains("requirements")) read_requirements(j_["requirements"]);
        bool listed = j_.contains("transfers");
        if (j_.contains("hops")) {
            const json& h = j_["hops"];
            if (h != "cut-through" && h != "listed") fail(fmt::format("\"hops\" must be \"cut-through\" or \"listed\", got {}", h.dump()));
            if (h == "listed" && !listed) fail("\"hops\" is \"listed\" but the file has no \"transfers\"");
            if (h == "cut-through" && listed) fail("\"hops\" is \"cut-through\" but the file lists \"transfers\"");
        }
        read_ranks(need("ranks", "a list of {\"rank\", \"steps\"} objects"));
        match_receives();
        if (listed) read_listed(j_["transfers"]);
        else rebuild();
        for (const auto& [k, v] : j_.items()) {
            static constexpr std::string_view known[] = {"format", "topology", "model", "collective", "requirements", "steps",
                                                         "processors", "endpoint_transfers", "hops", "ranks", "transfers"};
            if (v2_ && (k == "chunks" || k == "rounds")) continue;
            if (std::find(std::begin(known), std::end(known), k) == std::end(known)) t_.add_field(k, v.dump());
        }
        t_.canonicalize_composites();
        if (std::string why = composite_problem(t_); !why.empty()) fail(why);
        t_.sort();
        table_read::finish_rounds(t_, name_);
        return std::move(t_);
    }

private:
    [[noreturn]] void fail(std::string_view what) const { throw InputError(fmt::format("{}: {}", name_, what)); }

    const json& need(const char* key, std::string_view what) const {
        if (!j_.contains(key)) fail(fmt::format("missing \"{}\" ({})", key, what));
        return j_[key];
    }

    std::uint64_t integer(const json& v, std::string_view where, std::string_view field, std::uint64_t min) const {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() < min)
            fail(fmt::format("{}: \"{}\" must be an integer >= {}, got {}", where, field, min, v.dump()));
        return v.get<std::uint64_t>();
    }

    Step step_value(const json& v, std::string_view where, std::string_view field) const {
        std::uint64_t s = integer(v, where, field, 1);
        if (s > (1u << 31)) fail(fmt::format("{}: step {} is too large", where, s));
        return static_cast<Step>(s);
    }

    Node processor(const json& v, std::string_view where, std::string_view field) const {
        std::uint32_t P = t_.topology->processors();
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= P)
            fail(fmt::format("{}: \"{}\" must be a processor 0..{} of {}, got {}", where, field, P - 1, t_.topology->spec(),
                             v.dump()));
        return Node{static_cast<std::uint32_t>(v.get<std::uint64_t>())};
    }

    MessageId message(const json& v, std::string_view where) {
        auto m = v.is_string() ? parse_message(v.get<std::string>(), t_.topology->processors(), t_.composite_registry(), nullptr,
                                               t_.collective.chunks)
                               : std::nullopt;
        if (!m)
            fail(fmt::format("{}: unknown message {} (expected m(s,d), b(s), a(s), a(i..j) or a bundle such as b(0)+b(4), with "
                             "processors 0..{})",
                             where, v.dump(), t_.topology->processors() - 1));
        return *m;
    }

    void read_requirements(const json& list) {
        if (!list.is_array()) fail("\"requirements\" must be a list of {\"msg\", \"at\"} objects");
        for (std::size_t i = 0; i < list.size(); ++i) {
            const json& r = list[i];
            if (!r.is_object() || !r.contains("msg") || !r.contains("at") || !r["msg"].is_string() || !r["at"].is_string())
                fail(fmt::format("requirements[{}]: expected {{\"msg\": \"m(0,3)\", \"at\": \"3\"}}", i));
            auto m = parse_message(r["msg"].get<std::string>(), t_.topology->processors(), t_.composite_registry(), nullptr,
                                   t_.collective.chunks);
            auto at = t_.topology->find_node(r["at"].get<std::string>());
            if (!m) fail(fmt::format("requirements[{}]: unknown message '{}'", i, r["msg"].get<std::string>()));
            if (!at || !t_.topology->is_processor(*at))
                fail(fmt::format("requirements[{}]: '{}' is not a processor", i, r["at"].get<std::string>()));
            t_.requirements.push_back({*m, *at});
        }
    }

    void read_ranks(const json& ranks) {
        if (!ranks.is_array()) fail("\"ranks\" must be a list of {\"rank\", \"steps\"} objects");
        std::vector<bool> seen(t_.topology->processors(), false);
        for (std::size_t i = 0; i < ranks.size(); ++i) {
            std::string where = fmt::format("ranks[{}]", i);
            const json& r = ranks[i];
            if (!r.is_object() || !r.contains("rank")) fail(fmt::format("{}: expected {{\"rank\": P, \"steps\": [...]}}", where));
            Node p = processor(r["rank"], where, "rank");
            if (seen[idx(p)]) fail(fmt::format("{}: rank {} appears twice", where, idx(p)));
            seen[idx(p)] = true;
            if (!r.contains("steps")) continue;
            const json& steps = r["steps"];
            if (!steps.is_array()) fail(fmt::format("{}: \"steps\" must be a list", where));
            for (std::size_t k = 0; k < steps.size(); ++k) read_step(p, steps[k], fmt::format("{}.steps[{}]", where, k));
        }
    }

    void read_step(Node p, const json& st, const std::string& where) {
        if (!st.is_object() || !st.contains("step")) fail(fmt::format("{}: expected {{\"step\", \"send\", \"recv\"}}", where));
        Step s = step_value(st["step"], where, "step");
        auto list = [&](const char* key) -> const json* {
            if (!st.contains(key)) return nullptr;
            if (!st[key].is_array()) fail(fmt::format("{}: \"{}\" must be a list", where, key));
            return &st[key];
        };
        if (const json* send = list("send")) {
            for (std::size_t i = 0; i < send->size(); ++i) {
                const json& x = (*send)[i];
                std::string at = fmt::format("{}.send[{}]", where, i);
                if (!x.is_object() || !x.contains("to") || !x.contains("msg") || !x.contains("arrive"))
                    fail(fmt::format("{}: expected {{\"to\": Q, \"msg\": \"m(s,d)\", \"arrive\": STEP}}", at));
                Node q = processor(x["to"], at, "to");
                MessageId m = message(x["msg"], at);
                Step a = step_value(x["arrive"], at, "arrive");
                if (a < s) fail(fmt::format("{}: arrives in step {}, before it is sent (step {})", at, a, s));
                sends_.push_back({{s, p, q, m, a}, std::move(at)});
            }
        }
        if (const json* recv = list("recv")) {
            for (std::size_t i = 0; i < recv->size(); ++i) {
                const json& x = (*recv)[i];
                std::string at = fmt::format("{}.recv[{}]", where, i);
                if (!x.is_object() || !x.contains("from") || !x.contains("msg") || !x.contains("sent"))
                    fail(fmt::format("{}: expected {{\"from\": P, \"msg\": \"m(s,d)\", \"sent\": STEP}}", at));
                Node q = processor(x["from"], at, "from");
                MessageId m = message(x["msg"], at);
                Step sent = step_value(x["sent"], at, "sent");
                if (sent > s) fail(fmt::format("{}: sent in step {}, after it is received (step {})", at, sent, s));
                recvs_.push_back({{sent, q, p, m, s}, std::move(at)});
            }
        }
    }

    static void sort_records(std::vector<Record>& r) {
        std::stable_sort(r.begin(), r.end(), [](const Record& a, const Record& b) { return a.e < b.e; });
    }

    std::string describe(const EndpointTransfer& e) const {
        return fmt::format("{} from {} (sent in step {}) to {} (arriving in step {})", t_.messages().name(e.message), idx(e.src),
                           e.sent, idx(e.dst), e.arrived);
    }

    /// Every receive record is the other end of exactly one send record.
    void match_receives() {
        sort_records(sends_);
        sort_records(recvs_);
        std::size_t i = 0, k = 0;
        while (i < sends_.size() || k < recvs_.size()) {
            if (k == recvs_.size() || (i < sends_.size() && sends_[i].e < recvs_[k].e))
                fail(fmt::format("{}: rank {} sends {}, but rank {} lists no such receive", sends_[i].where, idx(sends_[i].e.src),
                                 describe(sends_[i].e), idx(sends_[i].e.dst)));
            if (i == sends_.size() || recvs_[k].e < sends_[i].e)
                fail(fmt::format("{}: rank {} receives {}, but rank {} lists no such send", recvs_[k].where, idx(recvs_[k].e.dst),
                                 describe(recvs_[k].e), idx(recvs_[k].e.src)));
            ++i;
            ++k;
        }
    }

    /// A send record of a few dozen bytes becomes as many transfers as its route has channels
    /// (up to 32,767 on ring:65534), so the rebuilt table is bounded like a compiled one.
    static constexpr std::uint64_t max_rebuilt_transfers = 500'000'000;

    void rebuild() {
        const Topology& topo = *t_.topology;
        for (const Record& r : sends_) {
            if (auto err = cut_through_hops(topo, t_.model.timing, std::span(&r.e, 1), t_.transfers))
                fail(fmt::format("{}: {}; a file whose copies do not follow the cut-through rule must list its hops "
                                 "(\"hops\": \"listed\" with \"transfers\")",
                                 r.where, *err));
            if (t_.transfers.size() > max_rebuilt_transfers)
                fail(fmt::format("{}: the send records so far make {} transfers along their routes, more than the {} "
                                 "collsched rebuilds from a per-rank file",
                                 r.where, t_.transfers.size(), max_rebuilt_transfers));
        }
    }

    void read_listed(const json& list) {
        if (!list.is_array()) fail("\"transfers\" must be a list of {\"step\", \"from\", \"to\", \"msg\"} objects");
        const Topology& topo = *t_.topology;
        for (std::size_t i = 0; i < list.size(); ++i) {
            std::string where = fmt::format("transfers[{}]", i);
            const json& x = list[i];
            if (!x.is_object() || !x.contains("step") || !x.contains("from") || !x.contains("to") || !x.contains("msg") ||
                !x["from"].is_string() || !x["to"].is_string())
                fail(fmt::format("{}: expected {{\"step\": S, \"from\": \"u\", \"to\": \"v\", \"msg\": \"m(s,d)\"}}", where));
            Step s = step_value(x["step"], where, "step");
            auto u = topo.find_node(x["from"].get<std::string>()), v = topo.find_node(x["to"].get<std::string>());
            if (!u || !v) fail(fmt::format("{}: node '{}' does not exist in {}", where, x[!u ? "from" : "to"].get<std::string>(), topo.spec()));
            auto c = topo.find_channel(*u, *v);
            if (!c) fail(fmt::format("{}: there is no channel {} -> {} in {}", where, x["from"].get<std::string>(),
                                     x["to"].get<std::string>(), topo.spec()));
            t_.transfers.push_back({s, *c, message(x["msg"], where)});
        }
        t_.sort();
        EndpointView view = endpoint_view(t_);
        std::size_t i = 0, k = 0;
        while (i < sends_.size() || k < view.transfers.size()) {
            if (k == view.transfers.size() || (i < sends_.size() && sends_[i].e < view.transfers[k]))
                fail(fmt::format("{}: the listed transfers do not carry {}", sends_[i].where, describe(sends_[i].e)));
            if (i == sends_.size() || view.transfers[k] < sends_[i].e)
                fail(fmt::format("the listed transfers carry {}, but no send record lists it", describe(view.transfers[k])));
            ++i;
            ++k;
        }
    }

    const json& j_;
    std::string_view name_;
    SendTable t_;
    bool v2_ = false;  ///< collsched.ranks/2: chunks and rounds
    std::vector<Record> sends_, recvs_;
};

}  // namespace

bool looks_like_ranks(std::string_view text) {
    FormatSniffer sniff;
    json::sax_parse(text.begin(), text.end(), &sniff, json::input_format_t::json, true);
    return sniff.format && sniff.format->starts_with("collsched.ranks/");
}

SendTable parse_ranks_json(std::string_view text, std::string_view name) {
    json j = parse_json_document(name, text);
    return RanksReader(j, name).read();
}

}  // namespace collsched
