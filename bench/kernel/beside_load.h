// A synthetic load on SMs beside the timed work (prefixd_kernel_bench --beside): to ask why the
// concurrent step's prefix kernel runs slower beside the decode on the other SMs than alone
// (~15 µs of 240 at 32/8 B256 P32768 S256; bench/RESULTS.md sessions 48-49 and 55). The loads
// separate the candidate causes: an idle neighbour (kSpin), compute power without memory traffic
// (kFma), HBM traffic like the decode's (kDram: streaming reads that do not stay in L2) and L2
// traffic without HBM (kL2: rereads of a 16 MiB buffer). kNone runs the same start/stop operations
// with no kernel, the calibration of what they add to the timed region.
// Built only with the CUDA backend (beside_load.cu), like bench_cuda.h.
#pragma once

#include <cstdint>
#include <string>

namespace prefixd::bench {

enum class BesideLoad { kNone, kSpin, kFma, kDram, kL2 };
const char* BesideLoadName(BesideLoad load);
BesideLoad ParseBesideLoad(const std::string& name);  // none|spin|fma|dram|l2, else kInvalidArgument

// `ctas` CTAs that each hold a whole SM (all of its shared memory), so that the timed kernel's
// persistent grid of SMs − ctas CTAs gets the other SMs. Start queues the load on a second stream
// after what `stream` has queued; Stop queues on `stream` the release of the load (a one-thread
// kernel that raises a flag the load polls) and a wait for its end, so that nothing of it runs
// into the next timed region. A load that is never stopped ends by itself after 50 ms.
class BesideRunner {
 public:
  explicit BesideRunner(int ctas);
  ~BesideRunner();
  BesideRunner(const BesideRunner&) = delete;
  BesideRunner& operator=(const BesideRunner&) = delete;
  void Start(void* stream, BesideLoad load);
  void Stop(void* stream);
  // The SM clock over every run of `load` so far (MHz; 0 for kNone or a load never run):
  // synchronizes with the load's stream.
  double MeanClockMhz(BesideLoad load) const;

 private:
  int ctas_;
  int smem_bytes_ = 0;  // a whole SM's shared memory, asked by each CTA of the load
  uint32_t generation_ = 0;
  void* side_ = nullptr;     // cudaStream_t
  void* started_ = nullptr;  // cudaEvent_t: what `stream` queued before the load
  void* ended_ = nullptr;    // cudaEvent_t: the load's end
  uint32_t* flag_ = nullptr;
  void* dram_ = nullptr;  // 2 GiB, streamed (larger than L2 ×30)
  void* l2_ = nullptr;    // 16 MiB, reread
  void* sink_ = nullptr;
  static constexpr int kClockWords = 2 * 5;  // (cycles, ns) per BesideLoad
  unsigned long long* clocks_ = nullptr;
};

}  // namespace prefixd::bench
