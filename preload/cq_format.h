// CQ entry formats: what each carries, which one the provider's CQ is opened
// in, and how the application gets entries in the format it asked for.
//
// A receive is filed under the size that arrived, which only entries with a
// `len` field tell (FI_CQ_FORMAT_MSG, DATA, TAGGED). When the application
// asks for FI_CQ_FORMAT_CONTEXT (or UNSPEC, which is fi_cq_entry in
// libfabric's util CQ and every provider here), the preload opens the
// provider's CQ in FI_CQ_FORMAT_MSG instead and hands the application the
// op_context of each entry. The formats are prefixes of one another
// (fi_cq_entry ⊂ fi_cq_msg_entry ⊂ fi_cq_data_entry ⊂ fi_cq_tagged_entry), so
// the application's entry is the first bytes of the provider's.
#pragma once

#include <rdma/fi_eq.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace fabtrace {

// Bytes of one entry of format f (UNSPEC: fi_cq_entry).
inline size_t cq_entry_size(enum fi_cq_format f) {
  switch (f) {
    case FI_CQ_FORMAT_MSG:
      return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
      return sizeof(struct fi_cq_data_entry);
    case FI_CQ_FORMAT_TAGGED:
      return sizeof(struct fi_cq_tagged_entry);
    default:
      return sizeof(struct fi_cq_entry);
  }
}

// Whether entries of format f carry the completion's length.
inline bool cq_format_has_len(enum fi_cq_format f) {
  return f == FI_CQ_FORMAT_MSG || f == FI_CQ_FORMAT_DATA || f == FI_CQ_FORMAT_TAGGED;
}

// The entry layout a provider writes for FI_CQ_FORMAT_UNSPEC, by the name of
// the provider that owns the application's CQ (the last of "tcp;ofi_rxm"):
// FI_CQ_FORMAT_CONTEXT for libfabric's util CQ and sockets, MSG for efa,
// TAGGED for the psm providers; FI_CQ_FORMAT_UNSPEC when we do not know.
enum fi_cq_format cq_unspec_layout(const std::string& prov_name);

// Entries read per provider call when translating: the application's buffer
// cannot hold the provider's longer entries, so they land on our stack first.
// A read asking for more returns at most this many, as CQ reads may.
constexpr size_t kCqChunk = 64;

// Writes n provider entries (prov_size bytes each) as application entries
// (app_size bytes each, app_size <= prov_size).
inline void cq_entries_to_app(void* app, size_t app_size, const void* prov, size_t prov_size,
                              size_t n) {
  char* d = static_cast<char*>(app);
  const char* s = static_cast<const char*>(prov);
  if (app_size == sizeof(struct fi_cq_entry)) {
    // The usual case (CONTEXT/UNSPEC from MSG): one pointer per entry.
    for (size_t i = 0; i < n; ++i, d += app_size, s += prov_size)
      std::memcpy(d, s, sizeof(struct fi_cq_entry));
    return;
  }
  for (size_t i = 0; i < n; ++i, d += app_size, s += prov_size) std::memcpy(d, s, app_size);
}

}  // namespace fabtrace
