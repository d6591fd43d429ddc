/** \file
 * The XML subset that MSCCL-IR files use (internal to compiler/, for compiler/interop/msccl_import.cpp):
 * elements and attributes only, as ElementTree and collsched write them. Whitespace (including
 * tabs) between elements, an `<?xml ...?>` declaration and comments are skipped; attribute values
 * take "..." or '...' and the five predefined entities and &#N;. Malformed text throws InputError
 * with file:line:col. The reader keeps its own stack (no recursion) and refuses elements nested
 * more than 64 deep, so hostile nesting is an InputError, never a stack overflow.
 */
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace collsched::msccl {

/// One element: its name, attributes in file order, child elements, and where it starts.
struct Elem {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attrs;
    std::vector<Elem> subs;
    int line = 0, col = 0;
};

/// The document's root element; `name` is used in messages, which call the text malformed `kind`
/// (NCCL's topology XML is read by the same lexer: compiler/machines/nccl_topo.cpp).
Elem parse_xml(std::string_view text, std::string_view name, std::string_view kind = "MSCCL-IR XML");

}  // namespace collsched::msccl
