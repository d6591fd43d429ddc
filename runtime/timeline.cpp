// timeline_json: a prediction's per-channel timeline (runtime/timing.hpp), apart from the engine.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/table/send_table.hpp"
#include "compiler/topology/topology.hpp"
#include "runtime/timing.hpp"

namespace collsched {

std::string timeline_json(const SendTable& t, const TimePrediction& p, const TimeOptions& given) {
    const Topology& topo = *t.topology;
    const TimeOptions opt = with_network_class(topo, given);
    const Messages ms = t.messages();
    std::vector<std::vector<std::uint32_t>> by_channel(topo.channels().size());
    for (std::uint32_t j = 0; j < t.transfers.size(); ++j) by_channel[idx(t.transfers[j].channel)].push_back(j);
    nlohmann::ordered_json j;
    j["format"] = "collsched.timeline/1";
    j["topology"] = topo.spec();
    j["collective"] = t.collective.to_string();
    j["size_bytes"] = p.size;
    j["datum_bytes"] = p.datum_bytes;
    j["chunk_bytes"] = p.chunk_bytes;
    j["synchronous_s"] = p.synchronous;
    j["asynchronous_s"] = p.asynchronous;
    auto& chans = j["channels"] = nlohmann::ordered_json::array();
    for (std::uint32_t c = 0; c < by_channel.size(); ++c) {
        if (by_channel[c].empty()) continue;
        std::vector<std::uint32_t>& list = by_channel[c];
        std::stable_sort(list.begin(), list.end(), [&](std::uint32_t a, std::uint32_t b) { return p.transfers[a].start < p.transfers[b].start; });
        const Channel& ch = topo.channel(ChannelId{c});
        const LinkSpeed sp = channel_speed(topo, ChannelId{c}, opt);
        nlohmann::ordered_json cj{{"from", topo.node_name(ch.from)}, {"to", topo.node_name(ch.to)}, {"alpha_s", sp.alpha}, {"bandwidth_Bps", sp.bandwidth}};
        double busy = 0;
        auto& b = cj["busy"] = nlohmann::ordered_json::array();
        for (std::uint32_t x : list) {
            const TransferTime& tt = p.transfers[x];
            busy += tt.end - tt.start;
            b.push_back({{"step", t.transfers[x].step}, {"msg", ms.name(t.transfers[x].message)}, {"ready", tt.ready}, {"start", tt.start},
                         {"end", tt.end}, {"arrive", tt.arrive}});
        }
        cj["busy_s"] = busy;
        chans.push_back(std::move(cj));
    }
    return j.dump() + "\n";
}

}  // namespace collsched
