/** \file
 * An MSCCL-IR program as the executor loads it (internal to compiler/, for
 * compiler/interop/msccl_import.cpp): ranks, thread blocks and their steps read from the XML elements
 * with every rule of the executor's reader (msccl-executor-nccl, `msccl_parser.cc`, cited in
 * docs/exports.md, "Reading MSCCL-IR"), the buffers the executor gives each collective
 * (`nchunksperloop`, `msccl_setup.cc`, `msccl_lifecycle.cc`), and the collector of problems
 * (docs/errors.md, "Executor formats: one rule"): bad input, judged from one value alone (a missing
 * attribute, a value outside the format's range: exit 2, file:line:col, at most 20 lines, thrown
 * together at the end of a phase), and refusals, what the executor's reader refuses in a
 * well-formed file because of how its values fit together (exit 1, reported as findings in place
 * of the program's check). What a loadable program *does* is judged elsewhere
 * (compiler/interop/async_program.hpp).
 */
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "compiler/interop/msccl_import.hpp"
#include "compiler/interop/msccl_xml.hpp"
#include "support/assert.hpp"
#include "support/error.hpp"

namespace collsched::msccl {

/// The step types of MSCCL-IR as the executor runs them (msccl_kernel.cu:239-310): `s` send
/// src; `r` receive into dst; `rcs` receive into dst and send the received data on; `rrc`
/// receive, reduce with src, write dst; `rrs` receive, reduce with src, send on (no local write);
/// `rrcs` receive, reduce with src, write dst and send on; `cpy` dst = src; `re` dst = dst (+)
/// src; `nop` only waits (the parser folds its dependency into the next step).
enum class OpType { send, recv, rcs, rrc, rrs, rrcs, copy, reduce, nop };

struct Op {
    OpType type;
    int rank, tb, pos;  ///< tb: index into Program::tbs; pos: the step's index in its thread block
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
    int line = 0, col = 0;
    std::vector<int> ops;  ///< indices into Program::ops, in step order
};

struct Gpu {
    int i_chunks = 0, o_chunks = 0, s_chunks = 0;
    int line = 0, col = 0;  ///< the <gpu> element's place
    std::vector<int> tbs;  ///< indices into Program::tbs
    std::map<int, int> tb_by_id;
};

/// The collectives the executor loads (`msccl_parser.cc:334-371`), and `custom` (msccl-tools'
/// name for a collective of the program's own).
enum class Coll { allreduce, allgather, alltoall, reduce, reducescatter, broadcast, custom };
/// Their names in MSCCL-IR (`coll="..."`), in the order of Coll; collsched's collective of the
/// same name is the row whose `msccl` names it (compiler/table/collective_kinds.hpp).
inline constexpr std::string_view coll_names[] = {"allreduce", "allgather", "alltoall", "reduce", "reducescatter", "broadcast", "custom"};
inline constexpr std::string_view coll_msccl_name(Coll c) { return coll_names[static_cast<int>(c)]; }

struct Program {
    int P = 0;        ///< ranks (ngpus)
    int N = 1;        ///< nchunksperloop: a chunk is count * sizeMultiplier / N elements
    int nchannels = 1;
    std::string coll_name, proto;
    Coll coll = Coll::custom;
    bool inplace = false, outofplace = true;
    std::vector<Gpu> gpus;
    std::vector<Tb> tbs;
    std::vector<Op> ops;
    std::vector<std::string> notes;  ///< what the reader accepted that the executor would not, or ignores

    bool reduction() const { return coll == Coll::allreduce || coll == Coll::reduce || coll == Coll::reducescatter; }
    /// Chunks per rank's share: N/P where the collective has a per-rank part, else N.
    int k() const {
        return coll == Coll::allgather || coll == Coll::alltoall || coll == Coll::reducescatter ? N / P : N;
    }
    /// The real size of the input and output buffers in chunks, as the executor allocates them
    /// from the call's count (docs/exports.md); custom: as declared, per rank.
    int input_chunks(int rank) const;
    int output_chunks(int rank) const;
};

constexpr std::size_t max_reported = 20;

/// Collects problems, each with the step's location: bad input, thrown at the end of a phase, and
/// refusals of the executor's reader, kept for the report (findings, exit 1).
class Problems {
public:
    explicit Problems(std::string_view name) : name_(name) {}
    void add(int line, int col, std::string what) {
        ++count_;
        if (lines_.size() >= max_reported) return;
        lines_.push_back(line > 0 ? fmt::format("{}:{}:{}: {}", name_, line, col, what) : fmt::format("{}: {}", name_, what));
    }
    void add(const Elem& e, std::string what) { add(e.line, e.col, std::move(what)); }
    /// What the executor's reader refuses in a well-formed file (a finding, "[refused]").
    void refuse(int line, int col, std::string what) {
        ++refused_count_;
        if (refused_.size() >= max_reported) return;
        refused_.push_back((line > 0 ? fmt::format("{}:{}:{}: {}", name_, line, col, what) : fmt::format("{}: {}", name_, what)) +
                           " [refused]");
    }
    void refuse(const Elem& e, std::string what) { refuse(e.line, e.col, std::move(what)); }
    const std::vector<std::string>& refusals() const { return refused_; }
    std::size_t refusal_count() const { return refused_count_; }
    void check() const {
        if (!count_) return;
        std::string text;
        for (const std::string& l : lines_) text += (text.empty() ? "" : "\n") + l;
        if (count_ > lines_.size()) text += fmt::format("\n({} more problems)", count_ - lines_.size());
        throw InputError(text);
    }
    bool empty() const { return count_ == 0; }
    /// The file's name, as every line names it.
    const std::string& name() const { return name_; }

private:
    std::string name_;
    std::vector<std::string> lines_, refused_;
    std::size_t count_ = 0, refused_count_ = 0;
};

/// The step `op` in words: rank, thread block, step, what it does and its channel.
std::string where(const Program& prog, const Op& op);

/// Reads the elements into a Program; every rule of the executor's reader is checked here
/// (msccl_parser.cc), with the executor's limits and the buffers' sizes.
Program build_program(const Elem& algo, const MscclImportOptions& opt, Problems& pr);

}  // namespace collsched::msccl
