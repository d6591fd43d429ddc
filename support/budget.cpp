#include "support/budget.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <cctype>
#include <charconv>
#include <optional>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "support/error.hpp"
#include "support/units.hpp"

namespace collsched {

namespace {
std::atomic<bool> stop_flag{false};
}  // namespace

void request_stop(bool on) { stop_flag.store(on, std::memory_order_relaxed); }
bool stop_requested() { return stop_flag.load(std::memory_order_relaxed); }

Deadline Deadline::after(double seconds) {
    if (!(seconds > 0)) return {};
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)));
}

Deadline Deadline::share(double fraction) const {
    const Clock::time_point now = Clock::now();
    if (none() || when_ <= now) return *this;
    return Deadline(now + std::chrono::duration_cast<Clock::duration>((when_ - now) * fraction));
}

double Deadline::left() const {
    if (stop_requested()) return 0;
    if (none()) return std::numeric_limits<double>::infinity();
    return std::max(0.0, std::chrono::duration<double>(when_ - Clock::now()).count());
}

double Deadline::for_call(double cap, double floor) const {
    if (stop_requested()) return floor;
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

MemoryBudget MemoryBudget::standard() {
    if (const char* env = std::getenv(environment_variable)) {
        std::string_view s(env);
        std::uint64_t mb = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), mb);
        if (s.empty() || ec != std::errc{} || end != s.data() + s.size() || mb == 0 || mb > (std::uint64_t{1} << 40))
            throw InputError(fmt::format("{} must be a whole number of MiB from 1 to 2^40, not '{}'", environment_variable, s.substr(0, 40)));
        return MemoryBudget(mb << 20);
    }
    const std::uint64_t half = physical_memory() / 2;
    return MemoryBudget(half == 0 ? default_limit : std::min(default_limit, half));
}

std::string MemoryBudget::refusal(std::uint64_t bytes, std::string_view what) const {
    if (none() || bytes <= limit_) return "";
    return fmt::format("{} needs about {}, more than the memory budget of {}; set {} to allow more", what, format_bytes(bytes),
                       format_bytes(limit_), environment_variable);
}

void MemoryBudget::check(std::uint64_t bytes, std::string_view what) const {
    if (std::string why = refusal(bytes, what); !why.empty()) throw InputError(why);
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

std::string RunLimits::why() const {
    if (time_up()) return "time limit";
    if (memory_up())
        return fmt::format("memory limit ({} resident, limit {})", format_bytes(resident_memory_recent()), format_bytes(memory.limit()));
    return "";
}

void RunLimits::check(std::string_view where) const {
    if (time_up()) throw LimitReached(fmt::format("time limit ({})", where));
    if (memory_up())
        throw LimitReached(fmt::format("memory limit ({}): {} resident, limit {}", where, format_bytes(resident_memory_recent()),
                                       format_bytes(memory.limit())));
}

void RunLimits::reserve(std::uint64_t bytes, std::string_view what) const {
    if (memory.none()) return;
    const std::uint64_t left = memory.left();
    if (bytes > left)
        throw LimitReached(fmt::format("memory limit: {} needs about {}, {} of the limit {} is left", what, format_bytes(bytes),
                                       format_bytes(left), format_bytes(memory.limit())));
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

std::string format_bytes(std::uint64_t bytes) {
    if (bytes == UINT64_MAX) return "more than 16 EiB";
    constexpr std::uint64_t KiB = 1024, MiB = KiB << 10, GiB = MiB << 10, TiB = GiB << 10;
    auto unit = [&](std::uint64_t u, const char* name) {
        if (bytes % u == 0) return fmt::format("{} {}", bytes / u, name);
        return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(u), name);
    };
    if (bytes >= TiB) return unit(TiB, "TiB");
    if (bytes >= GiB) return unit(GiB, "GiB");
    if (bytes >= MiB) return unit(MiB, "MiB");
    if (bytes >= KiB) return unit(KiB, "KiB");
    return fmt::format("{} bytes", bytes);
}

std::uint64_t parse_bytes(const std::string& text) {
    auto bad = [&] {
        return InputError(fmt::format("'{}' is not a size: expected a number with an optional unit (K, M, G, T or KiB, MiB, GiB, TiB: "
                                      "powers of 1024; kB, MB, GB, TB: powers of 1000), e.g. 4G, 512MiB, or a share of physical "
                                      "memory such as 50%",
                                      text));
    };
    if (text.ends_with('%')) {
        const std::string number = text.substr(0, text.size() - 1);
        if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos) throw bad();
        double v = 0;
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), v, std::chars_format::fixed);
        if (ec != std::errc{} || end != number.data() + number.size() || !(v >= 0) || v > 100) throw bad();
        return static_cast<std::uint64_t>(static_cast<double>(physical_memory()) * v / 100);
    }
    std::optional<double> v = support::parse_bytes(text);
    if (!v || *v >= 1.8e19) throw bad();
    return static_cast<std::uint64_t>(*v);
}

}  // namespace collsched
