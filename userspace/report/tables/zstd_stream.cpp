#include "userspace/report/tables/zstd_stream.h"

#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <vector>

namespace fabtrace::report {

namespace {

struct Sink {
  ZSTD_CCtx* cctx = nullptr;
  int fd = -1;
  std::vector<char> out;  // one ZSTD_CStreamOutSize() block, written out as it fills
};

bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Feeds `in` to the compressor (mode: ZSTD_e_continue, or ZSTD_e_end for the
// frame's tail) and writes what it gives back.
bool pump(Sink* s, ZSTD_inBuffer* in, ZSTD_EndDirective mode) {
  for (;;) {
    ZSTD_outBuffer o{s->out.data(), s->out.size(), 0};
    const size_t left = ZSTD_compressStream2(s->cctx, &o, in, mode);
    if (ZSTD_isError(left)) {
      errno = EIO;
      return false;
    }
    if (!write_all(s->fd, s->out.data(), o.pos)) return false;
    const bool done = mode == ZSTD_e_end ? left == 0 : in->pos == in->size;
    if (done) return true;
  }
}

ssize_t sink_write(void* cookie, const char* buf, size_t size) {
  ZSTD_inBuffer in{buf, size, 0};
  return pump(static_cast<Sink*>(cookie), &in, ZSTD_e_continue) ? static_cast<ssize_t>(size) : -1;
}

int sink_close(void* cookie) {
  auto* s = static_cast<Sink*>(cookie);
  ZSTD_inBuffer none{nullptr, 0, 0};
  const bool ok = pump(s, &none, ZSTD_e_end);
  const int err = errno;
  ZSTD_freeCCtx(s->cctx);
  delete s;
  errno = err;
  return ok ? 0 : -1;
}

}  // namespace

std::FILE* open_zstd_stream(int fd, int level, std::string* error) {
  auto* s = new Sink;
  s->fd = fd;
  s->cctx = ZSTD_createCCtx();
  s->out.resize(ZSTD_CStreamOutSize());
  if (!s->cctx || ZSTD_isError(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel, level)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_checksumFlag, 1))) {
    if (error) *error = "cannot make a zstd compressor";
    ZSTD_freeCCtx(s->cctx);
    delete s;
    return nullptr;
  }
  const cookie_io_functions_t io{nullptr, sink_write, nullptr, sink_close};
  std::FILE* f = ::fopencookie(s, "w", io);
  if (!f) {
    if (error) *error = "cannot make a stream";
    ZSTD_freeCCtx(s->cctx);
    delete s;
  }
  return f;
}

}  // namespace fabtrace::report
