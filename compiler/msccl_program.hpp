/** \file
 * An MSCCL-IR program as compiler/msccl_import.cpp checks and runs it (internal to compiler/):
 * ranks, thread blocks and their steps read from the XML elements with every structural rule of
 * the executor's reader (msccl-executor-nccl, msccl_parser.cc) and the exporter's limits
 * (compiler/export_msccl.hpp), and the collector of problems that every phase of the import
 * reports into (file:line:col, at most 20 lines, thrown together at the end of a phase).
 */
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/msccl_import.hpp"
#include "compiler/msccl_xml.hpp"
#include "dsl/diagnostics.hpp"

namespace collsched::msccl {

/// The step types of MSCCL-IR as the executor runs them (msccl_kernel.cu): `s` send src; `r`
/// receive into dst; `rcs` receive into dst and send on; `rrc` receive, reduce with src, write
/// dst; `rrs` receive, reduce with src, send on (no local write); `rrcs` receive, reduce with
/// src, write dst and send on; `cpy` dst = src; `re` dst = dst (+) src; `nop` only waits.
enum class OpType { send, recv, rcs, rrc, rrs, rrcs, copy, reduce, nop };

struct Op {
    OpType type;
    int rank, tb, pos;  ///< tb: index into Program::tbs
    char srcbuf = 'i', dstbuf = 'o';
    int srcoff = -1, dstoff = -1, cnt = 1;
    int depid = -1, deps = -1;
    bool hasdep = false;
    int line = 0, col = 0;
    bool sends() const { return type == OpType::send || type == OpType::rcs || type == OpType::rrs || type == OpType::rrcs; }
    bool receives() const {
        return type == OpType::recv || type == OpType::rcs || type == OpType::rrc || type == OpType::rrs || type == OpType::rrcs;
    }
    /// Whether the step reads its source chunks (srcbuf/srcoff).
    bool reads_src() const {
        return type == OpType::send || type == OpType::copy || type == OpType::rrc || type == OpType::rrs || type == OpType::rrcs ||
               type == OpType::reduce;
    }
    /// Whether the step writes its destination chunks (dstbuf/dstoff); `re` also reads them.
    bool writes_dst() const {
        return type == OpType::recv || type == OpType::rcs || type == OpType::rrc || type == OpType::rrcs || type == OpType::copy ||
               type == OpType::reduce;
    }
    /// Whether the step combines two values (a reduction).
    bool reduces() const { return type == OpType::rrc || type == OpType::rrs || type == OpType::rrcs || type == OpType::reduce; }
};

struct Tb {
    int rank, id, send, recv, chan;
    std::vector<int> ops;  ///< indices into Program::ops, in step order
};

struct Gpu {
    int i_chunks = 0, o_chunks = 0, s_chunks = 0;
    std::vector<int> tbs;  ///< indices into Program::tbs
    std::map<int, int> tb_by_id;
};

struct Program {
    int P = 0, k = 1;  ///< ranks; chunks per message (a reduction: chunks of the whole buffer, C)
    std::string coll;
    bool reduction = false;  ///< coll is allreduce, reduce or reducescatter
    bool inplace = false, outofplace = true;
    std::vector<Gpu> gpus;
    std::vector<Tb> tbs;
    std::vector<Op> ops;
};

constexpr std::size_t max_reported = 20;

/// Collects problems, each with the step's location; throws them all at the end of a phase.
class Problems {
public:
    explicit Problems(std::string_view name) : name_(name) {}
    void add(int line, int col, std::string what) {
        ++count_;
        if (lines_.size() >= max_reported) return;
        lines_.push_back(line > 0 ? fmt::format("{}:{}:{}: {}", name_, line, col, what) : fmt::format("{}: {}", name_, what));
    }
    void add(const Elem& e, std::string what) { add(e.line, e.col, std::move(what)); }
    void check() const {
        if (!count_) return;
        std::string text;
        for (const std::string& l : lines_) text += (text.empty() ? "" : "\n") + l;
        if (count_ > lines_.size()) text += fmt::format("\n({} more problems)", count_ - lines_.size());
        throw InputError(text);
    }
    bool empty() const { return count_ == 0; }

private:
    std::string name_;
    std::vector<std::string> lines_;
    std::size_t count_ = 0;
};

/// The step `op` in words: rank, thread block, step, what it does and its channel.
std::string where(const Program& prog, const Op& op);

/// Reads the elements into a Program; every structural rule of the executor's reader is
/// checked here (msccl_parser.cc), with the exporter's limits.
Program build_program(const Elem& algo, const MscclImportOptions& opt, Problems& pr);

}  // namespace collsched::msccl
