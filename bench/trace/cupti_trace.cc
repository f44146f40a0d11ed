// prefixd_cupti_trace: a device timeline of any CUDA process, for the GPU machines, which have no
// Nsight Systems. Loaded by the CUDA driver through its injection hook:
//
//   CUDA_INJECTION64_PATH=<build>/bench/libprefixd_cupti_trace.so PREFIXD_TRACE_DIR=/tmp/trace <program>
//
// It records every kernel (concurrent kernel mode, so nothing is serialised), memcpy and memset
// through CUPTI's activity API, with the time each kernel was queued and submitted, and writes
// them at exit to PREFIXD_TRACE_DIR/trace.<pid>.csv (one row per activity, times in ns):
//
//   kind,device,stream,start,end,queued,submitted,grid,block,bytes,name
//
// bench/trace/timeline.py reads those files. Only a measurement tool: nothing in prefixd links it.
#include <cupti.h>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

constexpr size_t kBufferBytes = 8 << 20;

std::mutex g_mutex;
std::vector<std::string> g_rows;  // formatted CSV rows, appended as CUPTI hands buffers back
bool g_failed = false;

void Check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "prefixd_cupti_trace: %s failed: %s\n", what, msg ? msg : "?");
  g_failed = true;
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

const char* CopyKind(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "other";
  }
}

// Kernel names come mangled; the table is for people.
std::string Demangle(const char* name) {
  if (name == nullptr) return "?";
  int status = 0;
  char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : name;
  std::free(plain);
  for (char& c : out)
    if (c == ',') c = ';';  // a CSV field
  return out;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<std::string> rows;
  CUpti_Activity* record = nullptr;
  char line[4096];
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      std::snprintf(line, sizeof line, "kernel,%u,%u,%llu,%llu,%llu,%llu,%d,%d,0,%s", k->deviceId, k->streamId,
                    (unsigned long long)k->start, (unsigned long long)k->end, (unsigned long long)k->queued,
                    (unsigned long long)k->submitted, k->gridX * k->gridY * k->gridZ, k->blockX * k->blockY * k->blockZ,
                    Demangle(k->name).c_str());
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      std::snprintf(line, sizeof line, "memcpy,%u,%u,%llu,%llu,0,0,0,0,%llu,%s", m->deviceId, m->streamId,
                    (unsigned long long)m->start, (unsigned long long)m->end, (unsigned long long)m->bytes,
                    CopyKind(m->copyKind));
    } else if (record->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      std::snprintf(line, sizeof line, "memset,%u,%u,%llu,%llu,0,0,0,0,%llu,memset", m->deviceId, m->streamId,
                    (unsigned long long)m->start, (unsigned long long)m->end, (unsigned long long)m->bytes);
    } else {
      continue;
    }
    rows.emplace_back(line);
  }
  size_t dropped = 0;
  cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
  if (dropped) std::fprintf(stderr, "prefixd_cupti_trace: %zu records dropped\n", dropped);
  std::free(buffer);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_rows.insert(g_rows.end(), rows.begin(), rows.end());
}

void WriteTrace() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char* dir = std::getenv("PREFIXD_TRACE_DIR");
  const std::string path = std::string(dir && *dir ? dir : ".") + "/trace." + std::to_string(getpid()) + ".csv";
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "prefixd_cupti_trace: cannot write %s\n", path.c_str());
    return;
  }
  std::fprintf(f, "kind,device,stream,start,end,queued,submitted,grid,block,bytes,name\n");
  std::lock_guard<std::mutex> lock(g_mutex);
  for (const std::string& row : g_rows) std::fprintf(f, "%s\n", row.c_str());
  std::fclose(f);
  std::fprintf(stderr, "prefixd_cupti_trace: %zu activities -> %s%s\n", g_rows.size(), path.c_str(),
               g_failed ? " (some CUPTI calls failed, see above)" : "");
}

}  // namespace

// The CUDA driver calls this once, when it loads the library named by CUDA_INJECTION64_PATH.
extern "C" int InitializeInjection(void) {
  Check(cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted), "cuptiActivityRegisterCallbacks");
  Check(cuptiActivityEnableLatencyTimestamps(1), "cuptiActivityEnableLatencyTimestamps");
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernels");
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable memcpy");
  Check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enable memset");
  std::atexit(WriteTrace);
  return 1;
}
