/** \file
 * Runs the collsched executable from tests: stdout, stderr and the exit code of one command.
 */
#pragma once

#include <sys/wait.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <fstream>
#include <sstream>
#include <string>

namespace collsched::test {

struct Run {
    int code = -1;
    std::string out, err;
};

/// Runs a shell command line (`mpirun ... collsched ...`).
inline Run run_shell(const std::string& command) {
    static int counter = 0;
    std::string err_file = "/tmp/collsched_test_stderr." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    std::string cmd = command + " 2>" + err_file;
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

/// Runs collsched with `args`.
inline Run run(const std::string& args) { return run_shell(std::string(COLLSCHED_BINARY) + " " + args); }

/// A scratch directory for one test, empty at the start and removed afterwards; files named in it.
struct Scratch {
    std::filesystem::path dir;
    explicit Scratch(const std::string& tag)
        : dir(std::filesystem::temp_directory_path() / ("collsched_" + tag + "." + std::to_string(::getpid()))) {
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
    }
    ~Scratch() { std::filesystem::remove_all(dir); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    /// The path of `name` in the directory; with `text`, the file is written first.
    std::string file(const std::string& name, const std::string& text = "") const {
        std::string p = (dir / name).string();
        if (!text.empty()) std::ofstream(p, std::ios::binary) << text;
        return p;
    }
    /// How many entries the directory holds (a failed write must leave no output, no temporary).
    std::size_t entries() const {
        return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
    }
};

inline std::string source(const std::string& rel) { return std::string(COLLSCHED_SOURCE_DIR) + "/" + rel; }

/// The topology spec of schedules/machines/<name>.json.
inline std::string machine(const std::string& name) { return "graph:" + source("schedules/machines/" + name + ".json"); }

/// A file's bytes ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// No time limit, for the constructions that take a time point to stop at.
inline constexpr auto never = std::chrono::steady_clock::time_point::max();

}  // namespace collsched::test
