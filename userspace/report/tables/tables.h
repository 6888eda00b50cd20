// The job's tables for pandas & co: OUTDIR/links.{csv,json} (one row per link x
// op x size), OUTDIR/nics.{csv,json} (one row per rank's NIC), OUTDIR/stalls.
// {csv,json} (one row per CQ: its longest poll gap and, with a kernel log, the
// kernel's breakdown of it) and, on request, OUTDIR/kernel_events.csv (every
// event of every node's kernel log, the columns of `fabtrace export kernel`
// after a host column).
//
//   pd.read_csv("links.csv")  /  pd.read_json("links.json")   (a JSON array of
//   objects with the same keys as the CSV columns, numbers as numbers);
//   pd.read_csv("links.csv.zst") for a large job (kZstdLinksAbove)
//
// Rows are written in the job's order (ranks by host, rank, pid; a rank's rows
// as in its report). Times in ns, gbps in GB/s (bytes per ns).
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "userspace/report/job/job.h"
#include "userspace/report/tables/table_row.h"

namespace fabtrace::report {

// host,rank,pid,local,remote,op,bytes,count,errors,untimed,unfinished,eagain,
// refused,completed_within_50us,avg_ns,min_ns,max_ns,p50_ns,p99_ns,gbps,outlier_ratio,
// size_unknown,ring_full,posted_matched,posted_late,posted_late_median_ns,posted_unknown,
// kernel_logged,retransmits,drops
const std::vector<std::string>& link_columns();
// host,rank,pid,cq,polls,gap_ns,end_wall_ns,end_job_s,kernel_logged,explained,tid,why,
// on-cpu_ns,runnable_ns,futex_ns,sleep_ns,nanosleep_ns,disk_ns,stopped_ns,other_ns,irq_ns,
// softirq_ns,faults,migrations,offcpu_intervals,ran_instead_1,ran_instead_1_ns,
// ran_instead_2,ran_instead_2_ns,history_partial
const std::vector<std::string>& stall_columns();
// host,rank,pid,domain,locals (space separated),ops,bytes,busy_ns,gbps,window_ns,
// peak_gbps,peak_start_s,peak_span_ns,peak_bytes,peak_busy_ns
const std::vector<std::string>& nic_columns();

// Each returns false when writing fails (errno tells why).
bool write_links_csv(const Job& job, std::FILE* out);
bool write_links_json(const Job& job, std::FILE* out);
bool write_nics_csv(const Job& job, std::FILE* out);
bool write_nics_json(const Job& job, std::FILE* out);
bool write_stalls_csv(const Job& job, std::FILE* out);
bool write_stalls_json(const Job& job, std::FILE* out);
bool write_kernel_events_csv(const Job& job, std::FILE* out);

// A job of more link rows than this gets its links table as links.csv.zst
// (the bytes of links.csv as one zstd frame: pd.read_csv("links.csv.zst"),
// `zstd -dc links.csv.zst`) and no links.json: at a million rows the CSV is
// 192 MB and the JSON 575 MB of the same rows, and formatting and writing
// both was the largest part of the report's time after the parse. Smaller
// jobs keep links.csv and links.json. `fabtrace report --zstd-links-above N`.
constexpr size_t kZstdLinksAbove = 100000;

// The links table's file name: "links.csv.zst" for more than zstd_above rows,
// "links.csv" otherwise.
const char* links_table_name(const Job& job, size_t zstd_above);

// Writes the tables into out_dir (which must exist; kernel_events.csv only when
// asked and the job has kernel logs; the links table as links_table_name()
// says, the other form's files from an earlier report removed). Appends the
// paths written to *files. False with *error (naming the file) on the first
// failure.
bool write_tables(const Job& job, const std::string& out_dir, std::vector<std::string>* files,
                  std::string* error, bool kernel_events = false,
                  size_t zstd_links_above = kZstdLinksAbove);

}  // namespace fabtrace::report
