// support/number.hpp: the readers of decimal numbers, whole (parse_decimal) and real (parse_real).
#include <doctest/doctest.h>

#include <cstdint>

#include "support/number.hpp"

using namespace collsched::support;

TEST_CASE("parse_decimal: digits only, leading zeros allowed, no overflow") {
    CHECK(parse_decimal("03") == 3u);
    CHECK(parse_decimal<std::uint8_t>("255") == 255);
    CHECK_FALSE(parse_decimal<std::uint8_t>("256"));
    CHECK_FALSE(parse_decimal("-1"));
    CHECK_FALSE(parse_decimal("1 "));
    CHECK_FALSE(parse_decimal(""));
}

TEST_CASE("parse_real: a whole cell of digits, fraction and exponent, finite and unsigned") {
    CHECK(parse_real("12") == 12.0);
    CHECK(parse_real("0.5") == 0.5);
    CHECK(parse_real(".5") == 0.5);
    CHECK(parse_real("1.2e+05") == 120000.0);
    CHECK(parse_real("0e+00") == 0.0);
    for (const char* bad : {"", "-1", "+1", " 1", "1 ", "1.5us", "1,5", "inf", "nan", "1e999", "0x10", "1e", "."})
        CHECK_MESSAGE(!parse_real(bad), bad);
}
