/** \file
 * InputError: how every part stops on bad input that has no source text to point into (a
 * malformed table file, an unknown topology spec, an impossible size): one clear line saying
 * what, where and what was expected. The command line prints it and exits with code 2. Source
 * programs report through dsl/diagnostics.hpp instead, with line, column and a caret.
 */
#pragma once

#include <stdexcept>

namespace collsched {

class InputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace collsched
