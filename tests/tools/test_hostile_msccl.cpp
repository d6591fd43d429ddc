// Hostile MSCCL-IR programs (tests/tools/hostile_case.hpp; the campaign's runner and the other
// categories are in test_hostile_surfaces.cpp).
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "dsl/diagnostics.hpp"
#include "tests/tools/cli_run.hpp"
#include "tests/tools/hostile_case.hpp"

using namespace collsched;
using namespace collsched::test::hostile;
using collsched::test::slurp;
using collsched::test::source;

namespace {

// ------------------------------------------------------------------------------------------------
// MSCCL-IR programs (compiler/interop/msccl_xml.cpp, msccl_program.cpp): every attribute the executor's
// reader requires, removed; integers that are none; values outside the executor's limits; deep
// nesting; files cut short; each refused at the element's line and column, by every command that
// reads a program, with nothing written.

/// The first element `<name ` of `xml`: its offset.
std::size_t element_at(const std::string& xml, const std::string& name) {
    const std::size_t at = xml.find("<" + name + " ");
    REQUIRE(at != std::string::npos);
    return at;
}

/// `xml` with attribute `key` of the element at `at` replaced by `with` (` key="v"` as a whole;
/// "" removes it).
std::string edit_attribute(const std::string& xml, std::size_t at, const std::string& key, const std::string& with) {
    const std::size_t end = xml.find('>', at);
    const std::size_t a = xml.find(" " + key + "=\"", at);
    REQUIRE(a < end);
    const std::size_t close = xml.find('"', a + key.size() + 3);
    std::string out = xml;
    out.replace(a, close + 1 - a, with);
    return out;
}

/// The MSCCL-IR category: each variant runs under the three commands that read programs, or
/// (to keep the category within seconds) under one of them, taking turns.
class MscclCases {
public:
    std::vector<Case> all() {
        for (std::string file : {"allgather_ring.xml", "allreduce_ring_inplace.xml", "alltoall_allpairs.xml"}) {
            const std::string xml = slurp(source("tests/data/msccl/" + file));
            attributes(file, xml);
            limits(file, xml);
        }
        not_files();
        nesting();
        return std::move(out_);
    }

private:
    void add(const std::string& name, const std::string& xml, const std::string& message, const std::string& where, bool all) {
        for (std::size_t k = 0; k < commands_.size(); ++k) {
            if (!all && k != turn_ % commands_.size()) continue;
            Case c;
            c.name = name + " (" + commands_[k].substr(0, commands_[k].find(' ')) + ")";
            c.args = commands_[k];
            c.files = {{"x.xml", xml}};
            c.message = message;
            c.where = where;
            c.absent = {"out.json"};
            out_.push_back(c);
        }
        ++turn_;
    }

    /// Every attribute the executor's reader requires, removed; integers that are none. The
    /// first file gets every variant with every command; the other two (other collectives, in
    /// place, several thread blocks) a share, so that the category stays within seconds.
    void attributes(const std::string& file, const std::string& xml) {
        struct Attr {
            std::string element, key;
            bool integer;
        };
        const std::vector<Attr> required = {
            {"algo", "nchunksperloop", true}, {"algo", "nchannels", true}, {"algo", "ngpus", true},   {"algo", "proto", false},
            {"algo", "coll", false},          {"algo", "inplace", true},   {"gpu", "id", true},        {"gpu", "i_chunks", true},
            {"gpu", "o_chunks", true},        {"gpu", "s_chunks", true},   {"tb", "id", true},         {"tb", "send", true},
            {"tb", "recv", true},             {"tb", "chan", true},        {"step", "s", true},        {"step", "type", false},
            {"step", "srcbuf", false},        {"step", "srcoff", true},    {"step", "dstbuf", false},  {"step", "dstoff", true},
            {"step", "cnt", true},            {"step", "depid", true},     {"step", "deps", true},     {"step", "hasdep", true}};
        const bool first_file = file == "allgather_ring.xml";
        for (const Attr& a : required) {
            const std::size_t at = element_at(xml, a.element);
            const SourceLoc loc = location_of(xml, at);
            const std::string where = fmt::format("x.xml:{}:{}: ", loc.line, loc.column);
            add(file + ": <" + a.element + "> without " + a.key, edit_attribute(xml, at, a.key, ""),
                fmt::format("<{}> has no attribute {}, which the executor's reader requires", a.element, a.key), where, first_file);
            if (!a.integer) continue;
            const std::vector<std::string> values = first_file ? std::vector<std::string>{"abc", "", "1.5", "0x10", "99999999999", " 1", "1e3", "--1", "+"}
                                                               : std::vector<std::string>{"abc", "99999999999"};
            for (const std::string& v : values)
                add(fmt::format("{}: <{}> {}=\"{}\"", file, a.element, a.key, v), edit_attribute(xml, at, a.key, fmt::format(" {}=\"{}\"", a.key, v)),
                    fmt::format("<{}> attribute {}=\"{}\" is not an integer", a.element, a.key, v), where, false);
        }
    }

    void limits(const std::string& file, const std::string& xml) {
        // Values outside the executor's limits (export_msccl.hpp MscclLimits), at <algo> (1:1) or the first <step>.
        const std::size_t algo = element_at(xml, "algo"), step = element_at(xml, "step");
        const SourceLoc sl = location_of(xml, step);
        const std::string at_step = fmt::format("x.xml:{}:{}: ", sl.line, sl.column);
        for (std::string n : {"0", "-4", "1048577", "1000000000", "2147483647", "-2147483648"})
            add(file + ": nchunksperloop " + n, edit_attribute(xml, algo, "nchunksperloop", " nchunksperloop=\"" + n + "\""),
                "nchunksperloop=\"" + n + "\" is outside 1..1048576", "x.xml:1:1: ", true);
        for (std::string n : {"0", "1", "-1", "1025", "2147483647"})
            add(file + ": ngpus " + n, edit_attribute(xml, algo, "ngpus", " ngpus=\"" + n + "\""), "ngpus=\"" + n + "\" is outside 2..1024 [MAX_SUBS]",
                "x.xml:1:1: ", false);
        for (std::string n : {"0", "-1", "33", "1000000"})
            add(file + ": nchannels " + n, edit_attribute(xml, algo, "nchannels", " nchannels=\"" + n + "\""),
                "nchannels=\"" + n + "\" is outside 1..32 [MAXCHANNELS]", "x.xml:1:1: ", false);
        for (std::string p : {"simple", "LL64", "", "Simple "})
            add(file + ": proto '" + p + "'", edit_attribute(xml, algo, "proto", " proto=\"" + p + "\""),
                "proto=\"" + p + "\" is not Simple, LL or LL128", "x.xml:1:1: ", false);
        for (std::string k : {"gather", "allgatherv", "ALLREDUCE", ""})
            add(file + ": coll '" + k + "'", edit_attribute(xml, algo, "coll", " coll=\"" + k + "\""),
                "coll=\"" + k + "\": collsched checks allreduce, allgather, alltoall, reduce, reducescatter, broadcast and custom", "x.xml:1:1: ",
                false);
        for (std::string t : {"x", "", "S", "send"})
            add(file + ": step type '" + t + "'", edit_attribute(xml, step, "type", " type=\"" + t + "\""), "unknown step type \"" + t + "\"", at_step,
                false);
        for (std::string b : {"q", "", "O", "io"})
            add(file + ": srcbuf '" + b + "'", edit_attribute(xml, step, "srcbuf", " srcbuf=\"" + b + "\""), "buffer \"" + b + "\" is not i, o or s",
                at_step, false);
        for (std::string n : {"-1", "72", "1000000"})
            add(file + ": cnt " + n, edit_attribute(xml, step, "cnt", " cnt=\"" + n + "\""), "cnt=\"" + n + "\" is outside 0..71 [MSCCL_MAX_COUNT]",
                at_step, false);
        for (std::string n : {"2", "-1", "100"})
            add(file + ": hasdep " + n, edit_attribute(xml, step, "hasdep", " hasdep=\"" + n + "\""), "hasdep=\"" + n + "\" must be 0 or 1", at_step,
                false);
        for (std::string n : {"-1", "64", "32768", "2147483647"})
            add(file + ": s " + n, edit_attribute(xml, step, "s", " s=\"" + n + "\""), "s=\"" + n + "\" is outside 0..63 [MSCCL_MAX_NUM_STEPS]",
                at_step, false);
        // A required attribute after the executor's first 16 (MAX_ATTR_COUNT): not found by it.
        std::string junk;
        for (int i = 0; i < 16; ++i) junk += fmt::format(" x{}=\"0\"", i);
        std::string late = xml;
        late.insert(step + std::string("<step").size(), junk);
        add(file + ": <step> with 16 attributes before its own", late, "<step> has attribute s after its first 16; the executor's reader keeps 16",
            at_step, true);
        // Cut short: inside the last closing tag, mid-attribute, mid-element, after the first line.
        for (std::size_t cut : {xml.rfind("</algo>") + 3, xml.rfind("</algo>"), xml.size() / 2, xml.size() / 3, xml.find('\n') + 1, std::size_t{7},
                                std::size_t{1}})
            add(fmt::format("{}: cut at byte {} of {}", file, cut, xml.size()), xml.substr(0, cut), "malformed MSCCL-IR XML: ", "x.xml:", false);
    }

    void not_files() {
        // Not a file to read: refused by its kind before it is opened.
        for (auto [setup, message] : std::vector<std::pair<std::string, std::string>>{
                 {"mkdir x.xml &&", "x.xml: is a directory, not a table or schedule"},
                 {"ln -s /dev/zero x.xml &&", "x.xml: is a character device, not a table or schedule (only regular files and pipes are read)"}})
            for (const std::string& cmd : commands_) {
                Case c;
                c.name = "x.xml made by '" + setup + "' (" + cmd + ")";
                c.setup = setup;
                c.args = cmd;
                c.message = message;
                c.absent = {"out.json"};
                out_.push_back(c);
            }
    }

    void nesting() {
        // Deep nesting, closed or not: refused at the 65th level, never recursing.
        const std::string ring = slurp(source("tests/data/msccl/allgather_ring.xml"));
        const std::string head = ring.substr(0, ring.find('\n') + 1);
        for (std::size_t depth : {65u, 66u, 1000u, 100000u})
            for (std::string tag : {"a", "gpu", "tb"})
                for (bool closed : {false, true})
                    for (bool lines : {false, true}) {
                        std::string text = head;  // <algo ...> is level 1
                        std::size_t at65 = 0;
                        for (std::size_t i = 1; i < depth; ++i) {
                            if (i == 64) at65 = text.size();
                            text += "<" + tag + ">" + (lines ? "\n" : "");
                        }
                        if (closed) {
                            for (std::size_t i = 1; i < depth; ++i) text += "</" + tag + ">" + (lines ? "\n" : "");
                            text += "</algo>\n";
                        }
                        const SourceLoc loc = location_of(text, at65);
                        add(fmt::format("<{}> nested {} deep{}{}", tag, depth, closed ? ", closed" : "", lines ? ", one per line" : ""), text,
                            "malformed MSCCL-IR XML: elements nested more than 64 deep (MSCCL-IR needs 4: <algo>, <gpu>, <tb>, <step>)",
                            fmt::format("x.xml:{}:{}: ", loc.line, loc.column), depth == 100000u);
                    }
    }

    const std::vector<std::string> commands_ = {"verify x.xml", "simulate x.xml", "convert x.xml -o out.json"};
    std::size_t turn_ = 0;  ///< the commands take turns where a case does not need all three
    std::vector<Case> out_;
};

}  // namespace

TEST_CASE("hostile surfaces: MSCCL-IR programs the executor would not load are refused at their element") {
    run_category("msccl-ir", MscclCases().all());
}
