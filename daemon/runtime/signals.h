// The stop/reload signals of a daemon's main thread, taken from a signalfd:
// blocked in every thread (call before starting any), read on the main loop.
#pragma once

#include <initializer_list>
#include <string>

#include "edgemon/status.h"

namespace edgemon::runtime {

// Blocks `signals` for this thread and every thread it starts, and returns a
// signalfd (CLOEXEC) delivering them, else an error in one line.
Result<int> OpenSignalFd(std::initializer_list<int> signals);

}  // namespace edgemon::runtime
