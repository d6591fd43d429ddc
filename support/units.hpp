/** \file
 * Quantities with units, as graph files and the command line write link speeds and buffer sizes
 * (docs/formats.md, "Units"): a latency `1.5 us`, a bandwidth `25 GB/s` or `200 Gbit/s`, a size
 * `1M` or `4 KiB`. One grammar for all three, NUMBER [spaces] UNIT, where NUMBER is a decimal
 * with an optional fraction and exponent; the unit decides the scale. Values come back in
 * seconds, bytes per second and bytes. A parse either gives a finite value or says what was
 * expected; nothing is guessed (a bandwidth needs its `/s`, a time its unit).
 */
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace collsched::support {

/// A time: `s`, `ms`, `us` (also `µs`), `ns`, `ps`. `1.5 us` is 1.5e-6. Must be >= 0.
std::optional<double> parse_seconds(std::string_view text, std::string* why = nullptr);
/// A bandwidth in bytes per second: `B/s`, `kB/s`, `KB/s`, `MB/s`, `GB/s`, `TB/s` (powers of
/// 1000), `KiB/s`, `MiB/s`, `GiB/s`, `TiB/s` (powers of 1024), and bits: `bit/s`, `kbit/s`,
/// `Mbit/s`, `Gbit/s`, `Tbit/s`, also written `b/s`, `kb/s`, `Mb/s`, `Gb/s`, `Tb/s` (a lower-case
/// b is a bit, an upper-case B a byte). Must be > 0.
std::optional<double> parse_bandwidth(std::string_view text, std::string* why = nullptr);
/// A size in bytes: a bare number, or `B`; `K`, `M`, `G`, `T` and `KiB`, `MiB`, `GiB`, `TiB` are
/// powers of 1024 (as nccl-tests reads -b 1K -e 1G); `kB`, `KB`, `MB`, `GB`, `TB` powers of 1000.
/// Must be >= 0.
std::optional<double> parse_bytes(std::string_view text, std::string* why = nullptr);

/// `1.5 us`, `230 ns`, `12.3 ms`, `2.05 s`: three significant digits, the largest unit that
/// keeps the number at least 1.
std::string format_seconds(double seconds);
/// `25 GB/s`, `1.56 TB/s` (powers of 1000).
std::string format_bandwidth(double bytes_per_second);
/// `1 KiB`, `256 MiB`, `1 GiB`, `768 B` (powers of 1024, as the size grids use).
std::string format_bytes(double bytes);

}  // namespace collsched::support
