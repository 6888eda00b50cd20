/* marks_example: phase marks from an application, with include/fabtrace.h.
 *
 * One process, one RDM endpoint that sends to itself: ITERATIONS iterations
 * of a tagged send and its receive, each iteration marked, its exchange a
 * phase. Runs as is (the marks do nothing); under the tracer they land in the
 * per-op timeline:
 *
 *   FABTRACE_OPS_RANKS=all FABTRACE_OPS_MIN_BYTES=0 \
 *     fabtrace run -- build/examples/marks_example 'tcp;ofi_rxm' 10
 *   fabtrace export marks fabtrace_ops.*.oplog
 *
 * and FABTRACE_OPS_WINDOW='mark:iteration 3' keeps only that iteration's ops.
 */
#define _POSIX_C_SOURCE 200809L /* strdup; no _GNU_SOURCE: the header copes */

#include <fabtrace.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                         \
  do {                                                                      \
    int rc_ = (int)(call);                                                  \
    if (rc_) {                                                              \
      fprintf(stderr, "marks_example: %s: %s\n", #call, fi_strerror(-rc_)); \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

/* One poll of the CQ: 1 when it gave a completion. */
static int poll_one(struct fid_cq* cq) {
  struct fi_cq_tagged_entry e;
  ssize_t n = fi_cq_read(cq, &e, 1);
  if (n == 1) return 1;
  if (n != -FI_EAGAIN) {
    fprintf(stderr, "marks_example: fi_cq_read: %s\n", fi_strerror((int)-n));
    exit(1);
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* prov = argc > 1 ? argv[1] : "tcp;ofi_rxm";
  const int iterations = argc > 2 ? atoi(argv[2]) : 10;
  struct fi_info* hints = fi_allocinfo();
  struct fi_info* info = NULL;
  hints->caps = FI_TAGGED;
  hints->ep_attr->type = FI_EP_RDM;
  hints->fabric_attr->prov_name = strdup(prov);
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  CHECK(fi_getinfo(FI_VERSION(1, 9), NULL, NULL, 0, hints, &info));

  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  struct fid_cq* cq;
  struct fid_ep* ep;
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_TAGGED, .size = 64};
  CHECK(fi_fabric(info->fabric_attr, &fabric, NULL));
  CHECK(fi_domain(fabric, info, &domain, NULL));
  CHECK(fi_av_open(domain, &av_attr, &av, NULL));
  CHECK(fi_cq_open(domain, &cq_attr, &cq, NULL));
  CHECK(fi_endpoint(domain, info, &ep, NULL));
  CHECK(fi_ep_bind(ep, &av->fid, 0));
  CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
  CHECK(fi_enable(ep));

  /* The endpoint's own address: it talks to itself. */
  char addr[256];
  size_t len = sizeof(addr);
  fi_addr_t self;
  CHECK(fi_getname(&ep->fid, addr, &len));
  if (fi_av_insert(av, addr, 1, &self, 0, NULL) != 1) {
    fprintf(stderr, "marks_example: fi_av_insert failed\n");
    return 1;
  }

  enum { kSize = 8192 };
  static char sbuf[kSize], rbuf[kSize];
  struct fid_mr* mr;
  CHECK(fi_mr_reg(domain, sbuf, sizeof(sbuf), FI_SEND | FI_RECV, 0, 1, 0, &mr, NULL));
  struct fid_mr* rmr;
  CHECK(fi_mr_reg(domain, rbuf, sizeof(rbuf), FI_SEND | FI_RECV, 0, 2, 0, &rmr, NULL));

  for (int i = 0; i < iterations; ++i) {
    char name[32];
    snprintf(name, sizeof(name), "iteration %d", i);
    fabtrace_mark(name);
    fabtrace_begin("exchange");
    struct fi_context rctx, sctx;
    CHECK(fi_trecv(ep, rbuf, kSize, fi_mr_desc(rmr), FI_ADDR_UNSPEC, (uint64_t)i, 0, &rctx));
    int done = 0;
    ssize_t rc;
    while ((rc = fi_tsend(ep, sbuf, kSize, fi_mr_desc(mr), self, (uint64_t)i, &sctx)) == -FI_EAGAIN)
      done += poll_one(cq); /* progress until the provider takes the send */
    CHECK(rc);
    while (done < 2) done += poll_one(cq);
    fabtrace_end();
  }
  fabtrace_mark("done");

  fi_close(&mr->fid);
  fi_close(&rmr->fid);
  fi_close(&ep->fid);
  fi_close(&cq->fid);
  fi_close(&av->fid);
  fi_close(&domain->fid);
  fi_close(&fabric->fid);
  fi_freeinfo(info);
  fi_freeinfo(hints);
  printf("marks_example: %d iterations on %s\n", iterations, prov);
  return 0;
}
