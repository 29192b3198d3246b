/* A C program annotated with NVTX v3 ranges, run by record_e2e.py under
 * `edgemon record --nvtx`: inside a range "model" of the domain "app" it
 * pushes "preprocess" (0.2 s) and "infer" (0.5 s, three times), and a second
 * thread starts and ends a range "load" (0.1 s). Each range's own stamps
 * (CLOCK_REALTIME around the NVTX calls) go to stdout, one line each:
 * "NAME START_NS END_NS". */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void range(const char* name, double seconds) {
  int64_t start = now_ns();
  nvtxRangePushA(name);
  sleep_s(seconds);
  nvtxRangePop();
  int64_t end = now_ns();
  printf("%s %lld %lld\n", name, (long long)start, (long long)end);
}

static void* loader(void* arg) {
  (void)arg;
  int64_t start = now_ns();
  nvtxRangeId_t id = nvtxRangeStartA("load");
  sleep_s(0.1);
  nvtxRangeEnd(id);
  int64_t end = now_ns();
  printf("load %lld %lld\n", (long long)start, (long long)end);
  return NULL;
}

#ifdef NVTX_RANGES_LIBRARY
__attribute__((visibility("default"))) int nvtx_ranges_run(void);
int nvtx_ranges_run(void) {
#else
int main(void) {
#endif
  nvtxDomainHandle_t app = nvtxDomainCreateA("app");
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = nvtxDomainRegisterStringA(app, "model");
  int64_t start = now_ns();
  nvtxDomainRangePushEx(app, &a);
  pthread_t t;
  pthread_create(&t, NULL, loader, NULL);
  pthread_join(t, NULL);
  range("preprocess", 0.2);
  for (int i = 0; i < 3; ++i) range("infer", 0.5);
  nvtxDomainRangePop(app);
  int64_t end = now_ns();
  printf("model %lld %lld\n", (long long)start, (long long)end);
  fflush(stdout);
  return 0;
}
