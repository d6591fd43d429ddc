// The MSCCL++ plan's JSON text (export_mscclpp_moves.hpp, JsonText): nlohmann's dump(2) layout (two spaces an
// indent, every member and element on its own line, "[]" and "{}" when empty, `"key": value`), so the plan reads
// back as it would from the JSON tree.
#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/interop/export_mscclpp_moves.hpp"
#include "support/assert.hpp"

namespace collsched::detail {

void JsonText::next() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (open_.empty()) return;
    COLLSCHED_ASSERT_MSG(open_.back().first == ']', "a JSON object's member without a key");
    out_ += open_.back().second++ ? ",\n" : "\n";
    out_.append(2 * open_.size(), ' ');
}

void JsonText::quoted(std::string_view s) {
    // names and buffers are plain ASCII; anything else is escaped as nlohmann escapes it
    if (std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; })) {
        out_ += '"';
        out_ += s;
        out_ += '"';
    } else {
        out_ += nlohmann::ordered_json(std::string(s)).dump();
    }
}

JsonText& JsonText::key(std::string_view k) {
    COLLSCHED_ASSERT_MSG(!open_.empty() && open_.back().first == '}' && !after_key_, "a JSON key outside an object");
    out_ += open_.back().second++ ? ",\n" : "\n";
    out_.append(2 * open_.size(), ' ');
    quoted(k);
    out_ += ": ";
    after_key_ = true;
    return *this;
}

JsonText& JsonText::open(char bracket) {
    next();
    out_ += bracket;
    open_.emplace_back(bracket == '{' ? '}' : ']', 0);
    return *this;
}

JsonText& JsonText::close() {
    COLLSCHED_ASSERT_MSG(!open_.empty() && !after_key_, "a JSON bracket closed that is not open");
    const auto [bracket, members] = open_.back();
    open_.pop_back();
    if (members) {
        out_ += '\n';
        out_.append(2 * open_.size(), ' ');
    }
    out_ += bracket;
    return *this;
}

JsonText& JsonText::str(std::string_view s) {
    next();
    quoted(s);
    return *this;
}

JsonText& JsonText::num(std::int64_t n) {
    next();
    fmt::format_to(std::back_inserter(out_), "{}", n);
    return *this;
}

JsonText& JsonText::unum(std::uint64_t n) {
    next();
    fmt::format_to(std::back_inserter(out_), "{}", n);
    return *this;
}

JsonText& JsonText::boolean(bool b) {
    next();
    out_ += b ? "true" : "false";
    return *this;
}

JsonText& JsonText::ints(const std::vector<int>& list) {
    open('[');
    for (int n : list) num(n);
    return close();
}

JsonText& JsonText::buf(const PlanBuf& b) {
    open('{');
    if (b.buffer_id >= 0) key("buffer_id").num(b.buffer_id);
    else key("type").str(std::string_view(&b.type, 1));
    key("index").num(b.index);
    key("size").num(b.size);
    return close();
}

JsonText& JsonText::op(const PlanOp& op) {
    open('{');
    key("name").str(op.name);
    for (auto [name, list] : {std::pair{"src_buff", &op.src}, std::pair{"dst_buff", &op.dst}})
        if (!list->empty()) {
            key(name).open('[');
            for (const PlanBuf& b : *list) buf(b);
            close();
        }
    if (!op.channel_ids.empty()) key("channel_ids").ints(op.channel_ids);
    if (op.reduce) key("reduce_op").str("sum");
    if (op.channel) key("channel_type").str(op.channel == 'p' ? "port" : "memory");
    return close();
}

}  // namespace collsched::detail
