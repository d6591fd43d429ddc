/** \file
 * Runs the collsched executable from tests: stdout, stderr and the exit code of one command.
 */
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace collsched::test {

struct Run {
    int code = -1;
    std::string out, err;
};

inline Run run(const std::string& args) {
    static int counter = 0;
    std::string err_file = "/tmp/collsched_test_stderr." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    std::string cmd = std::string(COLLSCHED_BINARY) + " " + args + " 2>" + err_file;
    Run r;
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return r;
    std::array<char, 65536> buf;
    std::size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    int status = ::pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream in(err_file);
    std::ostringstream ss;
    ss << in.rdbuf();
    r.err = ss.str();
    std::remove(err_file.c_str());
    return r;
}

inline std::string source(const std::string& rel) { return std::string(COLLSCHED_SOURCE_DIR) + "/" + rel; }

}  // namespace collsched::test
