// One process taking rows of a `fabtrace record --uprobes` session's
// statistics (bpf/uprobe_ops.bpf.c), for the security tests
// (tests/integration/test_security.cpp): an RDM endpoint of PROVIDER posts N
// receives, each "from" another source address. A receive's row is keyed by
// its source, and the provider (without FI_DIRECTED_RECV) does not look at it,
// so each receive is a new row, whether the provider takes it or refuses it
// (its receive queue full).
//   row_flood PROVIDER N
// Prints "posted A refused R".
//   row_flood PROVIDER N cqs
// Opens N completion queues instead (each an entry of the session's CQ map,
// never freed while it runs), and prints "cqs A refused R".
//   row_flood PROVIDER N addrs
// Inserts N addresses into its AV instead, one per call (127.0.0.1, each
// port its own; each an entry of the session's address map), and prints
// "addrs A refused R".
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

int fail(const char* what, int rc) {
  std::fprintf(stderr, "row_flood: %s: %s\n", what, fi_strerror(-rc));
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool cqs = argc == 4 && std::strcmp(argv[3], "cqs") == 0;
  const bool addrs = argc == 4 && std::strcmp(argv[3], "addrs") == 0;
  if (argc != 3 && !cqs && !addrs) {
    std::fprintf(stderr, "usage: row_flood PROVIDER N [cqs|addrs]\n");
    return 2;
  }
  const long n = std::atol(argv[2]);
  fi_info* hints = fi_allocinfo();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  hints->mode = FI_CONTEXT;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  hints->fabric_attr->prov_name = strdup(argv[1]);
  fi_info* info = nullptr;
  int rc = fi_getinfo(FI_VERSION(1, 9), "127.0.0.1", nullptr, 0, hints, &info);
  if (rc) return fail("fi_getinfo", rc);
  fid_fabric* fabric = nullptr;
  fid_domain* domain = nullptr;
  fid_cq* cq = nullptr;
  fid_av* av = nullptr;
  fid_ep* ep = nullptr;
  fi_cq_attr cq_attr{};
  cq_attr.format = FI_CQ_FORMAT_CONTEXT;
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  if ((rc = fi_fabric(info->fabric_attr, &fabric, nullptr))) return fail("fi_fabric", rc);
  if ((rc = fi_domain(fabric, info, &domain, nullptr))) return fail("fi_domain", rc);
  if ((rc = fi_cq_open(domain, &cq_attr, &cq, nullptr))) return fail("fi_cq_open", rc);
  // Closes what is open, innermost first.
  auto close_all = [&] {
    if (ep) fi_close(&ep->fid);
    if (av) fi_close(&av->fid);
    fi_close(&cq->fid);
    fi_close(&domain->fid);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    fi_freeinfo(hints);
    return 0;
  };
  if (cqs) {
    std::vector<fid_cq*> open;
    long refused = 0;
    fi_cq_attr small = cq_attr;
    small.size = 16;  // thousands of them: each small
    for (long i = 0; i < n; ++i) {
      fid_cq* c = nullptr;
      if (fi_cq_open(domain, &small, &c, nullptr) == 0)
        open.push_back(c);
      else
        ++refused;
    }
    std::printf("cqs %zu refused %ld\n", open.size(), refused);
    std::fflush(stdout);
    for (fid_cq* c : open) fi_close(&c->fid);
    return close_all();
  }
  if ((rc = fi_av_open(domain, &av_attr, &av, nullptr))) return fail("fi_av_open", rc);
  if (addrs) {
    long inserted = 0, refused = 0;
    for (long i = 0; i < n; ++i) {
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + static_cast<uint32_t>(i / 60000));
      a.sin_port = htons(static_cast<uint16_t>(1024 + i % 60000));
      fi_addr_t out = FI_ADDR_NOTAVAIL;
      (fi_av_insert(av, &a, 1, &out, 0, nullptr) == 1 ? inserted : refused) += 1;
    }
    std::printf("addrs %ld refused %ld\n", inserted, refused);
    std::fflush(stdout);
    return close_all();
  }
  if ((rc = fi_endpoint(domain, info, &ep, nullptr))) return fail("fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV))) return fail("fi_ep_bind cq", rc);
  if ((rc = fi_ep_bind(ep, &av->fid, 0))) return fail("fi_ep_bind av", rc);
  if ((rc = fi_enable(ep))) return fail("fi_enable", rc);
  std::vector<fi_context> ctx(static_cast<size_t>(n > 0 ? n : 1));
  char buf[64];
  long posted = 0, refused = 0;
  for (long i = 0; i < n; ++i) {
    const ssize_t r = fi_recv(ep, buf, sizeof(buf), nullptr, static_cast<fi_addr_t>(i),
                              &ctx[static_cast<size_t>(i)]);
    (r == 0 ? posted : refused) += 1;
  }
  std::printf("posted %ld refused %ld\n", posted, refused);
  std::fflush(stdout);
  return close_all();
}
