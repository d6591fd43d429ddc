/** \file
 * InputError: how every part stops on bad input that has no source text to point into (a
 * malformed table file, an unknown topology spec, an impossible size): one clear line saying
 * what, where and what was expected. The command line prints it and exits with code 2. Source
 * programs report through dsl/diagnostics.hpp instead, with line, column and a caret.
 */
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>

namespace collsched {

class InputError : public std::runtime_error {
public:
    explicit InputError(std::string_view what) : std::runtime_error(printable(what)) {}
    explicit InputError(const std::string& what) : InputError(std::string_view(what)) {}
    explicit InputError(const char* what) : InputError(std::string_view(what)) {}

    /// `s` with every control byte other than line feed and tab written as \xNN: messages quote
    /// what the user gave, and a NUL byte in it would end the message where it is printed (what()
    /// is a C string), a carriage return or an escape sequence would garble the terminal.
    static std::string printable(std::string_view s) {
        std::string out;
        out.reserve(s.size());
        for (char c : s) {
            const auto b = static_cast<unsigned char>(c);
            if ((b < 0x20 && c != '\n' && c != '\t') || b == 0x7f) {
                char hex[8];
                std::snprintf(hex, sizeof hex, "\\x%02x", b);
                out += hex;
            } else {
                out += c;
            }
        }
        return out;
    }
};

}  // namespace collsched
