#include "support/budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "support/error.hpp"

namespace collsched {

Deadline Deadline::after(double seconds) {
    if (!(seconds > 0)) return {};
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

double Deadline::left() const {
    if (none()) return std::numeric_limits<double>::infinity();
    return std::max(0.0, std::chrono::duration<double>(when_ - Clock::now()).count());
}

double Deadline::for_call(double cap, double floor) const {
    if (none()) return cap > 0 ? cap : 0;
    double t = left();
    if (cap > 0) t = std::min(t, cap);
    return std::max(t, floor);
}

std::uint64_t physical_memory() {
    long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || size <= 0) return 0;
    return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(size);
}

std::uint64_t resident_memory() {
    // /proc/self/statm: size resident shared text lib data dt, in pages.
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, resident = 0;
    int n = std::fscanf(f, "%llu %llu", &size, &resident);
    std::fclose(f);
    if (n != 2) return 0;
    return static_cast<std::uint64_t>(resident) * static_cast<std::uint64_t>(::sysconf(_SC_PAGE_SIZE));
}

std::uint64_t peak_resident_memory() {
    struct rusage ru {};
    if (::getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return static_cast<std::uint64_t>(ru.ru_maxrss) * 1024;  // Linux: kilobytes
}

MemoryBudget MemoryBudget::machine_default() {
    return MemoryBudget(static_cast<std::uint64_t>(static_cast<double>(physical_memory()) * default_fraction));
}

std::uint64_t MemoryBudget::left() const {
    if (none()) return std::numeric_limits<std::uint64_t>::max();
    std::uint64_t now = resident_memory();
    return now >= limit_ ? 0 : limit_ - now;
}

bool MemoryBudget::exceeded(double share) const {
    if (none()) return false;
    return static_cast<double>(resident_memory_recent()) >= share * static_cast<double>(limit_);
}

std::uint64_t resident_memory_recent() {
    thread_local std::uint64_t last = 0;
    thread_local Deadline::Clock::time_point read_at{};
    const auto now = Deadline::Clock::now();
    if (last == 0 || now - read_at >= std::chrono::milliseconds(1)) {
        last = resident_memory();
        read_at = now;
    }
    return last;
}

double release_seconds(std::uint64_t bytes) { return 0.5e-9 * static_cast<double>(bytes); }

bool passed_reserving_release(Deadline d) {
    if (d.none()) return false;
    return d.left() <= release_seconds(resident_memory_recent());
}

namespace {

/// The frees still running (free_in_background), guarded by one mutex.
struct Frees {
    std::mutex m;
    std::condition_variable done;
    int pending = 0;
};

Frees& frees() {
    static Frees* f = new Frees;  // never destroyed: detached threads may still use it at exit
    return *f;
}

}  // namespace

void free_in_background(std::function<void()> release) {
    Frees& f = frees();
    {
        std::lock_guard lock(f.m);
        ++f.pending;
    }
    std::thread([release = std::move(release), &f]() mutable {
        release();
        release = nullptr;
        std::lock_guard lock(f.m);
        --f.pending;
        f.done.notify_all();
    }).detach();
}

bool wait_for_background_frees(Deadline until) {
    Frees& f = frees();
    std::unique_lock lock(f.m);
    if (until.none()) {
        f.done.wait(lock, [&] { return f.pending == 0; });
        return true;
    }
    return f.done.wait_until(lock, until.when(), [&] { return f.pending == 0; });
}

std::string format_bytes(std::uint64_t b) {
    const double x = static_cast<double>(b);
    if (b >= 1'000'000'000) return fmt::format("{:.1f} GB", x / 1e9);
    if (b >= 1'000'000) return fmt::format("{:.0f} MB", x / 1e6);
    if (b >= 1'000) return fmt::format("{:.0f} KB", x / 1e3);
    return fmt::format("{} bytes", b);
}

std::uint64_t parse_bytes(const std::string& text) {
    auto bad = [&] {
        return InputError(fmt::format("'{}' is not a size: expected a number with an optional unit (K, M, G, T: powers of 1000; KiB, "
                                      "MiB, GiB, TiB: powers of 1024), e.g. 4G, 512MiB, or a share of physical memory such as 50%",
                                      text));
    };
    std::size_t i = 0;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == 0) throw bad();
    char* end = nullptr;
    const std::string number = text.substr(0, i);
    const double v = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !(v >= 0)) throw bad();
    std::string unit = text.substr(i);
    for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    double mult = 0;
    if (unit.empty() || unit == "B") mult = 1;
    else if (unit == "%") {
        if (v > 100) throw bad();
        return static_cast<std::uint64_t>(static_cast<double>(physical_memory()) * v / 100);
    } else {
        static constexpr struct {
            const char* dec;
            const char* bin;
        } units[] = {{"K", "KIB"}, {"M", "MIB"}, {"G", "GIB"}, {"T", "TIB"}};
        double dec = 1, bin = 1;
        for (auto [d, b] : units) {
            dec *= 1000;
            bin *= 1024;
            if (unit == d || unit == std::string(d) + "B") mult = dec;
            if (unit == b) mult = bin;
        }
        if (mult == 0) throw bad();
    }
    const double bytes = v * mult;
    if (bytes >= 1.8e19) throw bad();
    return static_cast<std::uint64_t>(bytes);
}

}  // namespace collsched
