// Stand-in (collsched): the parser includes "debug.h" but uses none of it.
#pragma once
