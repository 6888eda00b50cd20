// SPDX-License-Identifier: (BSD-3-Clause OR GPL-2.0-only)
/* The uprobe-assisted mode (`fabtrace record --uprobes`): op/completion pairing
 * in the kernel for processes that run without the preload.
 *
 * - Entry + return probes on the provider's data-path ops (ep->msg->send, ...,
 *   the injects too): an op the provider accepted (returned 0) that gets a
 *   completion is remembered by (process, context pointer): when, how many
 *   bytes, which op (a context reused while its earlier op is outstanding
 *   queues behind it: struct ft_up_pending). An op with a NULL context is
 *   queued on its endpoint side's CQ instead (struct ft_up_fifo_key). An op
 *   that by design gets none (an inject, FI_SELECTIVE_COMPLETION without
 *   FI_COMPLETION, ...: op_completes) is counted untimed once accepted;
 *   refusals are counted apart (-FI_EAGAIN and other errors).
 * - An entry + return probe on the provider's cq_open learns the application's
 *   CQs and their entry format (a utility provider's inner CQs are opened by
 *   another provider's cq_open, which is not probed, so they are never known);
 *   an entry probe on the endpoint's bind learns which CQ each side uses.
 * - An entry + return probe on the CQ read (cq->ops->read / readfrom): the
 *   outermost read of a known CQ in a thread is an application poll (utility
 *   providers call their readfrom, and their core's read, from inside it),
 *   counted per CQ with the gap since the CQ's previous poll (struct
 *   ft_up_cq); at its return the returned entries are walked, each entry's
 *   first field (op_context) looked up and paired with its op.
 * - Per link, as the preload reports: each op's endpoint (its first argument)
 *   and peer (its fi_addr_t) key its row. What they are comes from an entry +
 *   return probe on the AV's insert (fi_addr_t -> the address inserted) and on
 *   the endpoint's getname (endpoint -> its own address); the endpoint's bind
 *   to an AV says which AV its fi_addr_t values index. A connected (MSG)
 *   endpoint has no AV: its one peer comes from the endpoint open's info and
 *   the connect's address (entry + return probes on both). The collector
 *   formats the addresses.
 * Everything is folded into per-CPU statistics per (process, op kind,
 * endpoint, peer), with a log2 latency histogram; polls are counted, never
 * recorded one by one. The collector reads the maps when it stops (nothing
 * goes through the ring buffer).
 *
 * Attached per library file with no pid filter (every process mapping it, from
 * its start), by file offset: the library is stripped (userspace/record/
 * uprobes/optable_probe.* finds the offsets). User memory is read only with
 * bpf_probe_read_user; nothing is written to the process.
 *
 * In four parts, each one job, included in order below. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "uprobe_ops.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The parts in order, each using what the ones before it define. */
// clang-format off
#include "uprobe_state.bpf.h"
#include "uprobe_post.bpf.h"
#include "uprobe_poll.bpf.h"
#include "uprobe_peers.bpf.h"
// clang-format on
