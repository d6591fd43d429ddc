// Stand-in (collsched): everything the parser needs is in core.hpp.
#pragma once
#include <mscclpp/core.hpp>
