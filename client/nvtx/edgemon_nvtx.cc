// libedgemon_nvtx.so: an NVTX v3 injection library. A process started with
// NVTX_INJECTION64_PATH pointing here (edgemon record --nvtx, or Python
// measure(nvtx=True)) loads it on its first NVTX call; InitializeInjectionNvtx2
// fills NVTX's callback tables with the functions below, which receive every
// range push/pop and start/end of every domain and thread.
//
// Each range is stamped on CLOCK_REALTIME (the clock the daemon's history is
// keyed on) at its push and its pop, and kept in a buffer of the thread that
// popped it; a full buffer, a thread's exit, the process's exit and
// edgemon_nvtx_flush() append the buffered ranges to the file named by
// EDGEMON_NVTX_OUT, one write per flush (O_APPEND, so several processes share
// one file). Nothing talks to the daemon: the file is read after the run.
//
// The file, one range per line, fields separated by tabs:
//   # edgemon-nvtx 1
//   KIND PID TID DEPTH START_NS END_NS DOMAIN NAME
// KIND is P (push/pop: DEPTH is the number of ranges open under it on its
// thread, 0 at the top) or S (start/end: DEPTH 0, TID the thread that
// ended it). DOMAIN is empty for NVTX's default domain. In DOMAIN and NAME
// a tab, a newline and a backslash are written \t, \n and \\. Ranges still
// open when the process exits are written with END_NS -1.
//
// Without EDGEMON_NVTX_OUT the library declines to attach (NVTX then stays a
// no-op in the process).
#define NVTX_NO_IMPL
#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

// NVTX's opaque handles: what this library hands out for domains and registered strings.
struct nvtxDomainRegistration_st {
  std::string name;
};
struct nvtxStringRegistration_st {
  std::string text;
};

namespace {

int g_fd = -1;  // the output file (opened once, at initialization)

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// UTF-8 of a wide string (NVTX's W functions).
std::string Utf8(const wchar_t* w) {
  std::string out;
  if (!w) return out;
  for (; *w; ++w) {
    auto c = static_cast<uint32_t>(*w);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x110000) {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::string Message(const nvtxEventAttributes_t* a) {
  if (!a) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return Utf8(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered ? a->message.registered->text : "";
    default:
      return {};
  }
}

void Escaped(std::string& out, const std::string& s) {
  for (char c : s) {
    if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out += c;
    }
  }
}

struct Range {
  char kind = 'P';  // 'P' or 'S'
  int depth = 0;
  int64_t start_ns = 0, end_ns = 0;
  const nvtxDomainRegistration_st* domain = nullptr;  // null: the default domain
  std::string name;
};

void WriteAll(const std::string& text) {
  if (g_fd < 0 || text.empty()) return;
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = write(g_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the file is gone or full: the ranges are lost, the process is not
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Number(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, ec == std::errc() ? end : buf);
}

void Append(std::string& out, const Range& r, long pid, long tid) {
  out += r.kind;
  out += '\t';
  Number(out, pid);
  out += '\t';
  Number(out, tid);
  out += '\t';
  Number(out, r.depth);
  out += '\t';
  Number(out, r.start_ns);
  out += '\t';
  Number(out, r.end_ns);
  out += '\t';
  if (r.domain) Escaped(out, r.domain->name);
  out += '\t';
  Escaped(out, r.name);
  out += '\n';
}

// Completed ranges flushed per thread in batches of this many.
constexpr size_t kBatch = 4096;

struct ThreadBuffer;
std::mutex g_threads_mu;
std::vector<ThreadBuffer*> g_threads;  // every live thread's buffer (for flush-all)

// One thread's open push/pop stack (per domain) and its completed ranges.
// The mutex is taken by its own thread on every range (uncontended) and by
// edgemon_nvtx_flush() from another thread.
struct ThreadBuffer {
  std::mutex mu;
  long tid = syscall(SYS_gettid);
  std::unordered_map<const nvtxDomainRegistration_st*, std::vector<Range>> open;
  std::vector<Range> done;

  ThreadBuffer() {
    done.reserve(256);
    std::lock_guard<std::mutex> l(g_threads_mu);
    g_threads.push_back(this);
  }
  ~ThreadBuffer() {
    {
      std::lock_guard<std::mutex> l(g_threads_mu);
      for (auto it = g_threads.begin(); it != g_threads.end(); ++it) {
        if (*it == this) {
          g_threads.erase(it);
          break;
        }
      }
    }
    std::lock_guard<std::mutex> l(mu);
    FlushLocked(true);
  }
  // Writes the completed ranges (and, at the thread's end, the open ones with END_NS -1).
  void FlushLocked(bool with_open) {
    std::string text;
    text.reserve(done.size() * 64);
    const long pid = getpid();
    for (const auto& r : done) Append(text, r, pid, tid);
    done.clear();
    if (with_open) {
      for (auto& [domain, stack] : open) {
        for (auto r : stack) {
          r.end_ns = -1;
          Append(text, r, pid, tid);
        }
      }
      open.clear();
    }
    WriteAll(text);
  }
};

ThreadBuffer& Buffer() {
  thread_local ThreadBuffer buffer;
  return buffer;
}

int Push(const nvtxDomainRegistration_st* domain, std::string name) {
  const int64_t t = Now();
  ThreadBuffer& b = Buffer();
  std::lock_guard<std::mutex> l(b.mu);
  auto& stack = b.open[domain];
  const int depth = static_cast<int>(stack.size());
  stack.push_back({'P', depth, t, 0, domain, std::move(name)});
  return depth;
}

int Pop(const nvtxDomainRegistration_st* domain) {
  const int64_t t = Now();
  ThreadBuffer& b = Buffer();
  std::lock_guard<std::mutex> l(b.mu);
  auto it = b.open.find(domain);
  if (it == b.open.end() || it->second.empty()) return -2;  // NVTX's "no range open"
  Range r = std::move(it->second.back());
  it->second.pop_back();
  r.end_ns = t;
  b.done.push_back(std::move(r));
  if (b.done.size() >= kBatch) b.FlushLocked(false);
  return static_cast<int>(it->second.size());
}

// Start/end ranges may end on another thread: kept in one map by id.
std::mutex g_started_mu;
std::unordered_map<nvtxRangeId_t, Range> g_started;
std::atomic<nvtxRangeId_t> g_next_id{1};

nvtxRangeId_t Start(const nvtxDomainRegistration_st* domain, std::string name) {
  const int64_t t = Now();
  const nvtxRangeId_t id = g_next_id.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(g_started_mu);
  g_started.emplace(id, Range{'S', 0, t, 0, domain, std::move(name)});
  return id;
}

void End(nvtxRangeId_t id) {
  const int64_t t = Now();
  Range r;
  {
    std::lock_guard<std::mutex> l(g_started_mu);
    auto it = g_started.find(id);
    if (it == g_started.end()) return;
    r = std::move(it->second);
    g_started.erase(it);
  }
  r.end_ns = t;
  ThreadBuffer& b = Buffer();
  std::lock_guard<std::mutex> l(b.mu);
  b.done.push_back(std::move(r));
  if (b.done.size() >= kBatch) b.FlushLocked(false);
}

// The NVTX entry points.
int NVTX_API PushA(const char* m) {
  return Push(nullptr, m ? m : "");
}
int NVTX_API PushW(const wchar_t* m) {
  return Push(nullptr, Utf8(m));
}
int NVTX_API PushEx(const nvtxEventAttributes_t* a) {
  return Push(nullptr, Message(a));
}
int NVTX_API PopCore() {
  return Pop(nullptr);
}
nvtxRangeId_t NVTX_API StartA(const char* m) {
  return Start(nullptr, m ? m : "");
}
nvtxRangeId_t NVTX_API StartW(const wchar_t* m) {
  return Start(nullptr, Utf8(m));
}
nvtxRangeId_t NVTX_API StartEx(const nvtxEventAttributes_t* a) {
  return Start(nullptr, Message(a));
}
void NVTX_API EndCore(nvtxRangeId_t id) {
  End(id);
}
int NVTX_API DomainPush(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Push(d, Message(a));
}
int NVTX_API DomainPop(nvtxDomainHandle_t d) {
  return Pop(d);
}
nvtxRangeId_t NVTX_API DomainStart(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return Start(d, Message(a));
}
void NVTX_API DomainEnd(nvtxDomainHandle_t, nvtxRangeId_t id) {
  End(id);
}
// Domains and registered strings live as long as the process (NVTX allows a
// range to be popped after its domain is destroyed; its name must survive),
// held by one list that is never freed (so never reported as leaked).
template <typename T>
T* Keep(T* made) {
  static std::mutex mu;
  static auto* kept = new std::vector<void*>();
  std::lock_guard<std::mutex> l(mu);
  kept->push_back(made);
  return made;
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  return Keep(new nvtxDomainRegistration_st{name ? name : ""});
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  return Keep(new nvtxDomainRegistration_st{Utf8(name)});
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API RegisterStringA(nvtxDomainHandle_t, const char* s) {
  return Keep(new nvtxStringRegistration_st{s ? s : ""});
}
nvtxStringHandle_t NVTX_API RegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  return Keep(new nvtxStringRegistration_st{Utf8(s)});
}

template <typename F>
void Set(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (table && id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

void FlushAll() {
  std::lock_guard<std::mutex> l(g_threads_mu);  // held: no buffer goes away meanwhile
  for (ThreadBuffer* b : g_threads) {
    std::lock_guard<std::mutex> bl(b->mu);
    b->FlushLocked(false);
  }
}

}  // namespace

extern "C" {

// Writes every thread's completed ranges to the file now (Python's
// measure(nvtx=True) calls it through ctypes before it reads the file).
__attribute__((visibility("default"))) void edgemon_nvtx_flush() {
  FlushAll();
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* out = std::getenv("EDGEMON_NVTX_OUT");
  if (!out || !*out || !get_export_table) return 0;
  g_fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (g_fd < 0) return 0;
  auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (!callbacks || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      !callbacks->GetModuleFunctionTable) {
    return 0;
  }
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) ||
      !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size)) {
    return 0;
  }
  Set(core, core_size, NVTX_CBID_CORE_RangePushA, PushA);
  Set(core, core_size, NVTX_CBID_CORE_RangePushW, PushW);
  Set(core, core_size, NVTX_CBID_CORE_RangePushEx, PushEx);
  Set(core, core_size, NVTX_CBID_CORE_RangePop, PopCore);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartA, StartA);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartW, StartW);
  Set(core, core_size, NVTX_CBID_CORE_RangeStartEx, StartEx);
  Set(core, core_size, NVTX_CBID_CORE_RangeEnd, EndCore);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainPush);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainPop);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainStart);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainEnd);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, RegisterStringA);
  Set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, RegisterStringW);
  WriteAll("# edgemon-nvtx 1\n");
  return 1;
}

}  // extern "C"
