#include "compiler/io/table_read.hpp"

#include <nlohmann/json.hpp>

#include "compiler/io/table_io.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::table_read {

/// Rounds read from a file: trimmed to the steps, and only under hop timing.
void finish_rounds(SendTable& t, std::string_view name) {
    t.normalize_rounds();
    if (std::string why = rounds_problem(t); !why.empty()) throw InputError(fmt::format("{}: {}", name, why));
}

/// Composites read from a file: canonical ids, and bundles only under wormhole timing.
void finish_composites(SendTable& t, std::string_view name) {
    t.canonicalize_composites();
    if (std::string why = composite_problem(t); !why.empty()) throw InputError(fmt::format("{}: {}", name, why));
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
    return s;
}

Resolver::Resolver(SendTable& t, std::string_view name)
    : table_(t),
      name_(name),
      reg_(t.composite_registry()),
      messages_(t.topology->processors(), &reg_, t.collective.chunks),
      shortcuts_(*t.topology, messages_) {}

void Resolver::add(std::vector<Transfer>& out, std::uint64_t i, std::uint64_t step, std::string_view from, std::string_view to,
                   std::string_view msg) const {
    // Filled in place: a Transfer returned through the stack is stored as 4-byte fields and read
    // back as an 8-byte word, a stalled load per transfer.
    if (shortcuts_.transfer<false>(step, from, to, msg, out.emplace_back())) return;
    out.pop_back();
    out.push_back(general(i, step, from, to, msg));
}

Transfer Resolver::general(std::uint64_t i, std::uint64_t step, std::string_view from, std::string_view to,
                           std::string_view msg) const {
    const Topology& topo = *table_.topology;
    auto where = [&] { return fmt::format("{}: transfers[{}] (step {})", name_, i, step); };
    if (step < 1) throw InputError(fmt::format("{}: transfers[{}]: step {} is below 1 (steps are numbered from 1)", name_, i, step));
    if (step > (1u << 31)) throw InputError(fmt::format("{}: step {} is too large", where(), step));
    auto u = topo.find_node(from), v = topo.find_node(to);
    auto describe = [&] {
        std::string s = fmt::format("processors 0..{}", topo.processors() - 1);
        if (topo.routers() > 0)
            s += fmt::format(", routers {}..{}", topo.node_name(Node{topo.processors()}), topo.node_name(Node{topo.nodes() - 1}));
        return s;
    };
    if (!u) throw InputError(fmt::format("{}: node '{}' does not exist in {} ({})", where(), from, topo.spec(), describe()));
    if (!v) throw InputError(fmt::format("{}: node '{}' does not exist in {} ({})", where(), to, topo.spec(), describe()));
    auto c = topo.find_channel(*u, *v);
    if (!c) throw InputError(fmt::format("{}: there is no channel {} -> {} in {}", where(), from, to, topo.spec()));
    auto m = messages_.parse(msg);
    std::string why;
    if (!m && (msg.find('+') != std::string_view::npos || msg.find("..") != std::string_view::npos || msg.find('{') != std::string_view::npos))
        m = parse_message(msg, topo.processors(), reg_, &why, messages_.chunks());  // a composite met for the first time
    else if (!m)
        messages_.parse_base(msg, &why);  // why a base name is refused (a whole datum under chunks, ...)
    if (!m) {
        if (messages_.chunks() > 1)
            throw InputError(fmt::format("{}: unknown message '{}' (expected m(s,d,c), b(s,c), a(s,c), a partial a({{0..3}},c) or a bundle such as "
                                         "b(0,0)+b(4,1), with processors 0..{} and chunks 0..{}){}",
                                         where(), msg, topo.processors() - 1, messages_.chunks() - 1, why.empty() ? "" : ": " + why));
        throw InputError(fmt::format("{}: unknown message '{}' (expected m(s,d), b(s), a(s), a(i..j), a partial a({{0..3}}) or a bundle such as "
                                     "b(0)+b(4), with processors 0..{}){}",
                                     where(), msg, topo.processors() - 1, why.empty() ? "" : ": " + why));
    }
    return {static_cast<Step>(step), *c, *m};
}

void Capture::begin() {
    active_ = true;
    root_ = json();
    stack_.clear();
}

void Capture::close() {
    stack_.pop_back();
    if (stack_.empty()) active_ = false;
}

void Capture::insert(json v, bool container) {
    json* at;
    if (stack_.empty()) {
        root_ = std::move(v);
        at = &root_;
    } else if (stack_.back()->is_array()) {
        stack_.back()->push_back(std::move(v));
        at = &stack_.back()->back();
    } else {
        if (stack_.back()->contains(key_)) on_duplicate_(key_);
        at = &((*stack_.back())[key_] = std::move(v));
    }
    if (container) stack_.push_back(at);
    else if (stack_.empty()) active_ = false;
}

namespace {

/// SAX events into a Capture, for parse_piece: stops at the first duplicate key or too deep a level.
class PieceSax {
public:
    explicit PieceSax(int max_depth) : max_depth_(max_depth), capture_([](const std::string&) { throw Duplicate{}; }) {
        capture_.begin();
    }
    struct Duplicate {};
    bool null() { return capture_.value(json(nullptr)), true; }
    bool boolean(bool b) { return capture_.value(json(b)), true; }
    bool number_integer(json::number_integer_t v) { return capture_.value(json(v)), true; }
    bool number_unsigned(json::number_unsigned_t v) { return capture_.value(json(v)), true; }
    bool number_float(json::number_float_t v, const std::string&) { return capture_.value(json(v)), true; }
    bool string(std::string& s) { return capture_.value(json(std::move(s))), true; }
    bool binary(json::binary_t&) { return false; }
    bool start_object(std::size_t) { return ++depth_ <= max_depth_ && (capture_.open(json::object()), true); }
    bool start_array(std::size_t) { return ++depth_ <= max_depth_ && (capture_.open(json::array()), true); }
    bool end_object() { return --depth_, capture_.close(), true; }
    bool end_array() { return --depth_, capture_.close(), true; }
    bool key(std::string& k) { return capture_.key(k), true; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
    json take() { return capture_.take(); }

private:
    int max_depth_, depth_ = 0;
    Capture capture_;
};

}  // namespace

bool parse_piece(std::string_view text, int max_depth, json& out) {
    // nlohmann's lexer takes a NUL byte for the end of the input, so "4\0junk" would read as 4. No
    // JSON text has a raw NUL (outside strings it is no token, inside one an unescaped control
    // character): refused.
    if (text.find('\0') != std::string_view::npos) return false;
    PieceSax sax(max_depth);
    try {
        if (!json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, true)) return false;
    } catch (const PieceSax::Duplicate&) {
        return false;
    }
    out = sax.take();
    return true;
}

void ensure_topology(SendTable& t, const TopFields& top, std::string_view name) {
    if (t.topology) return;
    auto it = top.find("topology");
    if (it == top.end()) throw InputError(fmt::format("{}: missing \"topology\" (a spec such as \"ebft:8\")", name));
    if (!it->second.is_string()) throw InputError(fmt::format("{}: \"topology\" must be a spec string such as \"ebft:8\"", name));
    t.topology = naming_file(name, [&] { return Topology::parse(spec_read_from(it->second.get<std::string>(), name)); });
    t.model = t.topology->default_model();
}

/// The chunk count of a "chunks" value, checked (a positive integer up to max_chunks).
std::uint32_t chunks_value(const json& v, const std::function<void(std::string_view)>& fail) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() < 1 || v.get<std::uint64_t>() > max_chunks)
        fail(fmt::format("\"chunks\" must be an integer from 1 to {}, got {}", max_chunks, v.dump()));
    return v.get<std::uint32_t>();
}

namespace {

void read_requirements(SendTable& t, const json& list, std::string_view name) {
    auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}: {}", name, what)); };
    if (!list.is_array()) fail("\"requirements\" must be a list of {\"msg\", \"at\"} objects");
    Composites& reg = t.composite_registry();
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& r = list[i];
        if (!r.is_object() || !r.contains("msg") || !r.contains("at") || !r["msg"].is_string() || !r["at"].is_string())
            fail(fmt::format("requirements[{}]: expected {{\"msg\": \"m(0,3)\", \"at\": \"3\"}}", i));
        std::string why;
        auto m = parse_message(r["msg"].get<std::string>(), t.topology->processors(), reg, &why, t.collective.chunks);
        auto at = t.topology->find_node(r["at"].get<std::string>());
        if (!m) fail(fmt::format("requirements[{}]: unknown message '{}'{}", i, r["msg"].get<std::string>(), why.empty() ? "" : ": " + why));
        if (!at || !t.topology->is_processor(*at)) fail(fmt::format("requirements[{}]: '{}' is not a processor", i, r["at"].get<std::string>()));
        t.requirements.push_back({*m, *at});
    }
}

}  // namespace

std::optional<std::uint32_t> known_chunks(const TopFields& top, std::string_view name) {
    auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}: {}", name, what)); };
    auto f = top.find("format");
    if (f == top.end() || !f->second.is_string()) return std::nullopt;
    const std::string& v = f->second.get_ref<const std::string&>();
    if (v == table_format) return 1;
    if (v != table_format_2) return std::nullopt;  // finish_table words the error
    auto c = top.find("chunks");
    if (c == top.end()) return std::nullopt;
    return chunks_value(c->second, fail);
}

std::vector<std::uint32_t> read_rounds(const json& v, const std::function<void(std::string_view)>& fail) {
    if (!v.is_array()) fail("\"rounds\" must be a list of the rounds of steps 1, 2, ... (positive integers)");
    std::vector<std::uint32_t> r;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_number_unsigned() || v[i].get<std::uint64_t>() < 1 || v[i].get<std::uint64_t>() > max_step_rounds)
            fail(fmt::format("rounds[{}] (step {}): expected an integer from 1 to {}, got {}", i, i + 1, max_step_rounds, v[i].dump()));
        r.push_back(v[i].get<std::uint32_t>());
    }
    return r;
}

void finish_table(SendTable& t, const TopFields& top, bool seen_transfers, std::string_view name,
                  const std::function<void(const Resolver&)>& resolve_pending) {
    auto fail = [&](std::string_view what) { throw InputError(fmt::format("{}: {}", name, what)); };
    auto need = [&](std::string_view key, std::string_view what) -> const json& {
        auto it = top.find(std::string(key));
        if (it == top.end()) fail(fmt::format("missing \"{}\" ({})", key, what));
        return it->second;
    };
    const json& format = need("format", "\"collsched.table/1\"");
    if (!format.is_string()) fail("\"format\" must be a string");
    const bool v2 = format.get<std::string>() == table_format_2;
    if (format.get<std::string>() != table_format && !v2)
        fail(fmt::format("unknown format version '{}': this collsched reads {} and {}", format.get<std::string>(), table_format,
                         table_format_2));
    ensure_topology(t, top, name);
    const json& coll = need("collective", "for example \"alltoall\" or \"broadcast:0\"");
    if (!coll.is_string()) fail("\"collective\" must be a string such as \"alltoall\"");
    std::uint32_t chunks = 1;
    if (auto it = top.find("chunks"); v2 && it != top.end()) chunks = chunks_value(it->second, fail);
    t.collective = naming_file(name, [&] {
        Collective c = Collective::parse(coll.get<std::string>(), *t.topology);
        c.set_chunks(chunks, *t.topology);
        return c;
    });
    if (auto it = top.find("model"); it != top.end()) t.model = naming_file(name, [&] { return model_from_json(it->second, t.model); });
    if (auto it = top.find("rounds"); v2 && it != top.end()) t.step_rounds = read_rounds(it->second, fail);
    if (top.count("transfers")) fail("\"transfers\" must be a list of {\"step\", \"from\", \"to\", \"msg\"} objects");
    if (!seen_transfers) fail("missing \"transfers\" (a list of {\"step\", \"from\", \"to\", \"msg\"} objects)");
    if (resolve_pending) resolve_pending(Resolver(t, name));
    if (auto it = top.find("requirements"); it != top.end()) read_requirements(t, it->second, name);
    for (auto& [k, v] : top) {
        if (k == "format" || k == "topology" || k == "collective" || k == "model" || k == "requirements" || k == "steps") continue;
        if (v2 && (k == "chunks" || k == "rounds")) continue;
        t.add_field(k, v.dump());
    }
    finish_composites(t, name);
    t.sort();
    finish_rounds(t, name);
}

}  // namespace collsched::table_read
