#include "compiler/interop/expect_file.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/core/json_tree.hpp"
#include "support/assert.hpp"
#include "support/edit_distance.hpp"
#include "support/error.hpp"

namespace collsched {

namespace {

/// Every member of `o` is one of `keys`: an unknown one (a misspelling would otherwise be ignored,
/// and its entry checked as if it were absent) is refused at its value, with the closest key.
void known_keys(const json_tree::Value& o, std::initializer_list<std::string_view> keys, std::string_view file, const std::string& at) {
    for (const json_tree::Member& m : o.members) {
        if (std::find(keys.begin(), keys.end(), m.first) != keys.end()) continue;
        std::string_view best;
        std::size_t best_d = 3;
        for (std::string_view k : keys)
            if (std::size_t d = support::edit_distance(m.first, k); d < best_d) best = k, best_d = d;
        std::string known;
        for (std::string_view k : keys) known += (known.empty() ? "\"" : ", \"") + std::string(k) + "\"";
        throw InputError(fmt::format("{}:{}:{}: {}unknown key \"{}\"{}; the keys are {}", file, m.second.line, m.second.col, at, m.first,
                                     best.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", best), known));
    }
}

}  // namespace

std::vector<Expectation> read_expectations(std::string_view text, std::string_view file) {
    const json_tree::Value root = json_tree::parse(text, file);
    auto bad = [&](const json_tree::Value& v, std::string_view what) {
        return InputError(fmt::format("{}:{}:{}: {}", file, v.line, v.col, what));
    };
    const json_tree::Value* outs = root.kind == json_tree::Kind::object ? root.find("outputs") : nullptr;
    if (!outs || outs->kind != json_tree::Kind::array)
        throw bad(root, "an expectation file is {\"outputs\": [{\"rank\": R, \"chunk\": C, \"holds\": [[rank, input chunk], ...]}, ...]}");
    known_keys(root, {"outputs"}, file, "");
    auto small = [](const json_tree::Value* v) { return v && v->integer() && *v->integer() >= -(1LL << 31) && *v->integer() < (1LL << 31); };
    std::vector<Expectation> list;
    for (const json_tree::Value& e : outs->items) {
        const std::string at = fmt::format("outputs[{}]", list.size());
        if (e.kind == json_tree::Kind::object) known_keys(e, {"rank", "chunk", "holds", "buffer"}, file, at + ": ");
        const json_tree::Value *r = e.kind == json_tree::Kind::object ? e.find("rank") : nullptr, *c = r ? e.find("chunk") : nullptr,
                               *h = c ? e.find("holds") : nullptr;
        if (!small(r) || !small(c) || !h || h->kind != json_tree::Kind::array || h->items.empty())
            throw bad(e, at + ": needs integer \"rank\" and \"chunk\" and a non-empty \"holds\" list of [rank, input chunk] pairs");
        Expectation x;
        x.rank = int(*r->integer());
        x.chunk = int(*c->integer());
        x.line = e.line;
        x.col = e.col;
        x.index = list.size();
        if (const json_tree::Value* b = e.find("buffer")) {
            if (b->kind != json_tree::Kind::string || (b->text != "i" && b->text != "o" && b->text != "s"))
                throw bad(*b, at + ": \"buffer\" must be \"i\", \"o\" or \"s\"");
            x.buffer = b->text[0];
        }
        for (const json_tree::Value& pc : h->items) {
            if (pc.kind != json_tree::Kind::array || pc.items.size() != 2 || !small(&pc.items[0]) || !small(&pc.items[1]))
                throw bad(pc, at + ": each entry of \"holds\" is [rank, input chunk]");
            x.holds.emplace_back(int(*pc.items[0].integer()), int(*pc.items[1].integer()));
        }
        list.push_back(std::move(x));
    }
    return list;
}

void check_expectations(const std::vector<Expectation>& list, std::string_view file, int ranks,
                        const std::function<long long(int rank, char buf)>& chunks) {
    for (const Expectation& it : list) {
        auto bad = [&](const std::string& what) {
            return InputError(fmt::format("{}:{}:{}: outputs[{}]: {}", file, it.line, it.col, it.index, what));
        };
        if (it.rank < 0 || it.rank >= ranks) throw bad(fmt::format("rank {} is outside 0..{}", it.rank, ranks - 1));
        const long long n = chunks(it.rank, it.buffer);
        if (it.chunk < 0 || it.chunk >= n) throw bad(fmt::format("chunk {} is outside buffer {} of rank {} ({} chunks)", it.chunk, it.buffer, it.rank, n));
        for (const auto& [r, c] : it.holds)
            if (r < 0 || r >= ranks || c < 0 || c >= chunks(r, 'i')) throw bad(fmt::format("input chunk [{}, {}] does not exist", r, c));
    }
}

}  // namespace collsched
