/** \file
 * Calibration of an executor model on measured times (`collsched calibrate`, docs/time.md
 * "Calibration"): collsched's llvm-exegesis. Each measurement is a collective NCCL ran on a
 * machine at a size (nccl-tests' rows, published or the user's); collsched builds the table of
 * the algorithm NCCL ran with its protocol (the ones the row names; else the ones NCCL's own tuner
 * picks by its model among those the run allowed: ring, tree, NVLS, NVLS_TREE; with a tuner plugin,
 * the one a training row's time is nearest, a held-out row its neighbours' picks), NCCL's tree in Simple in NCCL's chunks (NCCL_BUFFSIZE / 8), times it under the executor model, and fits the model's
 * constants so that the predicted times meet the measured ones.
 *
 * The fit: the constants x = (launch per protocol, 1 / efficiency per link class, an extra network
 * hop, a factor on the messages, 1 / Simple's rate a connection) enter a table's asynchronous time as the maximum over its chains of sums, so the time is
 * convex and piecewise linear in x. Each round linearizes every training row's time at the current
 * x (the exact slope of its active piece, by difference), and a linear program (GLPK's simplex)
 * minimizes the sum of relative errors |T_r(x) - m_r| / m_r within a trust region and the
 * constants' ranges; a round that does not lower the true error halves the region. The rows are
 * split into a training and a held-out set (every other size of each series); the report gives
 * every row's error under the built-in and the fitted constants, and NCCL's own model's error
 * on the same row.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/table/send_table.hpp"
#include "runtime/executor/executor.hpp"
#include "support/budget.hpp"

namespace collsched {

/// One measured run: what ran, where, and how long it took.
struct CalibrationCase {
    std::string label;                      ///< how the report names it ("row 12", "all_reduce_perf 1 GiB")
    std::string series;                     ///< rows of one sweep (the held-out split alternates within it)
    std::shared_ptr<const Topology> topology;
    CollectiveKind collective = CollectiveKind::allreduce;
    double size = 0;                        ///< NCCL's size (nccl-tests' "size" column)
    double measured = 0;                    ///< seconds
    std::string algorithm = "default";      ///< ring, tree, nvls, nvls_tree, or default (NCCL's model picks)
    Protocol protocol = Protocol::none;     ///< none: NCCL's model picks
    std::vector<Protocol> protocols;        ///< with none: the protocols NCCL's model picks from (NCCL_PROTO's list; empty: all)
    std::vector<std::string> algorithms;    ///< with "default": the algorithms allowed (NCCL_ALGO's list; empty: all of NCCL's)
    /// NCCL_TUNER_PLUGIN was set: a tuner tuned on the machine's measured times picked among the allowed variants (its
    /// table is not published): a training row is predicted as the variant nearest its measured time, a held-out row as
    /// the training rows of the next smaller and larger sizes where they agree, else at the geometric mean of both picks
    bool tuner_plugin = false;
    /// The NCCL that ran it ("2.18.5": measurements.csv's `version`, an nccl-tests log's); its NVLS on one box is timed
    /// in that version's channel layout where it is modelled (nccl_nvls_layout), else at the fastest of its piece counts
    std::string nccl_version;
    /// NCCL_BUFFSIZE, bytes (NVIDIA/nccl v2.21.5-1 src/init.cc:544 DEFAULT_BUFFSIZE 4 MiB): a Simple step is an eighth of
    /// it, the chunk NCCL's tree forwards hop by hop (its table is built in those chunks)
    double buffsize = 4194304;
};

/// One case as collsched ran it, and the errors.
struct CalibrationResult {
    std::string label, series;
    std::string algorithm;       ///< the algorithm timed (NCCL's pick for "default")
    Protocol protocol = Protocol::simple;
    std::string layout;          ///< NCCL's NVLS layout it was timed in ("NCCL 2.18 layout: 1 channel x 8 chunks"), else empty
    double size = 0, measured = 0;
    bool train = false;
    double builtin = 0;          ///< predicted under the built-in constants
    double fitted = 0;           ///< under the fitted ones
    std::optional<double> nccl_model;  ///< NCCL's own tuning model's time of what its tuner picks (the row's prediction unless a plugin tuned)
    std::string skipped;         ///< why the case was left out (no table for it here), else empty
};

struct CalibrationReport {
    ExecutorModel model;                 ///< the calibrated model
    Calibration calibration;             ///< its constants, as the file writes them
    std::vector<CalibrationResult> rows;
    std::uint32_t rounds = 0;
    /// The time limit ended the fit before it converged: the constants are the best so far (calibrate exits 3).
    bool cut = false;
    /// Relative errors |predicted - measured| / measured over the held-out rows that ran.
    double heldout_median = 0, heldout_worst = 0;
    double nccl_median = 0, nccl_worst = 0;  ///< NCCL's model on the same held-out rows (those it times)
    double builtin_median = 0;               ///< the built-in constants on them
};

struct CalibrationOptions {
    ExecutorKind executor = ExecutorKind::nccl;
    std::string machine;       ///< named in the calibration
    std::string fitted_on;     ///< the measurements, named in the calibration
    bool hold_out = true;      ///< every other size of a series held out (false: fit on every row)
    Deadline deadline;
};

/// Builds each case's table, fits the constants, reports. InputError when no case can be timed.
CalibrationReport calibrate(const std::vector<CalibrationCase>&, const CalibrationOptions&);

/// The report as text: the constants, then per row measured, predicted (built-in, fitted), NCCL's
/// model, and the errors; held-out rows marked.
std::string calibration_text(const CalibrationReport&);

}  // namespace collsched
