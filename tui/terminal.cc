#include "tui/terminal.h"

#include <curses.h>
#include <signal.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace edgemon::tui {

namespace {

// ------------------------------------------------------- crash-path restore

// What the crash handler writes: copied at Open() so the handler only calls
// async-signal-safe functions (tcsetattr, write, raise).
struct CrashRestore {
  bool armed = false;
  termios saved{};
  char sequence[256] = {};
  size_t length = 0;
};
CrashRestore g_restore;

void Append(const char* cap) {
  if (cap == nullptr || cap == reinterpret_cast<const char*>(-1)) return;
  size_t n = std::strlen(cap);
  if (g_restore.length + n >= sizeof(g_restore.sequence)) return;
  std::memcpy(g_restore.sequence + g_restore.length, cap, n);
  g_restore.length += n;
}

void OnCrash(int sig) {
  if (g_restore.armed) {
    g_restore.armed = false;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &g_restore.saved);
    ssize_t ignored = ::write(STDOUT_FILENO, g_restore.sequence, g_restore.length);
    (void)ignored;
  }
  // SA_RESETHAND made the disposition default again: die of the same signal.
  ::raise(sig);
}

constexpr std::array<int, 5> kCrashSignals = {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL};

void InstallCrashHandlers() {
  for (int sig : kCrashSignals) {
    struct sigaction sa {};
    sa.sa_handler = OnCrash;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(sig, &sa, nullptr);
  }
}

// ------------------------------------------------------------------ colours

struct Style {
  short fg;      // -1 = terminal default
  attr_t color;  // attributes with colour
  attr_t mono;   // attributes without colour
};

Style StyleOf(Role role) {
  switch (role) {
    case Role::kText:
      return {-1, A_NORMAL, A_NORMAL};
    case Role::kDim:
      return {-1, A_DIM, A_DIM};
    case Role::kTitle:
      return {COLOR_CYAN, A_BOLD, A_BOLD};
    case Role::kHeader:
      return {-1, A_BOLD, A_BOLD};
    case Role::kTab:
      return {-1, A_NORMAL, A_NORMAL};
    case Role::kTabActive:
      return {COLOR_CYAN, A_REVERSE | A_BOLD, A_REVERSE | A_BOLD};
    case Role::kGood:
      return {COLOR_GREEN, A_NORMAL, A_NORMAL};
    case Role::kWarn:
      return {COLOR_YELLOW, A_NORMAL, A_UNDERLINE};
    case Role::kHot:
      return {COLOR_RED, A_BOLD, A_BOLD};
    case Role::kCrit:
      return {COLOR_RED, A_REVERSE | A_BOLD, A_REVERSE | A_BOLD};
    case Role::kAlert:
      return {COLOR_RED, A_REVERSE | A_BOLD, A_REVERSE | A_BOLD};
    case Role::kBarLow:
      return {COLOR_GREEN, A_NORMAL, A_NORMAL};
    case Role::kBarMid:
      return {COLOR_YELLOW, A_NORMAL, A_NORMAL};
    case Role::kBarHigh:
      return {COLOR_RED, A_NORMAL, A_BOLD};
    case Role::kSpark:
      return {COLOR_CYAN, A_NORMAL, A_NORMAL};
    case Role::kSelected:
      return {-1, A_REVERSE, A_REVERSE};
  }
  return {-1, A_NORMAL, A_NORMAL};
}

int KeyCode(int ch) {
  switch (ch) {
    case KEY_UP:
      return kKeyUp;
    case KEY_DOWN:
      return kKeyDown;
    case KEY_PPAGE:
      return kKeyPageUp;
    case KEY_NPAGE:
      return kKeyPageDown;
    case KEY_HOME:
      return kKeyHome;
    case KEY_END:
      return kKeyEnd;
    case KEY_BTAB:
      return kKeyBackTab;
    default:
      return ch >= 0 && ch < 256 ? ch : -1;
  }
}

}  // namespace

Result<std::unique_ptr<Terminal>> Terminal::Open(const Options& options) {
  if (!::isatty(STDIN_FILENO) || !::isatty(STDOUT_FILENO)) {
    return Status::FailedPrecondition("stdin and stdout must be a terminal");
  }
  if (::tcgetattr(STDIN_FILENO, &g_restore.saved) != 0) {
    return Status::Unavailable("cannot read the terminal's settings");
  }
  // newterm, not initscr: an unknown TERM is an error here, not an exit().
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    const char* term = std::getenv("TERM");
    return Status::FailedPrecondition(std::string("cannot use the terminal type \"") +
                                      (term ? term : "") + "\"");
  }
  set_term(screen);
  // The crash path: leave the alternate screen, show the cursor, plain
  // attributes, keypad off.
  g_restore.length = 0;
  Append(tigetstr(const_cast<char*>("sgr0")));
  Append(tigetstr(const_cast<char*>("cnorm")));
  Append(tigetstr(const_cast<char*>("rmkx")));
  Append(tigetstr(const_cast<char*>("rmcup")));
  g_restore.armed = true;
  InstallCrashHandlers();

  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  set_escdelay(25);
  curs_set(0);
  bool color = options.color && has_colors();
  if (color) {
    start_color();
    use_default_colors();
    for (int r = 0; r < kRoleCount; ++r) {
      Style s = StyleOf(static_cast<Role>(r));
      init_pair(static_cast<short>(r + 1), s.fg, -1);
    }
  }
  return std::unique_ptr<Terminal>(new Terminal(color));
}

Terminal::~Terminal() {
  curs_set(1);
  endwin();
  g_restore.armed = false;
  std::fflush(stdout);
}

int Terminal::width() const {
  return COLS;
}

int Terminal::height() const {
  return LINES;
}

void Terminal::Draw(const Screen& screen) {
  erase();
  for (const Span& s : screen.spans) {
    Style st = StyleOf(s.role);
    if (color_) {
      attrset(st.color | COLOR_PAIR(static_cast<int>(s.role) + 1));
    } else {
      attrset(st.mono);
    }
    mvaddstr(s.row, s.col, s.text.c_str());
  }
  attrset(A_NORMAL);
  refresh();
}

std::vector<int> Terminal::ReadKeys(bool* resized) {
  std::vector<int> keys;
  for (int ch = getch(); ch != ERR; ch = getch()) {
    if (ch == KEY_RESIZE) {
      *resized = true;
      continue;
    }
    int k = KeyCode(ch);
    if (k >= 0) keys.push_back(k);
  }
  return keys;
}

}  // namespace edgemon::tui
