/** \file
 * One row per collective (CaDiCaL's options.hpp: "to add a new option, simply add a new line
 * below"). A row says what the collective's goals are, as data: which data it moves (personal
 * messages m(s,d), broadcast data b(s), or values a(s) that combine), from which processors to
 * which, how its values combine, the message a `send` without one names, its arguments, and its
 * names in MSCCL-IR and MPI. The enum CollectiveKind, the name tables, the parsers and printers
 * of both spellings (`broadcast(r)`, `broadcast:R`), the goal enumerations (Collective's
 * for_each_goal and friends, compiler/table/collective.hpp), the checkers' goal lists, the default
 * message of the DSL's `send`, the help texts and the MPI baselines all read these rows; a
 * kind's properties are asked of its row (personalized(), rooted(), reduces(), ...), never by
 * listing kinds.
 *
 * To add a collective: add a line to COLLSCHED_COLLECTIVES (the compiler refuses an incomplete
 * row: the macro's arity and the static_asserts below), say what it means in docs/semantics.md,
 * and add its tests. Parts that implement a kind with code of their own (an exporter, a
 * construction) refuse the kinds they do not know by their row's names.
 */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace collsched {

namespace coll {

/// The arguments a collective takes: none (`alltoall`), a root (`broadcast(r)`,
/// `broadcast:R`), or a root and a set of members (`multicast(r, {a, b})`, `multicast:R:a,b`).
enum class Args : std::uint8_t { none, root, root_members };
/// The data whose arrival is the goal: personal messages m(s,d) (goal: d holds it), broadcast
/// data b(s) (goal: every sink holds it), values a(s) that combine (goals on a(i..j) and
/// partials), or any message (custom: only the table's own requirements).
enum class Data : std::uint8_t { personal, broadcast, values, any };
/// A set of processors: every processor, the root, the multicast members, or (reduce_scatter)
/// the owner of a chunk's block (chunks p*C/P .. (p+1)*C/P-1 end at processor p).
enum class Reach : std::uint8_t { none, every, root, members, block_owner };
/// How values combine: not at all; in order only, a(i..j) (prefix); in order or as partials,
/// as the table writes them (reduce); as commutative partials under the buffer rule
/// (docs/semantics.md, "Reductions": allreduce, reduce_scatter, scan).
enum class Combine : std::uint8_t { none, ordered, table, buffer };
/// The last contributor of a combining goal at processor p: every processor's (P-1), or p's own
/// (prefix, scan: a(0..p)).
enum class Upto : std::uint8_t { none, last, self };
/// The message of a DSL `send` that names none: m(src, dst), b(root), the sender's datum b(src),
/// the sender's value a(src), or the sender's partial of the step (docs/semantics.md).
enum class Send : std::uint8_t { personal, root_datum, own_datum, own_value, partial };

}  // namespace coll

/// The rows: ROW(name, args, data, from, to, combine, upto, send, msccl, mpi, help). `from` and
/// `to` are the goal's sources and sinks: personal and broadcast data go from every source to
/// every sink but itself; combining goals end at the sinks `to`, holding a(0..upto).
/// `msccl`: the collective's name in MSCCL-IR (`coll="..."`, MSCCL++ plans), "" when it has none.
/// `mpi`: the MPI collective that does the same job (mpirun's baseline), "" when none. The
/// order is the order of every "expected ..." list.
#define COLLSCHED_COLLECTIVES(ROW)                                                                                            \
    ROW(alltoall, none, personal, every, every, none, none, personal, "alltoall", "MPI_Alltoall",                              \
        "every processor sends a personal message m(s,d) to every other")                                                      \
    ROW(allgather, none, broadcast, every, every, none, none, own_datum, "allgather", "MPI_Allgather",                        \
        "every processor's datum b(s) reaches every other (multinode broadcast)")                                              \
    ROW(broadcast, root, broadcast, root, every, none, none, root_datum, "broadcast", "MPI_Bcast",                            \
        "the root's datum b(r) reaches every processor")                                                                       \
    ROW(scatter, root, personal, root, every, none, none, personal, "", "MPI_Scatter",                                         \
        "the root sends m(r,d) to every other processor d")                                                                    \
    ROW(gather, root, personal, every, root, none, none, personal, "", "MPI_Gather",                                           \
        "every other processor s sends m(s,r) to the root")                                                                    \
    ROW(multicast, root_members, broadcast, root, members, none, none, root_datum, "", "",                                    \
        "the root's datum b(r) reaches every member")                                                                          \
    ROW(reduce, root, values, every, root, table, last, own_value, "reduce", "MPI_Reduce",                                     \
        "the root ends with every processor's value combined, a(0..P-1)")                                                      \
    ROW(prefix, none, values, every, every, ordered, self, own_value, "", "",                                                  \
        "processor p ends with a(0..p), combined in order")                                                                    \
    ROW(allreduce, none, values, every, every, buffer, last, partial, "allreduce", "MPI_Allreduce",                         \
        "every processor's buffer ends holding the sum of all, a({0..P-1})")                                                   \
    ROW(reduce_scatter, none, values, every, block_owner, buffer, last, partial, "reducescatter", "MPI_Reduce_scatter_block", \
        "processor p's block of the buffer ends holding the sum of all")                                                       \
    ROW(scan, none, values, every, every, buffer, self, partial, "", "MPI_Scan",                                             \
        "processor p's buffer ends holding a({0..p}) (commutative prefix)")                                                    \
    ROW(custom, none, any, none, none, none, none, own_datum, "", "", "only the table's own requirements")

enum class CollectiveKind : std::uint8_t {
#define COLLSCHED_KIND(name, ...) name,
    COLLSCHED_COLLECTIVES(COLLSCHED_KIND)
#undef COLLSCHED_KIND
};

struct CollectiveRow {
    CollectiveKind kind;
    std::string_view name;
    coll::Args args;
    coll::Data data;
    coll::Reach from, to;
    coll::Combine combine;
    coll::Upto upto;
    coll::Send send;
    std::string_view msccl;  ///< "" when MSCCL-IR has no such collective
    std::string_view mpi;    ///< "" when MPI has no such collective
    std::string_view help;   ///< one line for --help and docs

    /// Whether the data are personal messages m(s,d).
    constexpr bool personalized() const { return data == coll::Data::personal; }
    /// Whether the collective names a root processor.
    constexpr bool rooted() const { return args != coll::Args::none; }
    /// A commutative reduction checked by the buffer rule of partials (allreduce,
    /// reduce_scatter, scan; docs/semantics.md, "Reductions").
    constexpr bool reduces() const { return combine == coll::Combine::buffer; }
    /// Goals on combined values a(i..j) (reduce, prefix).
    constexpr bool combines() const { return combine == coll::Combine::ordered || combine == coll::Combine::table; }
    /// Goals on partials a({...}) in buffers (reduce, allreduce, reduce_scatter, scan).
    constexpr bool has_partials() const { return combine == coll::Combine::table || combine == coll::Combine::buffer; }
    /// Whether values combine at all (every collective of data `values`).
    constexpr bool combining() const { return combine != coll::Combine::none; }
    /// Whether the goals stay the same under every renaming of processors (alltoall, allgather):
    /// neither a root, nor members, nor an order of processors, nor blocks.
    constexpr bool symmetric() const {
        return (data == coll::Data::personal || data == coll::Data::broadcast) && from == coll::Reach::every && to == coll::Reach::every;
    }
    /// How the DSL writes it with its arguments: "broadcast(r)", "multicast(r, {members})".
    std::string dsl_form() const;
    /// How spec strings write it: "broadcast:R", "multicast:R:a,b,c".
    std::string spec_form() const;
};

inline constexpr CollectiveRow collective_rows[] = {
#define COLLSCHED_ROW(n, a, d, f, t, c, u, s, msccl, mpi, help)                                                               \
    {CollectiveKind::n, #n, coll::Args::a, coll::Data::d, coll::Reach::f, coll::Reach::t, coll::Combine::c, coll::Upto::u, \
     coll::Send::s, msccl, mpi, help},
    COLLSCHED_COLLECTIVES(COLLSCHED_ROW)
#undef COLLSCHED_ROW
};

namespace coll {

/// What makes a row complete and consistent; checked at compile time for every row.
constexpr bool row_complete(const CollectiveRow& r, std::size_t index) {
    if (static_cast<std::size_t>(r.kind) != index || r.name.empty() || r.help.empty()) return false;
    switch (r.data) {
        case Data::personal:
        case Data::broadcast:  // goals from `from` to `to`, nothing combines
            return r.from != Reach::none && r.from != Reach::block_owner && r.to != Reach::none && r.combine == Combine::none &&
                   r.upto == Upto::none && (r.from == Reach::root || r.to == Reach::root || r.to == Reach::members) == r.rooted() &&
                   (r.to == Reach::members) == (r.args == Args::root_members) &&
                   (r.send == Send::personal) == (r.data == Data::personal) &&
                   (r.send == Send::root_datum) == (r.data == Data::broadcast && r.from == Reach::root);
        case Data::values:  // every value contributes; the goals end at `to`
            return r.from == Reach::every && r.to != Reach::none && r.to != Reach::members && r.combine != Combine::none &&
                   r.upto != Upto::none && (r.to == Reach::root) == r.rooted() &&
                   r.send == (r.combine == Combine::buffer ? Send::partial : Send::own_value);
        case Data::any:
            return r.from == Reach::none && r.to == Reach::none && r.combine == Combine::none && !r.rooted() && r.send == Send::own_datum;
    }
    return false;
}

constexpr bool rows_complete() {
    for (std::size_t i = 0; i < std::size(collective_rows); ++i)
        if (!row_complete(collective_rows[i], i)) return false;
    return true;
}
static_assert(rows_complete(), "a row of COLLSCHED_COLLECTIVES is incomplete or inconsistent (coll::row_complete says what a row needs)");

}  // namespace coll

/// The row of a kind.
constexpr const CollectiveRow& collective_row(CollectiveKind k) { return collective_rows[static_cast<std::size_t>(k)]; }
/// The row named `name` (either spelling's name, "broadcast"), or null.
constexpr const CollectiveRow* find_collective_row(std::string_view name) {
    for (const CollectiveRow& r : collective_rows)
        if (r.name == name) return &r;
    return nullptr;
}
/// The row whose MSCCL-IR name is `name` ("reducescatter"), or null.
constexpr const CollectiveRow* find_collective_msccl(std::string_view name) {
    for (const CollectiveRow& r : collective_rows)
        if (!r.msccl.empty() && r.msccl == name) return &r;
    return nullptr;
}

/// "a, b, c or d": the forms of the rows that pass `keep`, in row order, joined by `sep` with
/// `last` before the final one. `form` is a member function of CollectiveRow (dsl_form,
/// spec_form) or a data member (name).
template <class Form, class Keep>
std::string collective_list(Form form, Keep keep, std::string_view sep = ", ", std::string_view last = " or ") {
    std::string out;
    std::size_t n = 0, total = 0;
    for (const CollectiveRow& r : collective_rows) total += keep(r) ? 1 : 0;
    for (const CollectiveRow& r : collective_rows) {
        if (!keep(r)) continue;
        if (n > 0) out += n + 1 == total ? last : sep;
        if constexpr (std::is_member_function_pointer_v<Form>) out += (r.*form)();
        else out += r.*form;
        ++n;
    }
    return out;
}

}  // namespace collsched
