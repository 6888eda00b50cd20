#include "tests/unit/kernel_records.h"

namespace fabtrace {
namespace test {

std::vector<uint16_t> known_kinds() {
  std::vector<uint16_t> k;
  for (uint16_t i = 1; i < FT_EV_KINDS; ++i) k.push_back(i);
  return k;
}

ft_hdr make_hdr(uint16_t kind, uint16_t size, uint64_t ts, uint32_t cpu, uint32_t pid,
                uint32_t tid) {
  ft_hdr h{};
  h.ts = ts;
  h.kind = kind;
  h.size = size;
  h.cpu = cpu;
  h.pid = pid;
  h.tid = tid;
  return h;
}

void set_record_size(Bytes* rec, uint16_t size) {
  ft_hdr h;
  std::memcpy(&h, rec->data(), sizeof(h));
  h.size = size;
  std::memcpy(rec->data(), &h, sizeof(h));
}

Bytes patterned_record(uint16_t kind, uint8_t seed) {
  const size_t n = kernel_log::record_size(kind);
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(seed * 37u + i * 11u + 1u);
  const ft_hdr h = make_hdr(kind, static_cast<uint16_t>(n), 1000000000ULL + seed * 1000ULL + kind,
                            seed % 8u, 100u + seed, 1000u + seed);
  std::memcpy(b.data(), &h, sizeof(h));
  return b;
}

KernelLogMeta sample_meta() {
  KernelLogMeta m;
  m.host = "node-07";
  m.kernel = "6.1.0-test";
  m.boot_id = "0b5e9f6a-1c2d-4e3f-8a9b-0c1d2e3f4a5b";
  m.command = "fabtrace record -- ./app \"a,b\"";
  m.pid = 4242;
  m.mono_ns = 123456789012ULL;
  m.real_ns = 1700000000123456789ULL;
  m.options = {{"polls", "1"}, {"stall_us", "500"}};
  m.attach = {{"sched", "tp_btf/sched_switch", "attached", ""},
              {"cxi", "tp/cass/cass_err", "absent", "no cass tracepoints (cxi driver not loaded)"},
              {"probes", "usdt:fabtrace:poll_exit", "failed", "Operation not permitted"}};
  return m;
}

bool start_raw_log(BlockFileWriter* w, const std::string& path) {
  if (!w->create(path, kernel_log::kMagic, kernel_log::kVersion)) return false;
  const std::string meta = std::string("{\"format\":\"") + kernel_log::kFormatName +
                           "\",\"record_version\":" + std::to_string(FT_RECORD_VERSION) +
                           ",\"host\":\"raw\"}";
  return w->write_block(kernel_log::kMeta, 0, meta.data(), meta.size());
}

Bytes concat(const std::vector<Bytes>& records) {
  Bytes out;
  for (const Bytes& r : records) out.insert(out.end(), r.begin(), r.end());
  return out;
}

}  // namespace test
}  // namespace fabtrace
