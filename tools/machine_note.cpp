#include "tools/machine_note.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compiler/topology/topology.hpp"

namespace collsched::tools {

namespace {

/// The top-level "faults" string of a JSON head; stops at the first list (the edges).
struct FaultsSax : nlohmann::json_sax<nlohmann::json> {
    std::optional<std::string> faults;
    int depth = 0;
    bool want = false;
    bool value() {
        want = false;
        return true;
    }
    bool null() override { return value(); }
    bool boolean(bool) override { return value(); }
    bool number_integer(number_integer_t) override { return value(); }
    bool number_unsigned(number_unsigned_t) override { return value(); }
    bool number_float(number_float_t, const string_t&) override { return value(); }
    bool string(string_t& s) override {
        if (want) faults = s;
        return value();
    }
    bool binary(binary_t&) override { return value(); }
    bool start_object(std::size_t) override {
        want = false;
        return ++depth > 0;
    }
    bool key(string_t& k) override {
        want = depth == 1 && k == "faults";
        return true;
    }
    bool end_object() override { return --depth >= 0; }
    bool start_array(std::size_t) override { return false; }
    bool end_array() override { return false; }
    bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

}  // namespace

std::string faults_line(std::string_view spec) {
    if (!spec.starts_with("graph:")) return {};
    const std::string file(spec.substr(6));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec)) return {};
    std::ifstream in(file, std::ios::binary);
    std::string head(std::size_t{64} << 10, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
    FaultsSax sax;
    nlohmann::json::sax_parse(head.begin(), head.end(), &sax);
    return sax.faults && !sax.faults->empty() ? fmt::format("faults: {}\n", *sax.faults) : std::string();
}

std::string choose_router_model(const Topology& t, std::string_view model_options, Model& model) {
    // a machine whose switches reduce or multicast (--nvls, --sharp) keeps its model: combine=routers needs replicate=no
    if (t.routers() == 0 || model.replicate || model.combine_routers || model.multicast_routers || t.family() != Family::graph ||
        model_options.find("replicate") != std::string_view::npos)
        return {};
    model.replicate = true;
    return "model: replicate=yes chosen for this machine (it has routers; copies through them are encoded with replicate=yes; "
           "--model replicate=no to refuse them)\n";
}

}  // namespace collsched::tools
