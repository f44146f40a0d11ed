#include "prefixd/worker/step_plan.h"

#include "prefixd/common/error.h"

namespace prefixd::worker {
namespace {

constexpr int32_t kMagic = 0x50445350;  // "PDSP": prefixd step plan
constexpr int32_t kVersion = 1;

class Writer {
 public:
  void Put(int32_t x) { out_.push_back(x); }
  void Put64(int64_t x) {
    Put(int32_t(uint32_t(uint64_t(x) & 0xffffffffu)));
    Put(int32_t(uint32_t(uint64_t(x) >> 32)));
  }
  void PutVector(const std::vector<int32_t>& v) {
    Put(int32_t(v.size()));
    out_.insert(out_.end(), v.begin(), v.end());
  }
  std::vector<int32_t> Take() { return std::move(out_); }

 private:
  std::vector<int32_t> out_;
};

class Reader {
 public:
  explicit Reader(const std::vector<int32_t>& data) : data_(data) {}
  int32_t Get() {
    PREFIXD_CHECK_ARG(pos_ < data_.size(), "step plan: truncated at int " << pos_ << " of " << data_.size());
    return data_[pos_++];
  }
  int64_t Get64() {
    const uint64_t lo = uint32_t(Get()), hi = uint32_t(Get());
    return int64_t(lo | (hi << 32));
  }
  int32_t GetCount(const char* what) {
    const int32_t n = Get();
    PREFIXD_CHECK_ARG(n >= 0 && size_t(n) <= data_.size() - pos_,
                      "step plan: " << what << " count " << n << " at int " << pos_ - 1 << " exceeds the buffer");
    return n;
  }
  std::vector<int32_t> GetVector(const char* what) {
    const int32_t n = GetCount(what);
    std::vector<int32_t> v(data_.begin() + pos_, data_.begin() + pos_ + n);
    pos_ += n;
    return v;
  }
  bool done() const { return pos_ == data_.size(); }

 private:
  const std::vector<int32_t>& data_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<int32_t> StepPlan::Serialize() const {
  Writer w;
  w.Put(kMagic);
  w.Put(kVersion);
  w.Put64(step);
  w.Put(int32_t(events.size()));
  for (const PlanEvent& e : events) {
    w.Put(int32_t(e.kind));
    switch (e.kind) {
      case EventKind::kAddPrefix:
        w.Put(e.prefix.prefix_id);
        w.PutVector(e.prefix.tokens);
        w.Put(int32_t(e.prefix.shards.size()));
        for (const ShardPlacement& s : e.prefix.shards) {
          w.Put(s.rank);
          w.Put(s.pos_begin);
          w.Put(s.num_tokens);
          w.Put(s.first_page);
        }
        break;
      case EventKind::kAddRequest:
        w.Put(e.request.request_id);
        w.Put(e.request.prefix_id);
        w.Put(e.request.owner);
        w.PutVector(e.request.tokens);
        w.PutVector(e.request.pages);
        break;
      case EventKind::kRemoveRequest:
      case EventKind::kRemovePrefix:
        w.Put(e.id);
        break;
    }
  }
  w.Put(int32_t(decode.size()));
  for (const DecodeEntry& d : decode) {
    w.Put(d.request_id);
    w.Put(d.token);
  }
  return w.Take();
}

StepPlan StepPlan::Deserialize(const std::vector<int32_t>& data) {
  Reader r(data);
  PREFIXD_CHECK_ARG(r.Get() == kMagic, "step plan: bad magic");
  const int32_t version = r.Get();
  PREFIXD_CHECK_ARG(version == kVersion, "step plan: version " << version << ", expected " << kVersion);
  StepPlan plan;
  plan.step = r.Get64();
  const int32_t num_events = r.GetCount("event");
  plan.events.resize(num_events);
  for (int32_t i = 0; i < num_events; ++i) {
    PlanEvent& e = plan.events[i];
    const int32_t kind = r.Get();
    e.kind = EventKind(kind);
    switch (e.kind) {
      case EventKind::kAddPrefix: {
        e.prefix.prefix_id = e.id = r.Get();
        e.prefix.tokens = r.GetVector("prefix token");
        const int32_t num_shards = r.GetCount("shard");
        e.prefix.shards.resize(num_shards);
        for (ShardPlacement& s : e.prefix.shards) {
          s.rank = r.Get();
          s.pos_begin = r.Get();
          s.num_tokens = r.Get();
          s.first_page = r.Get();
        }
        break;
      }
      case EventKind::kAddRequest:
        e.request.request_id = e.id = r.Get();
        e.request.prefix_id = r.Get();
        e.request.owner = r.Get();
        e.request.tokens = r.GetVector("request token");
        e.request.pages = r.GetVector("request page");
        break;
      case EventKind::kRemoveRequest:
      case EventKind::kRemovePrefix:
        e.id = r.Get();
        break;
      default:
        PREFIXD_THROW(ErrorKind::kInvalidArgument, "step plan: event " << i << " has unknown kind " << kind);
    }
  }
  const int32_t num_decode = r.GetCount("decode entry");
  plan.decode.resize(num_decode);
  for (DecodeEntry& d : plan.decode) {
    d.request_id = r.Get();
    d.token = r.Get();
  }
  PREFIXD_CHECK_ARG(r.done(), "step plan: trailing data after " << num_decode << " decode entries");
  return plan;
}

}  // namespace prefixd::worker
