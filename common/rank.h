// Which process of the job this is, and rank selections such as "0,8,16" or "0-7,512".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace fabtrace {

// The one rule for host and rank text wherever fabtrace writes it: in output
// file names, in the report JSON, in the oplog and in the counter CSV's
// "key=value" header. Blanks, control bytes, ',' and '/' become '_' (a rank
// "1,2" or "../x" can neither split a field nor leave the directory), at most
// 64 bytes are kept, and empty text is "?". Readers match files by these tokens.
std::string output_token(const std::string& s);

struct RankId {
  std::string
      text;  // output_token of what the launcher wrote, "NA" when no launcher variable is set
  long value = -1;  // parsed rank, -1 when unknown or not a number
};

// First of SLURM_PROCID, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK, RANK that is set.
RankId detect_rank();

// First of SLURM_LOCALID, MPI_LOCALRANKID, OMPI_COMM_WORLD_LOCAL_RANK, PMI_LOCAL_RANK,
// FLUX_TASK_LOCAL_ID that parses as a number; -1 when none does.
long detect_local_rank();

class RankSpec {
 public:
  // Parses a comma list of ranks and inclusive ranges ("0,8,16", "0-7, 512").
  // Returns false (and leaves the spec empty) on any malformed token, with a
  // message in *error: empty tokens, negative numbers, lo > hi, trailing junk.
  bool parse(const std::string& spec, std::string* error);
  bool contains(long rank) const;
  bool empty() const { return ranges_.empty(); }

 private:
  std::vector<std::pair<long, long>> ranges_;
};

}  // namespace fabtrace
