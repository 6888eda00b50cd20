// A test-only reader of the Perfetto traces `fabtrace report` writes
// (perfetto_decode.h).
#include "tests/report_fixtures/perfetto_decode.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "userspace/report/perfetto_writer.h"

namespace fabtrace::test {

using report::PerfettoWriter;

namespace {

struct PbField {
  uint32_t num = 0;
  uint32_t wire = 0;
  uint64_t v = 0;  // varint / fixed value
  std::string b;   // length-delimited payload
};

bool pb_varint(const std::string& s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*pos >= s.size()) return false;
    const uint8_t c = static_cast<uint8_t>(s[(*pos)++]);
    *v |= uint64_t{c & 0x7Fu} << shift;
    if (!(c & 0x80)) return true;
  }
  return false;
}

bool pb_parse(const std::string& s, std::vector<PbField>* out) {
  out->clear();
  size_t pos = 0;
  while (pos < s.size()) {
    uint64_t tag;
    if (!pb_varint(s, &pos, &tag)) return false;
    PbField f;
    f.num = static_cast<uint32_t>(tag >> 3);
    f.wire = static_cast<uint32_t>(tag & 7);
    switch (f.wire) {
      case 0:
        if (!pb_varint(s, &pos, &f.v)) return false;
        break;
      case 1:
        if (s.size() - pos < 8) return false;
        std::memcpy(&f.v, s.data() + pos, 8);
        pos += 8;
        break;
      case 5:
        if (s.size() - pos < 4) return false;
        std::memcpy(&f.v, s.data() + pos, 4);
        pos += 4;
        break;
      case 2: {
        uint64_t len;
        if (!pb_varint(s, &pos, &len) || s.size() - pos < len) return false;
        f.b = s.substr(pos, len);
        pos += len;
        break;
      }
      default:
        return false;
    }
    out->push_back(std::move(f));
  }
  return true;
}

double as_double(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

}  // namespace

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

Decoded decode_trace(const std::string& path) {
  Decoded d;
  std::vector<PbField> top;
  if (!pb_parse(read_file(path), &top)) {
    d.bad("the trace does not parse");
    return d;
  }
  std::map<uint64_t, std::string> event_names, arg_names;
  for (const PbField& pkt : top) {
    if (pkt.num != 1 || pkt.wire != 2) {
      d.bad("a top-level field is not Trace.packet");
      continue;
    }
    std::vector<PbField> pf;
    if (!pb_parse(pkt.b, &pf)) {
      d.bad("a packet does not parse");
      continue;
    }
    uint64_t ts = 0, seq = 0, flags = 0;
    const PbField *te = nullptr, *td = nullptr, *interned = nullptr, *snap = nullptr;
    for (const PbField& f : pf) {
      if (f.num == 8) ts = f.v;
      if (f.num == 10) seq = f.v;
      if (f.num == 13) flags = f.v;
      if (f.num == 58) d.bad("a packet has a timestamp_clock_id");
      if (f.num == 11) te = &f;
      if (f.num == 60) td = &f;
      if (f.num == 12) interned = &f;
      if (f.num == 6) snap = &f;
      if (f.num == 45) {  // SystemInfo
        std::vector<PbField> si;
        pb_parse(f.b, &si);
        for (const PbField& x : si)
          if (x.num == 4) d.service_version.assign(x.b.begin(), x.b.end());
      }
    }
    if (seq != PerfettoWriter::kSequenceId) d.bad("packet without the sequence id");
    if (d.packets == 0) {
      d.first_clears_state = (flags & 1) != 0;
      if (!snap) d.bad("the first packet is not the clock snapshot");
    } else if (flags & 1) {
      d.bad("incremental state cleared again");
    }
    ++d.packets;
    if (snap) {
      std::vector<PbField> cs, c;
      pb_parse(snap->b, &cs);
      for (const PbField& clk : cs) {
        pb_parse(clk.b, &c);
        uint32_t id = 0;
        uint64_t t = 0;
        for (const PbField& x : c) {
          if (x.num == 1) id = static_cast<uint32_t>(x.v);
          if (x.num == 2) t = x.v;
        }
        d.clocks.emplace_back(id, t);
      }
    }
    if (interned) {
      std::vector<PbField> id, e;
      pb_parse(interned->b, &id);
      for (const PbField& x : id) {
        pb_parse(x.b, &e);
        uint64_t iid = 0;
        std::string name;
        for (const PbField& y : e) {
          if (y.num == 1) iid = y.v;
          if (y.num == 2) name = y.b;
        }
        if (x.num == 2) {
          if (event_names.count(iid)) d.bad("event name iid defined twice");
          event_names[iid] = name;
          ++d.interned_event_names;
        }
        if (x.num == 3) {
          if (arg_names.count(iid)) d.bad("annotation name iid defined twice");
          arg_names[iid] = name;
        }
      }
      if (!(flags & 2)) d.bad("interned data without SEQ_NEEDS_INCREMENTAL_STATE");
    }
    if (td) {
      std::vector<PbField> f, sub;
      pb_parse(td->b, &f);
      Descriptor desc;
      for (const PbField& x : f) {
        if (x.num == 1) desc.uuid = x.v;
        if (x.num == 5) desc.parent = x.v;
        if (x.num == 2) desc.name = x.b;
        if (x.num == 14) desc.description = x.b;
        if (x.num == 3) {
          desc.process = true;
          pb_parse(x.b, &sub);
          for (const PbField& y : sub) {
            if (y.num == 1) desc.pid = static_cast<int64_t>(y.v);
            if (y.num == 6) desc.process_name = y.b;
          }
        }
        if (x.num == 8) {
          desc.counter = true;
          pb_parse(x.b, &sub);
          for (const PbField& y : sub)
            if (y.num == 6) desc.unit_name = y.b;
        }
      }
      d.descs.push_back(desc);
    }
    if (te) {
      std::vector<PbField> f, sub;
      pb_parse(te->b, &f);
      TraceEvent ev;
      ev.ts = ts;
      ev.order = d.events.size();
      for (const PbField& x : f) {
        if (x.num == 9) ev.type = static_cast<uint32_t>(x.v);
        if (x.num == 11) ev.track = x.v;
        if (x.num == 47) ev.flows.push_back(x.v);
        if (x.num == 48) ev.flow_ends.push_back(x.v);
        if (x.num == 23) ev.name = x.b;
        if (x.num == 10) {
          const auto it = event_names.find(x.v);
          if (it == event_names.end())
            d.bad("event name iid used before its definition");
          else
            ev.name = it->second;
          if (!(flags & 2)) d.bad("interned name used without SEQ_NEEDS_INCREMENTAL_STATE");
        }
        if (x.num == 30) {
          ev.has_int = true;
          ev.ivalue = static_cast<int64_t>(x.v);
        }
        if (x.num == 44) {
          ev.has_double = true;
          ev.dvalue = as_double(x.v);
        }
        if (x.num == 4) {
          pb_parse(x.b, &sub);
          std::string name, value;
          for (const PbField& y : sub) {
            if (y.num == 1) {
              const auto it = arg_names.find(y.v);
              if (it == arg_names.end())
                d.bad("annotation iid used before its definition");
              else
                name = it->second;
            }
            if (y.num == 2) value = y.v ? "true" : "false";
            if (y.num == 3) value = std::to_string(y.v);
            if (y.num == 5) value = std::to_string(as_double(y.v));
            if (y.num == 6) value = y.b;
          }
          ev.args[name] = value;
        }
      }
      d.events.push_back(ev);
    }
  }
  // Every event's track is described in this file; parents come before children.
  std::set<uint64_t> known;
  for (const Descriptor& x : d.descs) {
    if (x.parent && !known.count(x.parent)) d.bad("a track's parent is described after it");
    known.insert(x.uuid);
  }
  for (const TraceEvent& e : d.events)
    if (!known.count(e.track)) d.bad("an event on a track this file does not describe");
  return d;
}

// What the trace processor would do with the slices: sort all events by
// (ts, file order) and replay each track's BEGIN/END. Reports tracks where an
// END does not close a BEGIN, or slices nest (lanes must never overlap).
std::string check_tracks(const Decoded& d) {
  std::vector<const TraceEvent*> ev;
  for (const TraceEvent& e : d.events) ev.push_back(&e);
  std::stable_sort(ev.begin(), ev.end(),
                   [](const TraceEvent* a, const TraceEvent* b) { return a->ts < b->ts; });
  std::map<uint64_t, int> open;
  for (const TraceEvent* e : ev) {
    if (e->type == 1 && open[e->track]++ > 0) return "nested slices on one track";
    if (e->type == 2 && open[e->track]-- != 1) return "END without BEGIN";
  }
  for (const auto& kv : open)
    if (kv.second != 0) return "unclosed slice";
  return "";
}

}  // namespace fabtrace::test
