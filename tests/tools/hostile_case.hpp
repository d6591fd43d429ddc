/** \file
 * The hostile campaign's case and its runner (issue 34; docs/errors.md, "Input formats"):
 * tests/tools/test_hostile_surfaces.cpp runs the real executable on every case of a category
 * (and holds the small categories); test_hostile_msccl.cpp and test_hostile_chakra.cpp hold the
 * MSCCL-IR and Chakra categories.
 */
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace collsched::test::hostile {

/// One hostile input and what collsched must answer.
struct Case {
    std::string name;
    std::string args;                                         ///< after `collsched`; {D} is the scratch directory
    std::vector<std::pair<std::string, std::string>> files;   ///< written into the scratch directory first
    std::string setup;                                        ///< a shell line run in the scratch directory first (mkfifo ...)
    int code = 2;
    std::string message;  ///< part of standard error
    std::string where;    ///< the place the message names ("f.csv:3:", "x.sched:2:7:"), "" for none
    std::vector<std::string> absent;  ///< files in the scratch directory that must not exist afterwards
    std::string out;      ///< part of standard output (exit 0, 1, 3)
    std::string env;      ///< environment assignments for the run
    double max_seconds = 0;  ///< slow category only: a generous bound on the wall time (0: none but the kill at 120 s)
    int or_code = -1;        ///< slow category only: a second answer a loaded machine may give instead (its exit code) ...
    std::string or_out;      ///< ... and a part of its standard output
};

/// A case from its most used fields (the others keep their defaults).
Case make(std::string name, std::string args, std::vector<std::pair<std::string, std::string>> files, std::string setup, int code,
          std::string message, std::string where = "", std::vector<std::string> absent = {}, std::string out = "");

std::string replace_all(std::string s, const std::string& from, const std::string& to);

/// Runs one case in a fresh scratch directory under a time and memory limit and checks its
/// exit code, message, place, output and the files it must not leave.
void run_case(const Case& c, const std::string& category);
/// Every case of a category, and the campaign's count for it.
void run_category(const std::string& category, const std::vector<Case>& cases);

}  // namespace collsched::test::hostile
