/** \file
 * Chakra rank traces in tests, taken apart and put back together: a trace file is the
 * GlobalMetadata message followed by the Node messages, each preceded by its length as a varint
 * (compiler/formats/export_chakra.hpp writes them so). Tests parse a file into a `Trace`, edit its
 * metadata or nodes, and serialize it again to make broken or hostile trace sets.
 */
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "compiler/formats/et_def.pb.h"

namespace collsched::test {

/// A trace file as messages: GlobalMetadata then Nodes.
struct Trace {
    ChakraProtoMsg::GlobalMetadata meta;
    std::vector<ChakraProtoMsg::Node> nodes;
};

/// The messages of one rank's trace file; fails the test when a message does not parse.
inline Trace parse_trace(const std::string& data) {
    Trace t;
    google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(data.data()), static_cast<int>(data.size()));
    std::uint32_t size = 0;
    bool first = true;
    while (in.ReadVarint32(&size)) {
        auto limit = in.PushLimit(static_cast<int>(size));
        if (first) REQUIRE(t.meta.ParseFromCodedStream(&in));
        else REQUIRE(t.nodes.emplace_back().ParseFromCodedStream(&in));
        in.PopLimit(limit);
        first = false;
    }
    return t;
}

/// The trace file of `t`: each message preceded by its length.
inline std::string serialize_trace(const Trace& t) {
    std::string out;
    {
        google::protobuf::io::StringOutputStream raw(&out);
        google::protobuf::io::CodedOutputStream coded(&raw);  // flushed into `out` when it ends
        auto put = [&](const google::protobuf::MessageLite& m) {
            coded.WriteVarint32(static_cast<std::uint32_t>(m.ByteSizeLong()));
            m.SerializeWithCachedSizes(&coded);
        };
        put(t.meta);
        for (const auto& n : t.nodes) put(n);
    }
    return out;
}

}  // namespace collsched::test
