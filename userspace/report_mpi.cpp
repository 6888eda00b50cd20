// fabtrace report --mpi (report_mpi.h): MPI collectives only. Process 0
// broadcasts the list of report files, every process parses files i with
// i % K == its rank, and process 0 gathers the parsed reports as bytes
// (parsed_report.h) with MPI_Gatherv, in rounds of at most kChunk bytes per
// process (MPI counts are ints).
#include "userspace/report_mpi.h"

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "userspace/report/parsed_report.h"

namespace fabtrace {

namespace {

constexpr uint64_t kNoList = std::numeric_limits<uint64_t>::max();  // "stop": nothing to parse
constexpr size_t kChunk = size_t{1} << 30;

// The file list, from process 0 to all. False when process 0 sent "stop"
// (load_job returned before it parsed).
bool bcast_list(std::vector<std::string>* paths, bool stop) {
  std::string bytes;
  uint64_t n = stop ? kNoList : paths->size();
  for (size_t i = 0; !stop && i < paths->size(); ++i) {
    const uint64_t len = (*paths)[i].size();
    bytes.append(reinterpret_cast<const char*>(&len), sizeof len);
    bytes += (*paths)[i];
  }
  uint64_t size = bytes.size();
  MPI_Bcast(&n, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (n == kNoList) return false;
  MPI_Bcast(&size, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  bytes.resize(size);
  for (uint64_t at = 0; at < size; at += kChunk)
    MPI_Bcast(&bytes[at], static_cast<int>(std::min<uint64_t>(kChunk, size - at)), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  paths->clear();
  for (size_t at = 0; paths->size() < n && at + sizeof(uint64_t) <= bytes.size();) {
    uint64_t len;
    std::memcpy(&len, bytes.data() + at, sizeof len);
    at += sizeof len;
    paths->push_back(bytes.substr(at, len));
    at += len;
  }
  return true;
}

// This process's share of the list: files i with i % size == rank.
std::vector<std::string> share_of(const std::vector<std::string>& paths, int rank, int size) {
  std::vector<std::string> mine;
  for (size_t i = static_cast<size_t>(rank); i < paths.size(); i += static_cast<size_t>(size))
    mine.push_back(paths[i]);
  return mine;
}

// Gathers every process's `mine` on process 0 (into *all, one buffer per
// process), in rounds of at most chunk bytes from each, chunk chosen so that a
// round's total and displacements fit MPI's int counts.
void gather_bytes(const std::string& mine, int rank, int size, std::vector<std::string>* all) {
  const size_t chunk = std::min(
      kChunk, static_cast<size_t>(std::numeric_limits<int>::max()) / static_cast<size_t>(size));
  uint64_t rounds = (mine.size() + chunk - 1) / chunk, most = 0;
  MPI_Allreduce(&rounds, &most, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) all->assign(static_cast<size_t>(size), std::string());
  const size_t n = static_cast<size_t>(size);
  for (uint64_t r = 0; r < most; ++r) {
    const size_t from = std::min<size_t>(mine.size(), r * chunk);
    const int count = static_cast<int>(std::min(chunk, mine.size() - from));
    std::vector<int> counts(rank == 0 ? n : 0), displs(rank == 0 ? n : 0);
    MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::string buf;
    if (rank == 0) {
      int total = 0;
      for (size_t q = 0; q < n; ++q) {
        displs[q] = total;
        total += counts[q];
      }
      buf.resize(static_cast<size_t>(total));
    }
    MPI_Gatherv(mine.data() + from, count, MPI_CHAR, buf.data(), counts.data(), displs.data(),
                MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0)
      for (size_t q = 0; q < n; ++q)
        (*all)[q].append(buf, static_cast<size_t>(displs[q]), static_cast<size_t>(counts[q]));
  }
}

}  // namespace

MpiReport::MpiReport() {
  MPI_Init(nullptr, nullptr);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiReport::~MpiReport() { MPI_Finalize(); }

report::ReportParser MpiReport::parser(unsigned threads) {
  return [this, threads](const std::vector<std::string>& paths,
                         std::vector<report::ParsedReport>* out, std::string* error) {
    sent_ = true;
    std::vector<std::string> list = paths;
    bcast_list(&list, false);
    std::vector<report::ParsedReport> mine =
        report::parse_reports(share_of(paths, 0, size_), threads);
    std::vector<std::string> bytes;
    gather_bytes(std::string(), 0, size_, &bytes);
    out->assign(paths.size(), report::ParsedReport());
    for (size_t k = 0; k < mine.size(); ++k)
      (*out)[k * static_cast<size_t>(size_)] = std::move(mine[k]);
    for (int q = 1; q < size_; ++q) {
      std::string b = std::move(bytes[static_cast<size_t>(q)]);  // freed once decoded
      size_t pos = 0;
      for (size_t i = static_cast<size_t>(q); i < paths.size(); i += static_cast<size_t>(size_)) {
        if (!report::decode_parsed_report(b.data(), b.size(), &pos, &(*out)[i])) {
          if (error) *error = "--mpi: process " + std::to_string(q) + " sent unreadable reports";
          return false;
        }
      }
      if (pos != b.size()) {
        if (error) *error = "--mpi: process " + std::to_string(q) + " sent more than it parsed";
        return false;
      }
    }
    return true;
  };
}

void MpiReport::release() {
  if (sent_ || rank_ != 0) return;
  sent_ = true;
  std::vector<std::string> none;
  bcast_list(&none, true);
}

int MpiReport::serve(unsigned threads) {
  std::vector<std::string> paths;
  if (!bcast_list(&paths, false)) return 0;
  std::string bytes;
  for (const report::ParsedReport& p :
       report::parse_reports(share_of(paths, rank_, size_), threads))
    report::encode_parsed_report(p, &bytes);
  gather_bytes(bytes, rank_, size_, nullptr);
  return 0;
}

}  // namespace fabtrace
