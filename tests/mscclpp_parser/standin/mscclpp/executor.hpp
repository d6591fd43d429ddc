// Stand-in (collsched's own) for <mscclpp/executor.hpp>: the ExecutionPlan class whose members
// execution_plan.cc defines, with its Impl reachable from the test driver.
#pragma once

#include <memory>
#include <string>

#include <mscclpp/core.hpp>

namespace mscclpp {

class ExecutionPlan {
public:
    ExecutionPlan(const std::string& planPath, int rank);
    const std::string& name() const;
    const std::string& collective() const;
    size_t minMessageSize() const;
    size_t maxMessageSize() const;
    bool isInPlace() const;

    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace mscclpp
