/** \file
 * Approximate comparison relative to the values compared. doctest::Approx allows
 * epsilon * (scale + max(|a|, |b|)) with a scale of 1, so for values far below 1 (times in
 * seconds) its tolerance is absolute: Approx(1.5e-6) equals anything from 0 to 1.3e-5, and
 * Approx(68e-6).epsilon(1e-3) anything within a millisecond. rel(v) sets the scale to 0: the
 * tolerance is epsilon times the larger value. Compare with 0 exactly (`== 0.0`): at scale 0 the
 * strict comparison would refuse an exact 0, so rel(0) is doctest's own, absolute tolerance.
 */
#pragma once

#include <doctest/doctest.h>

namespace collsched::test {

inline doctest::Approx rel(double v) { return v == 0 ? doctest::Approx(0.0) : doctest::Approx(v).scale(0); }

}  // namespace collsched::test
