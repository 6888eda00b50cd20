// Endpoint addressing: RDM endpoints swap names over the out-of-band channel and
// insert them into the AV; MSG endpoints go through a passive endpoint, fi_connect
// and fi_accept, with events read from the EQ.
#include <rdma/fi_cm.h>

#include <chrono>
#include <cstring>

#include "fabric.h"
#include "oob.h"

namespace ftapp {
namespace {

void check(int ret, const char* what) {
  if (ret != 0) {
    throw FamilyError(std::string(what) + " failed: " + fi_strerror(ret < 0 ? -ret : ret));
  }
}

const char* event_name(uint32_t ev) {
  switch (ev) {
    case FI_CONNREQ:
      return "FI_CONNREQ";
    case FI_CONNECTED:
      return "FI_CONNECTED";
    case FI_SHUTDOWN:
      return "FI_SHUTDOWN";
    default:
      return "other";
  }
}

// Waits for `expected` on the EQ; returns the CM entry (entry.info owned by caller).
fi_eq_cm_entry wait_event(fid_eq* eq, uint32_t expected, Oob& oob, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    fi_eq_cm_entry entry;
    std::memset(&entry, 0, sizeof entry);
    uint32_t event = 0;
    ssize_t r = fi_eq_sread(eq, &event, &entry, sizeof entry, 100, 0);
    if (r == -FI_EAVAIL) {
      fi_eq_err_entry err;
      std::memset(&err, 0, sizeof err);
      fi_eq_readerr(eq, &err, 0);
      char buf[256] = {0};
      const char* detail = fi_eq_strerror(eq, err.prov_errno, err.err_data, buf, sizeof buf);
      throw FamilyError(std::string("EQ error while waiting for ") + event_name(expected) + ": " +
                        fi_strerror(err.err) + " (" + (detail ? detail : "") + ")");
    }
    if (r > 0) {
      if (event != expected) {
        if (entry.info != nullptr) fi_freeinfo(entry.info);
        throw FamilyError(std::string("unexpected EQ event ") + event_name(event) +
                          " while waiting for " + event_name(expected));
      }
      return entry;
    }
    if (r != -FI_EAGAIN && r != -FI_ETIMEDOUT) {
      throw FamilyError(std::string("fi_eq_sread failed: ") + fi_strerror(int(-r)));
    }
    oob.check_abort();
    if (std::chrono::steady_clock::now() > deadline) {
      throw FamilyError(std::string("timeout waiting for ") + event_name(expected));
    }
  }
}

}  // namespace

std::string get_name(fid_t fid) {
  std::string name(256, '\0');
  size_t len = name.size();
  int ret = fi_getname(fid, &name[0], &len);
  if (ret == -FI_ETOOSMALL) {
    name.assign(len, '\0');
    ret = fi_getname(fid, &name[0], &len);
  }
  check(ret, "fi_getname");
  name.resize(len);
  return name;
}

void connect_rdm(Fabric& f, Oob& oob, int timeout_ms) {
  oob.send("addr", get_name(&f.ep->fid));
  std::string peer_name = oob.recv("addr", timeout_ms);
  int n = fi_av_insert(f.av, peer_name.data(), 1, &f.peer, 0, nullptr);
  if (n != 1) {
    throw FamilyError(std::string("fi_av_insert failed: ") + fi_strerror(n < 0 ? -n : FI_EINVAL));
  }
}

void connect_msg(Fabric& f, Oob& oob, int rank, int timeout_ms) {
  f.peer = 0;  // ignored on connected endpoints
  if (rank == 1) {
    check(fi_passive_ep(f.fabric, f.info, &f.pep, nullptr), "fi_passive_ep");
    check(fi_pep_bind(f.pep, &f.eq->fid, 0), "fi_pep_bind");
    check(fi_listen(f.pep), "fi_listen");
    oob.send("addr", get_name(&f.pep->fid));
    fi_eq_cm_entry req = wait_event(f.eq, FI_CONNREQ, oob, timeout_ms);
    f.conn_info_ = req.info;
    f.open_ep(f.conn_info_, f.spec_, false);
    check(fi_accept(f.ep, nullptr, 0), "fi_accept");
    fi_eq_cm_entry conn = wait_event(f.eq, FI_CONNECTED, oob, timeout_ms);
    if (conn.info != nullptr) fi_freeinfo(conn.info);
  } else {
    f.open_ep(f.info, f.spec_, f.selective_);
    std::string addr = oob.recv("addr", timeout_ms);
    check(fi_connect(f.ep, addr.data(), nullptr, 0), "fi_connect");
    fi_eq_cm_entry conn = wait_event(f.eq, FI_CONNECTED, oob, timeout_ms);
    if (conn.info != nullptr) fi_freeinfo(conn.info);
  }
}

}  // namespace ftapp
