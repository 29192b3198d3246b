// The only part of edgetop that knows ncurses: opens the terminal, draws a
// view-model Screen with a dumb loop over its spans, reads keys, and puts the
// terminal back however edgetop ends (normal exit, SIGINT/SIGTERM/SIGHUP
// through the app's loop, or a crash: SIGSEGV/SIGABRT/SIGBUS/SIGFPE/SIGILL
// restore the terminal from the handler, then re-raise).
//
// Thread safety: main thread only (the crash handler is async-signal-safe).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "edgemon/status.h"
#include "tui/view_model.h"

namespace edgemon::tui {

class Terminal {
 public:
  struct Options {
    bool color = true;  // false: monochrome attributes only
  };

  // Takes over the terminal on stdin/stdout (alternate screen, no echo, keypad).
  // FAILED_PRECONDITION when stdin or stdout is not a terminal or TERM is
  // unknown, UNAVAILABLE when the terminal's settings cannot be read.
  static Result<std::unique_ptr<Terminal>> Open(const Options& options);
  ~Terminal();  // restores the terminal (endwin)
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int width() const;
  int height() const;
  bool color() const { return color_; }

  void Draw(const Screen& screen);
  // Every key waiting on stdin, as view-model key codes (keys.h);
  // *resized is set when the terminal changed size.
  std::vector<int> ReadKeys(bool* resized);

 private:
  explicit Terminal(bool color) : color_(color) {}
  bool color_;
};

}  // namespace edgemon::tui
