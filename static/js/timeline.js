/*
 * TraceTrack timeline viewer — vendored, plain ES2020, no build step, no dependencies.
 *
 *   const viewer = TraceTimeline.mount(container, timelineData, {height: 520});
 *     options: height (the most px of the timeline canvas; it is as tall as its expanded rows,
 *     at least 200), details: false (no built-in details panel — listen to "select" instead),
 *     legend: false (no key legend), utilisation: false (no busy strips under the GPU/NCCL
 *     streams), measureRaster (bench only)
 *   viewer.zoomTo(t0_us, t1_us); viewer.getView() -> {t0, t1}
 *   viewer.highlight([{rank, row, start_us, end_us, label}]); viewer.clearHighlight();
 *     (every span is drawn; labels are laid out in lanes so no two overlap: highlightLayout())
 *   viewer.setRange(t0, t1, [rowIndex…]); viewer.getRange(); viewer.getAggregate()
 *     -> {t0, t1, dur, slices, names: [{name, count, total, mean, max, share}],
 *         rows: [{row, name, rank, busy, idle, busyShare, count, median, exposed?}]}   (µs;
 *         total/share inside the range; count/median: the row's top-level slices overlapping it
 *         and their median whole duration; exposed: an NCCL row's busy time while its rank's
 *         compute stream is idle)
 *   viewer.utilisation(rowIndex) -> {busy, columns}; viewer.find(q) -> count; viewer.findNext(±1);
 *   viewer.longestKernel(); viewer.pinRow(rowIndex, on?); viewer.pinnedRows()
 *   viewer.on("select", cb)  // cb({name, start, dur, end, row, rowKind, rowIndex, rank, cat, corr, depth, args, index})
 *   viewer.on("range", cb)   // cb({t0, t1, dur, rows})
 *   viewer.on("view", cb)    // cb({t0, t1}) after every zoom or pan (keeps two viewers in step)
 *   viewer.destroy();
 *
 * Data format: docs/contracts.md §2 (columnar; times in µs from the trace start).
 *
 * Rendering: two stacked canvases (slices underneath; hover, selection, range and highlights on
 * top). Slices are split per (row, depth) into "lanes" of sorted typed arrays when mounted; each
 * frame binary-searches the visible window of every visible lane, merges sub-pixel slices into
 * device-pixel columns painted in the category that covers most of each column's time, batches
 * fillRect by colour, and only labels slices wider than TEXT_MIN_PX. GPU/NCCL rows carry a strip of
 * their busy fraction per pixel column. Redraws are coalesced with requestAnimationFrame.
 *
 * Mouse/keys (Perfetto-like):
 *   The keys work while the pointer is over the timeline (no click needed, as in Perfetto) or
 *   when it has the keyboard focus.
 *   W/S zoom in/out (around the mouse, else the centre) · A/D pan · wheel or ctrl+wheel zoom ·
 *   shift+wheel pan · wheel over the labels scrolls rows · drag on the timeline selects a time
 *   range (snaps to slice edges within a few px; hold Alt to not snap) · Space+drag or middle-drag
 *   pans · click a slice for details · ↑/↓ move the row cursor, Enter folds a rank / picks a slice ·
 *   ←/→ previous/next slice in the row · F zooms to the selection · M marks the selected slice as
 *   the range · 0 / Home shows everything · Esc clears the range, then the selection ·
 *   L longest GPU kernel, compute or NCCL (in the range and its rows, if any) · P pins the row
 *   under the pointer · / find by name.
 *   Dragging across rows selects them too (from the axis: every row) → the range table.
 * Touch: one finger drags (pan, scroll rows), two fingers pinch-zoom, a tap selects.
 */
(function (global) {
  'use strict';

  const AXIS_H = 30;
  const HEADER_H = 26;
  const LANE_H = 18;
  const UTIL_H = 16; // the utilisation strip under each GPU / NCCL stream
  const ROW_PAD = 3;
  const MIN_H = 200; // the shortest stage, in px
  const SB_W = 10;
  const PIN_W = 16;
  const LABEL_H = 16; // an evidence label's box // the pin toggle at the right end of a row's label
  const TEXT_MIN_PX = 30;
  const DRAG_PX = 4;
  const SNAP_PX = 6;
  const ZOOM_STEP = 0.8;
  const PAN_STEP = 0.125;
  const MIN_SPAN = 0.05; // µs
  const FAMILY = 'system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", Arial, sans-serif';
  const FONT = '11px ' + FAMILY;
  const FONT_B = '600 11px ' + FAMILY;
  const FONT_H = '600 12px ' + FAMILY;

  const TH = {
    bg: '#ffffff', rowAlt: '#f6f8fa', label: '#f0f2f5', labelText: '#1f2328', muted: '#4f5863',
    header: '#e3e7ec', headerHi: '#d5dbe3', sep: '#c9d1d9', grid: 'rgba(31,35,40,0.07)',
    axisBg: '#fbfcfd', axisText: '#2f353d', tick: '#8c959f', focus: '#0969da',
    range: 'rgba(9,105,218,0.10)', rangeRows: 'rgba(9,105,218,0.16)', rangeEdge: '#0969da', hlFill: 'rgba(255,166,0,0.20)',
    hlEdge: '#b35900', sel: '#0d1117', flow: '#cf222e', hover: 'rgba(13,17,23,0.85)',
    util: '#3b6e8f', utilBg: '#e6ebf0',
    thumb: 'rgba(31,35,40,0.30)', sbTrack: 'rgba(31,35,40,0.06)', pinSep: '#8c959f', pin: '#0969da', match: '#ffd60a', matchEdge: '#1f2328',
  };

  // Category hues (H, S%, L%); text colour is chosen per shade for contrast.
  const CAT_HSL = {
    user_annotation: [262, 40, 50],
    cpu_op: [211, 58, 44],
    cuda_runtime: [38, 85, 56],
    kernel: [145, 58, 33],
    gpu_memcpy: [6, 62, 47],
    gpu_memset: [28, 55, 40],
    nccl: [328, 62, 44],
    dataloader: [186, 58, 32],
  };
  const CAT_LABEL = {
    user_annotation: 'annotation', cpu_op: 'CPU op', cuda_runtime: 'CUDA runtime', kernel: 'kernel',
    gpu_memcpy: 'memcpy', gpu_memset: 'memset', nccl: 'NCCL', dataloader: 'dataloader',
  };
  const SHADES = [0, 7, -6];
  const KIND_LABEL = { cpu: 'CPU', dataloader: 'dataloader', cuda_api: 'CUDA API', gpu: 'GPU stream', nccl: 'NCCL stream' };

  // ---------------------------------------------------------------- helpers
  // ROCm traces name their runtime rows "HIP API"; the kind label follows the row's own name
  function kindLabel(row) {
    if (row.kind === 'cuda_api' && /^HIP API/.test(row.name)) return 'HIP API';
    return KIND_LABEL[row.kind] || row.kind;
  }
  function hsl2rgb(h, s, l) {
    s /= 100; l /= 100;
    const a = s * Math.min(l, 1 - l);
    const f = (n) => {
      const k = (n + h / 30) % 12;
      return Math.round(255 * (l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
    };
    return [f(0), f(8), f(4)];
  }
  function luminance(rgb) {
    const c = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * c(rgb[0]) + 0.7152 * c(rgb[1]) + 0.0722 * c(rgb[2]);
  }
  function strHash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return h >>> 0;
  }
  function trimZeros(s) { return s.indexOf('.') >= 0 ? s.replace(/\.?0+$/, '') : s; }
  /** Duration / time in µs → "40.2 µs", "1.2345 ms", "1.234567 s". */
  function fmtDur(us) {
    const a = Math.abs(us);
    if (a < 1e3) return trimZeros(us.toFixed(3)) + ' µs';
    if (a < 1e6) return trimZeros((us / 1e3).toFixed(4)) + ' ms';
    return trimZeros((us / 1e6).toFixed(6)) + ' s';
  }
  /** A fraction as "14 %", "0.4 %", "100 %". */
  function fmtPct(f) {
    const p = f * 100;
    if (p === 0) return '0 %';
    if (p < 1) return p.toFixed(1) + ' %';
    if (p > 99 && p < 100) return p.toFixed(1) + ' %';
    return Math.round(p) + ' %';
  }
  /** µs → a number of ms with sensible precision: 123.4, 12.34, 1.234, 0.123, 0.0123. */
  function fmtMs(us) {
    const v = us / 1e3, a = Math.abs(v);
    if (a === 0) return '0';
    if (a >= 100) return v.toFixed(1);
    if (a >= 10) return v.toFixed(2);
    if (a >= 0.1) return v.toFixed(3);
    return v.toFixed(4);
  }
  function fmtBytes(b) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let v = b, i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (i ? v.toFixed(2) : String(v)) + ' ' + u[i];
  }
  function fmtNum(v) { return typeof v === 'number' ? v.toLocaleString('en-US') : String(v); }
  function fmtArg(k, v) {
    if (Array.isArray(v)) return v.every((x) => typeof x === 'number') ? v.join(' × ') : JSON.stringify(v);
    if (v !== null && typeof v === 'object') return JSON.stringify(v);
    if (typeof v === 'number' && /bytes/i.test(k) && Math.abs(v) >= 1024) return fmtNum(v) + ' (' + fmtBytes(v) + ')';
    return fmtNum(v);
  }
  // Columns → typed arrays. The typed-array constructor copies a plain array of numbers natively
  // (much faster than an element loop on 200k slices); NaN (a non-number) becomes 0.
  function toF64(a, n) {
    if (a && a.length === n) {
      const o = new Float64Array(a);
      for (let i = 0; i < n; i++) if (o[i] !== o[i]) o[i] = 0;
      return o;
    }
    const o = new Float64Array(n); if (a) for (let i = 0; i < n; i++) o[i] = +a[i] || 0; return o;
  }
  function toI32(a, n) {
    if (a && a.length === n) return new Int32Array(a);
    const o = new Int32Array(n); if (a) for (let i = 0; i < n; i++) o[i] = a[i] | 0; return o;
  }
  /** First index j in sorted `arr` with arr[j] > v (arr.length if none). */
  function upper(arr, v, lo, hi) {
    lo = lo || 0; hi = hi === undefined ? arr.length : hi;
    while (lo < hi) { const m = (lo + hi) >>> 1; if (arr[m] > v) hi = m; else lo = m + 1; }
    return lo;
  }
  /** First index j with arr[j] >= v. */
  function lower(arr, v, lo, hi) {
    lo = lo || 0; hi = hi === undefined ? arr.length : hi;
    while (lo < hi) { const m = (lo + hi) >>> 1; if (arr[m] >= v) hi = m; else lo = m + 1; }
    return lo;
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // ---------------------------------------------------------------- data preparation
  function prepare(data) {
    const S = data.slices || {};
    const n = (S.ts || []).length;
    const names = data.names || [];
    const cats = data.cats || [];
    const rowA = toI32(S.row, n), depA = toI32(S.depth, n), nameA = toI32(S.name, n), catA = toI32(S.cat, n);
    const tsA = toF64(S.ts, n), durA = toF64(S.dur, n), corrA = toF64(S.corr, n);
    const rowsIn = data.rows || [];
    const nRows = rowsIn.length;

    // palette: 3 shades per category, colour index = cat * 3 + shade
    const palette = [];
    for (let c = 0; c < Math.max(1, cats.length); c++) {
      const key = cats[c] || 'other';
      const hsl = CAT_HSL[key] || [strHash(key) % 360, 40, 42];
      for (const d of SHADES) {
        const rgb = hsl2rgb(hsl[0], hsl[1], Math.max(18, Math.min(80, hsl[2] + d)));
        const L = luminance(rgb);
        const onWhite = 1.05 / (L + 0.05), onDark = (L + 0.05) / 0.0555;
        palette.push({ fill: 'rgb(' + rgb.join(',') + ')', text: onWhite >= onDark ? '#ffffff' : '#111418' });
      }
    }
    const shadeOfName = new Uint8Array(names.length);
    for (let i = 0; i < names.length; i++) shadeOfName[i] = strHash(String(names[i])) % 3;

    const maxD = new Int32Array(nRows);
    for (let i = 0; i < n; i++) {
      const r = rowA[i];
      if (r < 0 || r >= nRows) continue;
      if (depA[i] < 0) depA[i] = 0;
      if (depA[i] + 1 > maxD[r]) maxD[r] = depA[i] + 1;
    }
    const rows = rowsIn.map((r, i) => ({
      index: i, rank: r.rank, kind: r.kind || '', name: r.name || '', lanes: [],
      nLanes: Math.max(1, r.depth | 0, maxD[i]), y: 0, h: 0, visible: true,
    }));
    const laneBase = new Int32Array(nRows + 1);
    for (let r = 0; r < nRows; r++) laneBase[r + 1] = laneBase[r] + rows[r].nLanes;
    const nL = laneBase[nRows];
    // lane of every slice (-1: no row), then one flat typed array per field with each lane a
    // contiguous slice of it (few allocations, monomorphic loops)
    const laneOf = new Int32Array(n);
    const cnt = new Int32Array(nL + 1);
    for (let i = 0; i < n; i++) {
      const r = rowA[i];
      if (r < 0 || r >= nRows) { laneOf[i] = -1; continue; }
      const l = laneBase[r] + depA[i];
      laneOf[i] = l; cnt[l + 1]++;
    }
    for (let l = 0; l < nL; l++) cnt[l + 1] += cnt[l];
    const m0 = cnt[nL];
    const fTs = new Float64Array(m0), fEnd = new Float64Array(m0), fPmax = new Float64Array(m0);
    const fIdx = new Int32Array(m0), fCol = new Uint16Array(m0), fBase = new Uint16Array(m0);
    const at = cnt.slice(0, nL);
    const nCats = cats.length;
    for (let i = 0; i < n; i++) {
      const l = laneOf[i];
      if (l < 0) continue;
      const j = at[l]++;
      const t = tsA[i], d = durA[i];
      fTs[j] = t; fEnd[j] = d > 0 ? t + d : t; fIdx[j] = i;
      const ci = catA[i], c = ci >= 0 && ci < nCats ? ci : 0;
      fBase[j] = c * 3; fCol[j] = c * 3 + (shadeOfName[nameA[i]] | 0);
    }
    const lanes = [];
    for (let l = 0; l < nL; l++) {
      const a = cnt[l], b = cnt[l + 1];
      lanes.push({
        ts: fTs.subarray(a, b), end: fEnd.subarray(a, b), pmax: fPmax.subarray(a, b),
        idx: fIdx.subarray(a, b), col: fCol.subarray(a, b), base: fBase.subarray(a, b), n: b - a,
      });
    }
    for (const L of lanes) {
      let sorted = true;
      for (let j = 1; j < L.n; j++) if (L.ts[j] < L.ts[j - 1]) { sorted = false; break; }
      if (!sorted) {
        const order = Array.from(L.idx.keys()).sort((a, b) => L.ts[a] - L.ts[b]);
        for (const k of ['ts', 'end', 'idx', 'col', 'base']) { const old = L[k].slice(); order.forEach((o, j) => { L[k][j] = old[o]; }); }
      }
      let m = -Infinity;
      for (let j = 0; j < L.n; j++) { if (L.end[j] > m) m = L.end[j]; L.pmax[j] = m; }
    }
    for (let r = 0; r < nRows; r++) for (let d = 0; d < rows[r].nLanes; d++) rows[r].lanes.push(lanes[laneBase[r] + d]);

    // ranks, in the order given (then any rank only named by rows)
    const ranks = [];
    const rankBy = new Map();
    for (const rk of data.ranks || []) {
      const R = { rank: rk.rank, label: rk.label || 'rank ' + rk.rank, rows: [], collapsed: false, y0: 0, y1: 0 };
      ranks.push(R); rankBy.set(rk.rank, R);
    }
    for (const row of rows) {
      let R = rankBy.get(row.rank);
      if (!R) { R = { rank: row.rank, label: 'rank ' + row.rank, rows: [], collapsed: false, y0: 0, y1: 0 }; ranks.push(R); rankBy.set(row.rank, R); }
      R.rows.push(row); row.R = R;
    }
    let span = data.span;
    if (!span || !(span[1] > span[0])) {
      let a = Infinity, b = -Infinity;
      for (let i = 0; i < n; i++) { if (tsA[i] < a) a = tsA[i]; if (tsA[i] + durA[i] > b) b = tsA[i] + durA[i]; }
      span = n ? [a, b > a ? b : a + 1] : [0, 1];
    }
    return { n, names, cats, rowA, depA, nameA, catA, tsA, durA, corrA, rows, ranks, rankBy, palette, span: [+span[0], +span[1]], args: data.args || {} };
  }

  // ---------------------------------------------------------------- the viewer
  function mount(container, data, opts) {
    const tMount = performance.now();
    opts = opts || {};
    const D = prepare(data);
    const tPrep = performance.now();
    const showUtil = opts.utilisation !== false;
    const hasUtil = (row) => showUtil && (row.kind === 'gpu' || row.kind === 'nccl');
    const rowH = (row) => row.nLanes * LANE_H + 2 * ROW_PAD + (hasUtil(row) ? UTIL_H : 0);
    // The stage is as tall as its rows with every rank expanded, between MIN_H and opts.height
    // (the most; it scrolls past that): a one-rank trace leaves no empty band under its rows,
    // and folding a rank does not move the page under the pointer.
    let rowsH = AXIS_H + 4;
    for (const R of D.ranks) { rowsH += HEADER_H; for (const row of R.rows) rowsH += rowH(row); }
    const height = Math.min(Math.max(MIN_H, opts.height || 520), Math.max(MIN_H, rowsH));
    const listeners = { select: [], range: [], view: [] };
    const stats = { prepMs: tPrep - tMount, firstRenderMs: 0, frames: [], drawMs: [], frameCount: 0, lastRects: 0, lastTexts: 0 };

    // ---- DOM
    const root = el('div', 'tt-root');
    const toolbar = el('div', 'tt-toolbar');
    const btn = (label, title, fn) => { const b = el('button', 'tt-btn', label); b.type = 'button'; b.title = title; b.setAttribute('aria-label', title); b.addEventListener('click', fn); return b; };
    const bIn = btn('+', 'Zoom in (W)', () => zoomBy(ZOOM_STEP));
    const bOut = btn('−', 'Zoom out (S)', () => zoomBy(1 / ZOOM_STEP));
    const bFit = btn('Fit', 'Show the whole trace (0)', () => fit());
    const bFold = btn('Collapse all', 'Collapse or expand every rank', () => {
      const any = D.ranks.some((R) => !R.collapsed);
      for (const R of D.ranks) R.collapsed = any;
      relayout(); bFold.textContent = any ? 'Expand all' : 'Collapse all';
    });
    const readout = el('div', 'tt-readout');
    readout.setAttribute('aria-live', 'polite');
    const viewOut = el('span', 'tt-view');
    const rangeOut = el('span', 'tt-range-out');
    readout.append(viewOut, rangeOut);
    // each readout keeps one text node whose data is rewritten only when the text changes:
    // replacing the node (textContent) on every frame costs a relayout and repaint per frame
    const viewText = document.createTextNode(''), rangeText = document.createTextNode('');
    viewOut.append(viewText); rangeOut.append(rangeText);
    const catList = el('span', 'tt-cats');
    catList.setAttribute('aria-label', 'Colours by category');
    // find slices by name; jump to the longest kernel
    const findBox = el('div', 'tt-find');
    findBox.setAttribute('role', 'search');
    const search = el('input', 'tt-search');
    search.type = 'search';
    search.placeholder = 'Find slices by name';
    search.setAttribute('aria-label', 'Find slices by name (Enter: next match, Shift+Enter: previous)');
    search.spellcheck = false;
    search.autocomplete = 'off';
    const matchOut = el('span', 'tt-match-count');
    matchOut.setAttribute('aria-live', 'polite');
    const bPrev = btn('‹', 'Previous match (Shift+Enter)', () => stepMatch(-1));
    const bNext = btn('›', 'Next match (Enter)', () => stepMatch(1));
    findBox.append(search, matchOut, bPrev, bNext);
    const bLong = btn('Longest kernel', 'Select and zoom to the longest kernel on the GPU, compute or NCCL — in the selected range and rows, if any; select a compute row for its longest compute kernel (L)', () => longestKernel());
    bLong.classList.add('tt-longest');
    // touch: a drag pans unless "Select" is on, then it selects a range (and rows) like a mouse drag
    let touchSelect = false;
    const bSel = btn('Select', 'Touch: drag to select a range (instead of panning)', () => {
      touchSelect = !touchSelect;
      bSel.setAttribute('aria-pressed', String(touchSelect));
    });
    bSel.classList.add('tt-touch-select');
    bSel.setAttribute('aria-pressed', 'false');
    toolbar.append(bIn, bOut, bFit, bFold, bSel, findBox, bLong, readout);

    const legend = el('div', 'tt-legend');
    const keys = [
      ['W', 'S', 'zoom'], ['A', 'D', 'pan'], ['Wheel', 'zoom'], ['⇧Wheel', 'pan'], ['Drag', 'measure'],
      ['Space+drag', 'pan'], ['Click', 'details'], ['↑', '↓', 'rows'], ['Enter', 'fold'], ['←', '→', 'slices'],
      ['F', 'fit'], ['M', 'measure slice'], ['⇧M', 'on every row'], ['L', 'longest kernel'], ['P', 'pin row'], ['/', 'find'], ['Esc', 'clear'],
    ];
    const keyList = el('span', 'tt-keys');
    for (const k of keys) {
      const item = el('span', 'tt-key');
      for (let i = 0; i < k.length - 1; i++) item.append(el('kbd', null, k[i]));
      item.append(document.createTextNode(' ' + k[k.length - 1]));
      keyList.append(item);
    }
    const hoverHint = el('span', 'tt-hover-hint', 'Keys work while the pointer is over the timeline — no click needed');
    keyList.prepend(hoverHint);
    keyList.append(el('span', 'tt-touch-hint', 'Touch: drag to pan, pinch to zoom, tap a slice for details'));
    keyList.title = 'Wheel over the row labels (or the scrollbar, PageUp/PageDown) scrolls the rows; hold Alt while dragging to not snap to slice edges';
    const catUsed = new Uint8Array(Math.max(1, D.cats.length));
    for (let i = 0; i < D.n; i++) { const c = D.catA[i]; if (c >= 0 && c < catUsed.length) catUsed[c] = 1; }
    [...catUsed.keys()].filter((c) => catUsed[c]).forEach((c) => {
      const item = el('span', 'tt-cat');
      const sw = el('span', 'tt-swatch'); sw.style.background = D.palette[c * 3] ? D.palette[c * 3].fill : '#888';
      item.append(sw, document.createTextNode(CAT_LABEL[D.cats[c]] || D.cats[c] || 'other'));
      catList.append(item);
    });
    legend.append(keyList, catList);

    const stage = el('div', 'tt-stage');
    stage.style.height = height + 'px';
    const base = el('canvas', 'tt-base');
    base.setAttribute('aria-hidden', 'true');
    const over = el('canvas', 'tt-canvas');
    over.tabIndex = 0;
    over.setAttribute('role', 'application');
    over.setAttribute('aria-roledescription', 'trace timeline');
    over.setAttribute('aria-label', 'Trace timeline. W and S zoom, A and D pan, arrow keys move between rows and slices, M measures the selected slice, Shift+M its time on every row, Enter folds a rank, Escape clears.');
    const tip = el('div', 'tt-tooltip');
    tip.hidden = true;
    tip.setAttribute('role', 'tooltip');
    stage.append(base, over, tip);

    const aggBox = el('section', 'tt-agg');
    aggBox.setAttribute('aria-label', 'Selected range: slices by name and rows busy/idle');
    aggBox.hidden = true;
    const details = el('section', 'tt-details');
    details.setAttribute('aria-label', 'Slice details');
    details.setAttribute('aria-live', 'polite');
    const live = el('div', 'tt-sr');
    live.setAttribute('aria-live', 'polite');

    root.append(toolbar);
    if (opts.legend !== false) root.append(legend);
    root.append(stage);
    root.append(aggBox);
    if (opts.details !== false) root.append(details); // hosts with their own panel pass {details: false}
    root.append(live);
    container.append(root);

    const bctx = base.getContext('2d', { alpha: false });
    const octx = over.getContext('2d');

    // ---- state
    let cssW = 0, dpr = 1;
    let t0 = D.span[0], t1 = D.span[1];
    let scrollY = 0, contentH = 0;
    let items = [];
    let hover = -1, selected = -1, hoverLabelRow = -1;
    let range = null; // {t0, t1, rows: [row index]}
    let agg = null; // the aggregate table of the range (computed once when the range is set)
    let drag = null;
    let highlights = [];
    let hlDrawn = [], hlLabels = []; // what the last overlay frame drew for the evidence
    let cursor = 0; // index into items (keyboard row cursor)
    let hasFocus = false, spaceHeld = false;
    let mouse = null; // {x, y} inside the stage
    let pointerIn = false; // the pointer is over the timeline: the keys work without a click
    let dirtyBase = true, dirtyOver = true, raf = 0, destroyed = false;
    let corrIndex = null;
    const pinned = new Set(); // row indices, in pinning order
    let mName = null; // Uint8Array over names: 1 where the name matches the search
    let matches = new Int32Array(0), matchPos = -1; // matching slices in time order; the current one
    const mRects = []; let mN = 0; // match marks collected while drawing (x, y, w, h)*
    let nPinned = 0, pinH = 0;
    let utilBuf = new Float64Array(2048);

    // label column width from the longest label
    bctx.font = FONT_B;
    let labelW = 150;
    for (const row of D.rows) labelW = Math.max(labelW, bctx.measureText(row.name).width + 34);
    for (const R of D.ranks) labelW = Math.max(labelW, bctx.measureText(R.label).width + 90);
    labelW = Math.min(260, Math.ceil(labelW));
    const labelFullW = labelW;

    const nameW = new Float32Array(D.names.length).fill(-1);
    const truncCache = new Map();
    let ellW = 0;

    // ---- geometry
    const trackX0 = () => labelW;
    const trackX1 = () => cssW - SB_W;
    const trackW = () => Math.max(1, trackX1() - trackX0());
    const bodyH = () => height - AXIS_H;
    const scale = () => trackW() / (t1 - t0);
    const tx = (t) => trackX0() + (t - t0) * scale();
    const xt = (x) => t0 + (x - trackX0()) / scale();
    // Pinned rows (items [0, nPinned)) stay at the top, in a band pinH tall under the axis;
    // the other items scroll under them. Item y is relative to its own band.
    const scrollH = () => Math.max(1, bodyH() - pinH);
    const maxScroll = () => Math.max(0, contentH - scrollH());
    const itemTop = (it) => (it.fixed ? AXIS_H + it.y : AXIS_H + pinH + it.y - scrollY);
    const rowTop = (row) => (row.pinned ? AXIS_H + row.y : AXIS_H + pinH + row.y - scrollY);
    const rankTop = (R) => AXIS_H + pinH + R.y0 - scrollY;

    function relayout() {
      items = [];
      let y = 0;
      for (const row of D.rows) row.pinned = pinned.has(row.index);
      for (const ri of pinned) {
        const row = D.rows[ri];
        row.visible = true; row.y = y; row.h = rowH(row);
        items.push({ type: 'row', row, R: row.R, y, h: row.h, fixed: true });
        y += row.h;
      }
      nPinned = items.length;
      // at most half the body for pinned rows
      pinH = Math.min(y, Math.floor(bodyH() / 2));
      y = 0;
      for (const R of D.ranks) {
        R.y0 = y;
        items.push({ type: 'rank', R, y, h: HEADER_H });
        y += HEADER_H;
        for (const row of R.rows) {
          if (row.pinned) continue;
          row.visible = !R.collapsed;
          if (R.collapsed) continue;
          row.y = y; row.h = rowH(row);
          items.push({ type: 'row', row, R, y, h: row.h });
          y += row.h;
        }
        R.y1 = y;
      }
      contentH = y;
      scrollY = Math.min(Math.max(0, scrollY), maxScroll());
      if (cursor >= items.length) cursor = items.length - 1;
      invalidate(true);
    }
    function itemAtContentY(cy) {
      let lo = nPinned, hi = items.length - 1;
      if (hi < lo || cy < 0 || cy >= contentH) return null;
      while (lo < hi) { const m = (lo + hi + 1) >>> 1; if (items[m].y <= cy) lo = m; else hi = m - 1; }
      return items[lo];
    }

    function resize() {
      dpr = Math.max(1, global.devicePixelRatio || 1);
      cssW = Math.max(200, Math.floor(stage.clientWidth || container.clientWidth || 960));
      // a narrow label column on narrow screens (a phone): about a quarter of the width
      labelW = cssW < 700 ? Math.min(labelFullW, Math.max(84, Math.round(cssW * 0.26))) : labelFullW;
      for (const c of [base, over]) {
        c.width = Math.round(cssW * dpr); c.height = Math.round(height * dpr);
        c.style.width = cssW + 'px'; c.style.height = height + 'px';
      }
      truncCache.clear();
      scrollY = Math.min(scrollY, maxScroll());
      dirtyBase = dirtyOver = true;
      render();
    }

    // ---- view changes
    function setView(a, b, silent) {
      const total = D.span[1] - D.span[0];
      const pad = total * 0.02;
      let span = Math.min(Math.max(b - a, MIN_SPAN), total + 2 * pad);
      let c = (a + b) / 2;
      if (!(span > 0) || !isFinite(c)) return;
      a = c - span / 2; b = c + span / 2;
      if (a < D.span[0] - pad) { b += D.span[0] - pad - a; a = D.span[0] - pad; }
      if (b > D.span[1] + pad) { a -= b - (D.span[1] + pad); b = D.span[1] + pad; }
      t0 = Math.max(a, D.span[0] - pad); t1 = b;
      if (!silent) { invalidate(true); emit('view', { t0, t1 }); }
    }
    function anchorTime() {
      if (mouse && mouse.x >= trackX0() && mouse.x < trackX1()) return xt(mouse.x);
      return (t0 + t1) / 2;
    }
    function zoomBy(f, at) {
      const a = at === undefined ? anchorTime() : at;
      setView(a - (a - t0) * f, a + (t1 - a) * f);
    }
    function panBy(dt) { setView(t0 + dt, t1 + dt); }
    function fit() { setView(D.span[0], D.span[1]); }
    function scrollTo(y) { scrollY = Math.min(Math.max(0, y), maxScroll()); invalidate(true); }

    function invalidate(all) {
      if (all) dirtyBase = true;
      dirtyOver = true;
      if (!raf && !destroyed) raf = requestAnimationFrame(() => { raf = 0; render(); });
    }
    function render() {
      if (destroyed) return;
      const s = performance.now();
      let d = 0;
      if (dirtyBase) { drawBase(); dirtyBase = false; d = performance.now() - s; }
      if (dirtyOver) { drawOver(); dirtyOver = false; }
      if (opts.measureRaster) { bctx.getImageData(0, 0, 1, 1); octx.getImageData(0, 0, 1, 1); }
      const ms = performance.now() - s;
      stats.frameCount++;
      stats.frames.push(ms); stats.drawMs.push(d);
      if (stats.frames.length > 1000) { stats.frames.splice(0, 500); stats.drawMs.splice(0, 500); }
      updateReadout();
    }

    // ---- base drawing (slices, labels, axis)
    const buckets = []; // per colour: Float32Array [x, y, w, h]*
    const bucketN = [];
    const texts = [];
    function bPush(c, x, y, w, h) {
      let a = buckets[c];
      if (!a) { a = buckets[c] = new Float32Array(4096); bucketN[c] = 0; }
      const m = bucketN[c] * 4;
      if (m + 4 > a.length) { const b = new Float32Array(a.length * 2); b.set(a); a = buckets[c] = b; }
      a[m] = x; a[m + 1] = y; a[m + 2] = w; a[m + 3] = h;
      bucketN[c]++;
      return m;
    }

    // Per-category weights of the device-pixel column being merged (sub-pixel slices): the column
    // is painted with the category that covers most of its time, never simply the first slice's.
    const colW = new Float64Array(Math.max(1, D.cats.length));
    const touched = new Int32Array(Math.max(1, D.cats.length) * 2);
    function drawLane(L, y, h, withText) {
      const n = L.n;
      if (!n) return;
      const k = scale(), o = trackX0() - t0 * k;
      const cl = trackX0(), cr = trackX1();
      const ts = L.ts, end = L.end, base = L.base;
      let j = upper(L.pmax, t0);
      let covered = -1e9; // device-pixel column up to which this lane is painted (exclusive)
      let cur = -1e9; // device-pixel column whose weights are pending in colW
      let lastC = -1, lastM = -1, lastX = 0, lastEnd = -1e9; // the rect painted last (to extend)
      let lastMark = -1e9; // device-pixel column of the last search mark in this lane
      let bc = 0, bw = -1, nT = 0; // the leading category of the pending column; touched count
      const cw = colW, tch = touched, mNm = mName, nameA = D.nameA, idx = L.idx, nTch = touched.length;
      for (; j < n; j++) {
        const s = ts[j];
        if (s >= t1) break;
        const e = end[j];
        if (e <= t0) continue;
        let x0 = o + s * k, x1 = o + e * k;
        if (x0 < cl) x0 = cl;
        if (x1 > cr) x1 = cr;
        if (mNm !== null && mNm[nameA[idx[j]]]) {
          const mx = Math.floor(x0 * dpr);
          if (mx !== lastMark) { lastMark = mx; mRects[mN++] = x0; mRects[mN++] = y; mRects[mN++] = x1 - x0; mRects[mN++] = h; }
        }
        if (x1 - x0 < 1.5) {
          // narrow: split its time over the device-pixel columns it touches
          const d0 = x0 * dpr, d1 = Math.max(x1 * dpr, d0 + 1e-6);
          const cat = base[j] / 3;
          let px = Math.floor(d0);
          if (px < covered) { if (d1 <= covered) continue; px = covered; }
          if (px < cur) px = cur;
          for (; px < d1; px++) {
            if (px !== cur) {
              if (cur > -1e9) { // flush: paint column `cur` with its dominant category (extending the last rect if it matches)
              for (let q = 0; q < nT; q++) cw[tch[q]] = 0;
              nT = 0; bw = -1;
              const c = bc * 3;
              if (c === lastC && lastEnd === cur) buckets[c][lastM + 2] = (cur + 1) / dpr - lastX;
              else { lastX = cur / dpr; lastM = bPush(c, lastX, y, 1 / dpr, h); lastC = c; }
              lastEnd = cur + 1; covered = cur + 1; cur = -1e9;
            }
              cur = px;
            }
            const a = d0 > px ? d0 : px, b = d1 < px + 1 ? d1 : px + 1;
            if (cw[cat] === 0 && nT < nTch) tch[nT++] = cat;
            const w = (cw[cat] += b - a);
            if (w > bw) { bw = w; bc = cat; }
          }
        } else {
          const px0 = Math.floor(x0 * dpr);
          if (cur > -1e9 && cur < px0) { // flush: paint column `cur` with its dominant category (extending the last rect if it matches)
              for (let q = 0; q < nT; q++) cw[tch[q]] = 0;
              nT = 0; bw = -1;
              const c = bc * 3;
              if (c === lastC && lastEnd === cur) buckets[c][lastM + 2] = (cur + 1) / dpr - lastX;
              else { lastX = cur / dpr; lastM = bPush(c, lastX, y, 1 / dpr, h); lastC = c; }
              lastEnd = cur + 1; covered = cur + 1; cur = -1e9;
            }
          cur = -1e9; for (let q = 0; q < nT; q++) cw[tch[q]] = 0; nT = 0; bw = -1;
          const c = L.col[j];
          const px1 = Math.round(x1 * dpr);
          const p0 = Math.max(Math.round(x0 * dpr), covered > px0 ? covered : px0);
          const gap = px1 - p0 > 5 * dpr ? dpr : 0; // a one-pixel gap separates adjacent wide slices
          if (px1 - gap > p0) bPush(c, p0 / dpr, y, (px1 - gap - p0) / dpr, h);
          covered = px1; lastC = -1; lastEnd = -1e9;
          if (withText && x1 - x0 >= TEXT_MIN_PX) texts.push(idx[j], x0, x1 - x0, y + h / 2, c);
        }
      }
      if (cur > -1e9) { // flush: paint column `cur` with its dominant category (extending the last rect if it matches)
              for (let q = 0; q < nT; q++) cw[tch[q]] = 0;
              nT = 0; bw = -1;
              const c = bc * 3;
              if (c === lastC && lastEnd === cur) buckets[c][lastM + 2] = (cur + 1) / dpr - lastX;
              else { lastX = cur / dpr; lastM = bPush(c, lastX, y, 1 / dpr, h); lastC = c; }
              lastEnd = cur + 1; covered = cur + 1; cur = -1e9;
            }
    }

    /** Busy fraction of each CSS-pixel column of the track for `row` (union of its top-level
     *  slices), in utilBuf[0..cols); returns {cols, busy (µs in view), span (µs of trace in view)}. */
    function utilisation(row) {
      const W = Math.ceil(trackW());
      if (utilBuf.length < W + 2) utilBuf = new Float64Array(W + 2);
      const buf = utilBuf;
      buf.fill(0, 0, W + 2);
      const L = row.lanes[0];
      const k = scale();
      let busy = 0, upto = -Infinity;
      if (L && L.n) {
        const ts = L.ts, end = L.end, n = L.n;
        for (let j = upper(L.pmax, t0); j < n; j++) {
          let a = ts[j];
          if (a >= t1) break;
          let b = end[j];
          if (b <= upto) continue;
          if (a < upto) a = upto;
          upto = b;
          if (a < t0) a = t0;
          if (b > t1) b = t1;
          if (b <= a) continue;
          busy += b - a;
          const u0 = (a - t0) * k, u1 = (b - t0) * k;
          const c0 = Math.floor(u0), c1 = Math.floor(u1);
          if (c0 === c1) { buf[c0] += u1 - u0; continue; }
          buf[c0] += c0 + 1 - u0;
          for (let c = c0 + 1; c < c1 && c < W + 1; c++) buf[c] += 1;
          if (c1 < W + 2) buf[c1] += u1 - c1;
        }
      }
      const span = Math.max(0, Math.min(t1, D.span[1]) - Math.max(t0, D.span[0]));
      return { cols: W, busy, span };
    }
    function drawUtil(ctx, row, y) {
      // y: top of the strip. A filled area: the stream's busy fraction per pixel column.
      // (adds a sub-path to the current path; the caller fills all strips at once)
      const u = utilisation(row);
      const X0 = trackX0(), h = UTIL_H - 4, yb = y + UTIL_H - 2;
      ctx.moveTo(X0, yb);
      const buf = utilBuf;
      let prev = -1;
      for (let c = 0; c < u.cols; c++) {
        let f = buf[c];
        if (f > 1) f = 1;
        const yy = yb - f * h;
        if (yy !== prev) { ctx.lineTo(X0 + c, prev < 0 ? yb : prev); ctx.lineTo(X0 + c, yy); prev = yy; }
      }
      ctx.lineTo(X0 + u.cols, prev < 0 ? yb : prev);
      ctx.lineTo(X0 + u.cols, yb);
      ctx.closePath();
      row.utilView = u.span > 0 ? u.busy / u.span : 0;
    }

    function ticks() {
      const span = t1 - t0;
      const raw = (span * 110) / trackW();
      const p = Math.pow(10, Math.floor(Math.log10(raw)));
      let step = p;
      for (const m of [1, 2, 5, 10]) { if (m * p >= raw) { step = m * p; break; } }
      let unit = 'µs', div = 1;
      // unit from the step: 200 µs steps read "6.4 ms", not "6400 µs"
      if (step >= 1e5) { unit = 's'; div = 1e6; } else if (step >= 10) { unit = 'ms'; div = 1e3; }
      const dec = Math.max(0, Math.ceil(-Math.log10(step / div) - 1e-9));
      const out = [];
      const first = Math.ceil(t0 / step) * step;
      for (let t = first, i = 0; t <= t1 && i < 400; i++, t = first + i * step) out.push(t);
      return { out, step, unit, div, dec };
    }

    function drawBody(i0, i1, Y0, Y1, tk) {
      // items [i0, i1) clipped to the band [Y0, Y1): backgrounds, grid, slices, utilisation, names, labels
      const ctx = bctx;
      const X0 = trackX0(), W = trackW(), bh = Y1 - Y0;
      if (bh <= 0) return;
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, Y0, cssW, bh);
      ctx.clip();
      ctx.fillStyle = TH.bg;
      ctx.fillRect(0, Y0, cssW, bh);
      // row backgrounds
      for (let i = i0; i < i1; i++) {
        const it = items[i];
        const y = itemTop(it);
        if (y + it.h < Y0 || y > Y1) continue;
        if (it.type === 'rank') { ctx.fillStyle = TH.header; ctx.fillRect(0, y, cssW, it.h); }
        else if (it.row.index % 2) { ctx.fillStyle = TH.rowAlt; ctx.fillRect(X0, y, W, it.h); }
      }
      // grid
      ctx.fillStyle = TH.grid;
      for (const t of tk.out) ctx.fillRect(Math.round(tx(t) * dpr) / dpr, Y0, 1 / dpr, bh);
      // slices
      for (let c = 0; c < bucketN.length; c++) bucketN[c] = 0;
      texts.length = 0; // reused: no new array per frame
      mN = 0;
      for (let i = i0; i < i1; i++) {
        const it = items[i];
        const y = itemTop(it);
        if (y + it.h < Y0 || y > Y1) continue;
        if (it.type === 'row') {
          const row = it.row;
          for (let d = 0; d < row.nLanes; d++) {
            const ly = y + ROW_PAD + d * LANE_H;
            if (ly + LANE_H < Y0 || ly > Y1) continue;
            drawLane(row.lanes[d], ly, LANE_H - 2, true);
          }
        } else if (it.R.collapsed) {
          // collapsed rank: a thin summary strip per GPU/NCCL stream
          const minis = it.R.rows.filter((r) => r.kind === 'gpu' || r.kind === 'nccl');
          if (minis.length) {
            const sh = Math.max(2, Math.min(7, Math.floor((HEADER_H - 8) / minis.length)));
            minis.forEach((r, m) => { if (r.lanes[0]) drawLane(r.lanes[0], y + 4 + m * (sh + 1), sh, false); });
          }
        }
      }
      ctx.save();
      ctx.beginPath();
      ctx.rect(X0, Y0, W, bh);
      ctx.clip();
      let rects = 0;
      for (let c = 0; c < bucketN.length; c++) {
        const m = bucketN[c];
        if (!m) continue;
        rects += m;
        const a = buckets[c];
        ctx.fillStyle = D.palette[c] ? D.palette[c].fill : '#888';
        for (let q = 0; q < m * 4; q += 4) ctx.fillRect(a[q], a[q + 1], a[q + 2], a[q + 3]);
      }
      stats.lastRects = rects;
      if (showUtil) {
        ctx.fillStyle = TH.utilBg;
        let any = false;
        for (let i = i0; i < i1; i++) {
          const it = items[i];
          if (it.type !== 'row' || !hasUtil(it.row)) continue;
          const y = itemTop(it) + ROW_PAD + it.row.nLanes * LANE_H;
          if (y + UTIL_H < Y0 || y > Y1) continue;
          ctx.fillRect(X0, y + 2, W, UTIL_H - 4);
          any = true;
        }
        if (any) {
          ctx.beginPath();
          for (let i = i0; i < i1; i++) {
            const it = items[i];
            if (it.type !== 'row' || !hasUtil(it.row)) continue;
            const y = itemTop(it) + ROW_PAD + it.row.nLanes * LANE_H;
            if (y + UTIL_H < Y0 || y > Y1) continue;
            drawUtil(ctx, it.row, y);
          }
          ctx.fillStyle = TH.util;
          ctx.fill();
        }
      }
      // names on slices wide enough
      if (mN) {
        // search matches: a bright bar along the top and bottom, with a dark edge
        ctx.fillStyle = TH.match;
        for (let q = 0; q < mN; q += 4) {
          const w = Math.max(2, mRects[q + 2]);
          ctx.fillRect(mRects[q], mRects[q + 1] - 1, w, 4);
          ctx.fillRect(mRects[q], mRects[q + 1] + mRects[q + 3] - 3, w, 4);
        }
        ctx.fillStyle = TH.matchEdge;
        for (let q = 0; q < mN; q += 4) {
          const w = Math.max(2, mRects[q + 2]);
          ctx.fillRect(mRects[q], mRects[q + 1] + 3, 1, mRects[q + 3] - 6);
          if (w >= 4) ctx.fillRect(mRects[q] + w - 1, mRects[q + 1] + 3, 1, mRects[q + 3] - 6);
        }
      }
      stats.lastTexts = texts.length / 5;
      if (texts.length) {
        ctx.font = FONT;
        ctx.textBaseline = 'middle';
        if (!ellW) ellW = ctx.measureText('…').width;
        for (const pass of ['#ffffff', '#111418']) {
          ctx.fillStyle = pass;
          for (let q = 0; q < texts.length; q += 5) {
            const pc = D.palette[texts[q + 4]];
            if (!pc || pc.text !== pass) continue;
            const s = fitName(D.nameA[texts[q]], texts[q + 2] - 8);
            if (s) ctx.fillText(s, texts[q + 1] + 4, texts[q + 3] + 0.5);
          }
        }
      }
      ctx.restore();
      // label column (the font is only set when it changes: setting it is not free)
      let curFont = '';
      const setFont = (f) => { if (f !== curFont) { ctx.font = f; curFont = f; } };
      ctx.fillStyle = TH.label;
      ctx.fillRect(0, Y0, X0, bh);
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, Y0, cssW, bh);
      ctx.clip();
      ctx.textBaseline = 'middle';
      for (let i = i0; i < i1; i++) {
        const it = items[i];
        const y = itemTop(it);
        if (y + it.h < Y0 || y > Y1) continue;
        if (it.type === 'rank') {
          ctx.fillStyle = TH.header;
          ctx.fillRect(0, y, X0, it.h);
          ctx.fillStyle = TH.sep;
          ctx.fillRect(0, y + it.h - 1, cssW, 1);
          // disclosure triangle
          ctx.fillStyle = TH.labelText;
          ctx.beginPath();
          const cx = 12, cy = y + it.h / 2;
          if (it.R.collapsed) { ctx.moveTo(cx - 3, cy - 5); ctx.lineTo(cx + 3, cy); ctx.lineTo(cx - 3, cy + 5); }
          else { ctx.moveTo(cx - 5, cy - 3); ctx.lineTo(cx + 5, cy - 3); ctx.lineTo(cx, cy + 3); }
          ctx.fill();
          setFont(FONT_H);
          const rl = clip(ctx, it.R.label, X0 - 30);
          ctx.fillText(rl, 24, cy);
          const lw = textW(ctx, FONT_H, rl);
          setFont(FONT);
          ctx.fillStyle = TH.muted;
          const note = it.R.collapsed ? it.R.rows.length + ' rows hidden' : it.R.rows.length + ' rows';
          const nw = textW(ctx, FONT, note);
          if (24 + lw + 10 + nw <= X0 - 8) ctx.fillText(note, X0 - 8 - nw, cy);
        } else {
          ctx.fillStyle = TH.sep;
          ctx.fillRect(0, y + it.h - 1, cssW, 1 / dpr);
          ctx.fillStyle = TH.labelText;
          setFont(FONT_B);
          const ny = y + Math.min(it.h / 2, LANE_H / 2 + ROW_PAD);
          const rowName = it.row.pinned && D.ranks.length > 1 ? it.row.R.label + ' · ' + it.row.name : it.row.name;
          ctx.fillText(clip(ctx, rowName, X0 - 20 - PIN_W), 20, ny);
          drawPin(ctx, X0 - PIN_W + 2, ny, it.row.pinned, hoverLabelRow === it.row.index);
          if (hasUtil(it.row) && it.row.utilView !== undefined) {
            setFont(FONT);
            ctx.fillStyle = TH.muted;
            ctx.fillText(clip(ctx, 'busy ' + fmtPct(it.row.utilView) + ' of view', X0 - 28), 20, y + ROW_PAD + it.row.nLanes * LANE_H + UTIL_H / 2);
          }
          if (it.row.nLanes > 1) {
            setFont(FONT);
            ctx.fillStyle = TH.muted;
            ctx.fillText(kindLabel(it.row), 20, y + ROW_PAD + LANE_H * 1.5);
          }
        }
      }
      ctx.restore();
      ctx.restore();
    }
    function drawBase() {
      const ctx = bctx;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      // (no clearing fill: the bands below paint every pixel — axis, pinned rows, scrolled rows)
      const X0 = trackX0(), X1 = trackX1(), W = trackW();
      const tk = ticks();
      drawBody(nPinned, items.length, AXIS_H + pinH, height, tk);
      if (pinH) {
        drawBody(0, nPinned, AXIS_H, AXIS_H + pinH, tk);
        ctx.fillStyle = TH.pinSep;
        ctx.fillRect(0, AXIS_H + pinH - 2, cssW, 2);
      }
      const bh = bodyH();
      ctx.fillStyle = TH.sep;
      ctx.fillRect(X0 - 1, AXIS_H, 1, bh);
      // scrollbar (of the scrolled region, under the pinned rows)
      const sh = scrollH(), sy0 = AXIS_H + pinH;
      if (contentH > sh) {
        ctx.fillStyle = TH.sbTrack;
        ctx.fillRect(X1, sy0, SB_W, sh);
        const th = Math.max(24, (sh * sh) / contentH);
        const ty = sy0 + (scrollY / maxScroll()) * (sh - th);
        ctx.fillStyle = TH.thumb;
        ctx.fillRect(X1 + 2, ty, SB_W - 4, th);
      }
      // axis
      ctx.fillStyle = TH.axisBg;
      ctx.fillRect(0, 0, cssW, AXIS_H);
      ctx.fillStyle = TH.sep;
      ctx.fillRect(0, AXIS_H - 1, cssW, 1);
      ctx.font = FONT;
      ctx.textBaseline = 'alphabetic';
      ctx.fillStyle = TH.muted;
      ctx.fillText(clip(ctx, X0 >= 150 ? 'time since trace start' : 'time', X0 - 12), 8, 19);
      ctx.save();
      ctx.beginPath();
      ctx.rect(X0, 0, W, AXIS_H);
      ctx.clip();
      ctx.fillStyle = TH.tick;
      const minor = (tk.step / 5) * scale();
      if (minor >= 6) {
        const f = Math.floor(t0 / (tk.step / 5));
        for (let i = f; ; i++) { const x = tx(i * tk.step / 5); if (x > X1) break; ctx.fillRect(Math.round(x), AXIS_H - 5, 1, 4); }
      }
      ctx.fillStyle = TH.axisText;
      for (const t of tk.out) {
        const x = Math.round(tx(t));
        ctx.fillRect(x, AXIS_H - 10, 1, 9);
        const label = (t / tk.div).toFixed(tk.dec) + ' ' + tk.unit;
        if (x + 4 + textW(ctx, FONT, label) <= X1) ctx.fillText(label, x + 4, 14);
      }
      ctx.restore();
    }
    function drawPin(ctx, x, cy, on, hot) {
      // a pushpin: filled when pinned, an outline when the pointer is on the row's label
      if (!on && !hot) return;
      ctx.save();
      ctx.strokeStyle = ctx.fillStyle = on ? TH.pin : TH.muted;
      ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.arc(x + 6, cy - 2, 3.5, 0, Math.PI * 2);
      if (on) ctx.fill(); else ctx.stroke();
      ctx.beginPath(); ctx.moveTo(x + 6, cy + 1.5); ctx.lineTo(x + 6, cy + 6); ctx.stroke();
      ctx.restore();
    }
    const clipCache = new Map();
    const widthCache = new Map();
    /** Width of s in `font` (which ctx is set to), measured once: the axis and rank headers
     *  are redrawn every frame with mostly the same strings. */
    function textW(ctx, font, s) {
      const key = font + '|' + s;
      let w = widthCache.get(key);
      if (w === undefined) {
        w = ctx.measureText(s).width;
        if (widthCache.size > 4000) widthCache.clear();
        widthCache.set(key, w);
      }
      return w;
    }
    function clip(ctx, s, w) {
      // the label as it fits in w px (cached: the label column is redrawn every frame)
      const key = ctx.font + '|' + Math.round(w) + '|' + s;
      let out = clipCache.get(key);
      if (out !== undefined) return out;
      if (ctx.measureText(s).width <= w) out = s;
      else {
        let lo = 0, hi = s.length;
        while (lo < hi) { const m = (lo + hi + 1) >> 1; if (ctx.measureText(s.slice(0, m) + '…').width <= w) lo = m; else hi = m - 1; }
        out = s.slice(0, lo) + '…';
      }
      if (clipCache.size > 4000) clipCache.clear();
      clipCache.set(key, out);
      return out;
    }
    function fitName(ni, avail) {
      if (avail < 8) return '';
      let w = nameW[ni];
      const s = String(D.names[ni] === undefined ? '?' : D.names[ni]);
      if (w < 0) w = nameW[ni] = bctx.measureText(s).width;
      if (w <= avail) return s;
      let chars = Math.floor((s.length * (avail - ellW)) / w);
      if (chars < 1) return '';
      const key = ni * 1024 + Math.min(chars, 1023);
      let t = truncCache.get(key);
      if (t === undefined) {
        while (chars > 0 && bctx.measureText(s.slice(0, chars) + '…').width > avail) chars--;
        t = chars > 0 ? s.slice(0, chars) + '…' : '';
        if (truncCache.size > 20000) truncCache.clear();
        truncCache.set(key, t);
      }
      return t;
    }

    // ---- overlay (hover, selection, flows, range, highlights, cursor)
    function sliceRect(i) {
      if (i < 0 || i >= D.n) return null;
      const row = D.rows[D.rowA[i]];
      if (!row) return null;
      const x0 = tx(D.tsA[i]), x1 = tx(D.tsA[i] + D.durA[i]);
      if (!row.visible) {
        const y = rankTop(row.R);
        return { x0, x1, y, h: HEADER_H, hidden: true };
      }
      const y = rowTop(row) + ROW_PAD + D.depA[i] * LANE_H;
      return { x0, x1, y, h: LANE_H - 2, hidden: false };
    }
    function buildCorr() {
      corrIndex = { launch: new Map(), device: new Map() };
      for (let i = 0; i < D.n; i++) {
        const c = D.corrA[i];
        if (!c) continue;
        const row = D.rows[D.rowA[i]];
        if (!row) continue;
        const key = c * 4096 + ((row.rank | 0) & 4095);
        (row.kind === 'cuda_api' ? corrIndex.launch : corrIndex.device).set(key, i);
      }
    }
    function partner(i) {
      if (i < 0 || !D.corrA[i]) return -1;
      if (!corrIndex) buildCorr();
      const row = D.rows[D.rowA[i]];
      if (!row) return -1;
      const key = D.corrA[i] * 4096 + ((row.rank | 0) & 4095);
      const p = (row.kind === 'cuda_api' ? corrIndex.device : corrIndex.launch).get(key);
      return p === undefined ? -1 : p;
    }
    function drawFlow(ctx, a, b) {
      // a: launch, b: device slice
      const ra = sliceRect(a), rb = sliceRect(b);
      if (!ra || !rb) return;
      const clampY = (y) => Math.min(Math.max(y, AXIS_H + 2), height - 2);
      const x0 = Math.min(Math.max(ra.x0, trackX0()), trackX1());
      const y0 = clampY(ra.y + ra.h);
      const x1 = Math.min(Math.max(rb.x0, trackX0()), trackX1());
      const y1 = clampY(rb.y);
      ctx.save();
      ctx.beginPath();
      ctx.rect(trackX0(), AXIS_H, trackW(), bodyH());
      ctx.clip();
      ctx.strokeStyle = TH.flow;
      ctx.fillStyle = TH.flow;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      const my = (y0 + y1) / 2;
      ctx.bezierCurveTo(x0, my, x1, my, x1, y1);
      ctx.stroke();
      ctx.beginPath(); ctx.arc(x0, y0, 2.5, 0, Math.PI * 2); ctx.fill();
      const dir = y1 >= y0 ? 1 : -1;
      ctx.beginPath(); ctx.moveTo(x1, y1); ctx.lineTo(x1 - 4, y1 - 7 * dir); ctx.lineTo(x1 + 4, y1 - 7 * dir); ctx.closePath(); ctx.fill();
      ctx.restore();
    }
    function outline(ctx, i, color, w) {
      const r = sliceRect(i);
      if (!r) return;
      const x0 = Math.max(r.x0, trackX0() - 2), x1 = Math.min(Math.max(r.x1, r.x0 + 1), trackX1() + 2);
      if (x1 < trackX0() || x0 > trackX1()) return;
      ctx.strokeStyle = color; ctx.lineWidth = w;
      ctx.strokeRect(x0 - w / 2, r.y - w / 2, x1 - x0 + w, r.h + w);
    }
    function bandRects(ev) {
      // the vertical extents (screen y, h) named by one evidence item
      const out = [];
      const wantRank = ev.rank === undefined || ev.rank === null || ev.rank === '*' ? null : ev.rank;
      const kind = ev.row === undefined || ev.row === null ? '*' : ev.row;
      for (const R of D.ranks) {
        if (wantRank !== null && R.rank !== wantRank && String(R.rank) !== String(wantRank)) continue;
        if (kind === '*' || R.collapsed) {
          if (kind !== '*' && !R.rows.some((r) => r.kind === kind || r.name === kind)) continue;
          out.push({ y: rankTop(R), h: R.y1 - R.y0 });
          continue;
        }
        const n0 = out.length;
        for (const row of R.rows) if (row.visible && (row.kind === kind || row.name === kind)) out.push({ y: rowTop(row), h: row.h });
        if (out.length === n0 && !R.rows.some((r) => r.kind === kind || r.name === kind)) out.push({ y: rankTop(R), h: R.y1 - R.y0 });
      }
      if (!out.length && wantRank !== null && !D.ranks.some((R) => String(R.rank) === String(wantRank))) {
        // a rank this trace does not have: mark the span across every rank rather than drop it
        for (const R of D.ranks) out.push({ y: rankTop(R), h: R.y1 - R.y0 });
      }
      return out;
    }
    function drawOver() {
      const ctx = octx;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, cssW, height);
      const X0 = trackX0(), X1 = trackX1();
      ctx.save();
      ctx.beginPath();
      ctx.rect(X0, AXIS_H, trackW(), bodyH());
      ctx.clip();
      // highlights (evidence): every span gets its band(s); labels are laid out afterwards
      ctx.font = FONT_B;
      ctx.textBaseline = 'middle';
      hlDrawn = [];
      const pending = [];
      highlights.forEach((ev, ei) => {
        const a = ev.start_us === undefined || ev.start_us === null ? D.span[0] : +ev.start_us;
        const b = ev.end_us === undefined || ev.end_us === null ? D.span[1] : +ev.end_us;
        let x0 = tx(a), x1 = tx(b);
        if (x1 - x0 < 3) { const m = (x0 + x1) / 2; x0 = m - 1.5; x1 = m + 1.5; }
        if (x1 < X0 || x0 > X1) return;
        const bands = bandRects(ev);
        hlDrawn.push({ index: ei, x0, x1, bands: bands.length });
        bands.forEach((r) => {
          ctx.fillStyle = TH.hlFill;
          ctx.fillRect(x0, r.y, x1 - x0, r.h);
          ctx.strokeStyle = TH.hlEdge;
          ctx.lineWidth = 2;
          ctx.strokeRect(x0 + 1, r.y + 1, x1 - x0 - 2, r.h - 2);
        });
        if (ev.label && bands.length) {
          const tw = ctx.measureText(ev.label).width + 10;
          const r = bands[0];
          pending.push({ label: String(ev.label), x: Math.min(Math.max(x0, X0 + 2), X1 - tw - 2), w: tw, y0: Math.max(r.y, AXIS_H) + 2, yMax: r.y + r.h });
        }
      });
      // labels in lanes: each takes the first lane (a step of LABEL_H + 2 px down from the top of
      // its band) where its box meets no box already placed, so no two labels ever overlap
      hlLabels = [];
      pending.sort((p, q) => p.y0 - q.y0 || p.x - q.x);
      for (const L of pending) {
        let y = L.y0;
        for (let guard = 0; guard < 200; guard++) {
          const hit = hlLabels.find((o) => L.x < o.x + o.w + 2 && o.x < L.x + L.w + 2 && y < o.y + LABEL_H + 1 && o.y < y + LABEL_H + 1);
          if (!hit) break;
          y = hit.y + LABEL_H + 2;
        }
        hlLabels.push({ label: L.label, x: L.x, y, w: L.w, h: LABEL_H });
      }
      for (const L of hlLabels) {
        ctx.fillStyle = TH.hlEdge;
        ctx.fillRect(L.x, L.y, L.w, L.h);
        ctx.fillStyle = '#ffffff';
        ctx.fillText(L.label, L.x + 5, L.y + L.h / 2 + 0.5);
      }
      // range selection (committed or being dragged)
      const rg = drag && drag.mode === 'select' && drag.moved ? { t0: Math.min(drag.ta, drag.tb), t1: Math.max(drag.ta, drag.tb) } : range;
      if (rg) {
        const x0 = tx(rg.t0), x1 = tx(rg.t1);
        ctx.fillStyle = TH.range;
        ctx.fillRect(x0, AXIS_H, x1 - x0, bodyH());
        const rws = range && rg === range ? range.rows : drag ? rowsBetween(drag.ya, drag.yb) : [];
        if (rws.length < D.rows.length) {
          ctx.fillStyle = TH.rangeRows;
          for (const ri of rws) {
            const row = D.rows[ri];
            if (!row) continue;
            if (row.visible) ctx.fillRect(x0, rowTop(row), x1 - x0, row.h);
            else ctx.fillRect(x0, rankTop(row.R), x1 - x0, HEADER_H);
          }
        }
        ctx.fillStyle = TH.rangeEdge;
        ctx.fillRect(Math.round(x0) - 1, AXIS_H, 2, bodyH());
        ctx.fillRect(Math.round(x1) - 1, AXIS_H, 2, bodyH());
      }
      // hover / selection + launch→kernel connectors
      if (selected >= 0) {
        outline(ctx, selected, '#ffffff', 3);
        outline(ctx, selected, TH.sel, 2);
      }
      if (hover >= 0 && hover !== selected) outline(ctx, hover, TH.hover, 1.5);
      ctx.restore();
      for (const i of [selected, hover]) {
        if (i < 0) continue;
        const p = partner(i);
        if (p < 0) continue;
        outline(ctx, p, TH.flow, 2);
        const isLaunch = D.rows[D.rowA[i]].kind === 'cuda_api';
        drawFlow(ctx, isLaunch ? i : p, isLaunch ? p : i);
      }
      // keyboard cursor
      if (hasFocus && items[cursor]) {
        const it = items[cursor];
        const y = itemTop(it);
        if (y + it.h > AXIS_H && y < height) {
          ctx.save();
          ctx.beginPath(); ctx.rect(0, AXIS_H, cssW, bodyH()); ctx.clip();
          ctx.strokeStyle = TH.focus; ctx.lineWidth = 2;
          ctx.strokeRect(2, y + 1.5, X0 - 4, it.h - 3);
          ctx.fillStyle = TH.focus;
          ctx.fillRect(X0, y + it.h - 2, trackW(), 2);
          ctx.restore();
        }
      }
      // range readout in the axis band
      if (rg) {
        const x0 = tx(rg.t0), x1 = tx(rg.t1);
        const label = 'Δ ' + fmtDur(rg.t1 - rg.t0);
        ctx.font = FONT_B;
        const tw = ctx.measureText(label).width + 12;
        const cx = Math.min(Math.max((x0 + x1) / 2, X0 + tw / 2 + 2), X1 - tw / 2 - 2);
        ctx.fillStyle = TH.rangeEdge;
        ctx.fillRect(cx - tw / 2, 3, tw, AXIS_H - 8);
        ctx.fillStyle = '#ffffff';
        ctx.textBaseline = 'middle';
        ctx.fillText(label, cx - tw / 2 + 6, 3 + (AXIS_H - 8) / 2 + 0.5);
      }
      // hover time line
      if (mouse && !drag && mouse.x >= X0 && mouse.x < X1 && mouse.y >= AXIS_H) {
        ctx.fillStyle = 'rgba(13,17,23,0.35)';
        ctx.fillRect(Math.round(mouse.x), AXIS_H, 1, bodyH());
      }
    }

    // ---- hit testing
    function laneAt(y) {
      if (y < AXIS_H) return null;
      let it = null;
      if (y < AXIS_H + pinH) {
        for (let q = 0; q < nPinned; q++) if (y >= AXIS_H + items[q].y && y < AXIS_H + items[q].y + items[q].h) it = items[q];
      } else it = itemAtContentY(y - AXIS_H - pinH + scrollY);
      if (!it || it.type !== 'row') return it ? { it } : null;
      const d = Math.floor((y - itemTop(it) - ROW_PAD) / LANE_H);
      return { it, d: Math.min(Math.max(d, 0), it.row.nLanes - 1), inLane: d >= 0 && d < it.row.nLanes };
    }
    function hitTest(x, y) {
      if (x < trackX0() || x >= trackX1()) return -1;
      const h = laneAt(y);
      if (!h || !h.inLane) return -1;
      const L = h.it.row.lanes[h.d];
      if (!L || !L.n) return -1;
      const t = xt(x), tol = 3 / scale();
      let best = -1, bestD = Infinity;
      for (let j = upper(L.pmax, t - tol); j < L.n && L.ts[j] <= t + tol; j++) {
        const s = L.ts[j], e = L.end[j];
        if (e < t - tol) continue;
        const dd = t < s ? s - t : t > e ? t - e : 0;
        if (dd < bestD) { bestD = dd; best = L.idx[j]; if (dd === 0) break; }
      }
      return best;
    }
    function snap(t, y, noSnap) {
      if (noSnap) return t;
      const h = laneAt(y);
      if (!h || !h.it.row) return t;
      const tol = SNAP_PX / scale();
      let best = t, bestD = tol;
      for (const L of h.it.row.lanes) {
        for (let j = upper(L.pmax, t - tol); j < L.n && L.ts[j] <= t + tol; j++) {
          for (const e of [L.ts[j], L.end[j]]) { const dd = Math.abs(e - t); if (dd <= bestD) { bestD = dd; best = e; } }
        }
      }
      return best;
    }

    // ---- selection, details, events
    function emit(name, payload) { for (const cb of listeners[name] || []) { try { cb(payload); } catch (e) { console.error(e); } } }
    function sliceInfo(i) {
      const row = D.rows[D.rowA[i]] || { name: '?', kind: '?', rank: null, index: -1 };
      return {
        index: i, name: String(D.names[D.nameA[i]]), start: D.tsA[i], dur: D.durA[i], end: D.tsA[i] + D.durA[i],
        row: row.name, rowKind: row.kind, rowIndex: row.index, rank: row.rank, cat: D.cats[D.catA[i]],
        depth: D.depA[i], corr: D.corrA[i], args: D.args[String(i)] || {},
      };
    }
    function select(i, opt) {
      selected = i;
      renderDetails();
      invalidate(false);
      if (i >= 0) {
        const info = sliceInfo(i);
        live.textContent = 'Selected ' + info.name + ', ' + fmtDur(info.dur) + ' on ' + info.row;
        if (!(opt && opt.silent)) emit('select', info);
      }
    }
    /** Rows under a vertical drag from screen y `ya` to `yb`: the rows it touches (every row of a
     *  collapsed rank whose header it touches); all rows when it starts on the time axis. */
    function rowsBetween(ya, yb) {
      if (ya < AXIS_H) return D.rows.map((r) => r.index);
      const lo = Math.min(ya, yb), hi = Math.max(ya, yb);
      const out = [];
      for (const it of items) {
        const y = itemTop(it);
        if (y + it.h <= lo || y > hi) continue;
        if (it.type === 'row') out.push(it.row.index);
        else if (it.R.collapsed) for (const r of it.R.rows) out.push(r.index);
      }
      return out;
    }
    function setRange(a, b, silent, rows) {
      if (a === null) { range = null; agg = null; renderAgg(); invalidate(false); return; }
      range = { t0: Math.min(a, b), t1: Math.max(a, b), rows: rows ? [...new Set(rows)].sort((x, y) => x - y) : D.rows.map((r) => r.index) };
      const ta = performance.now();
      agg = aggregate(range.t0, range.t1, range.rows);
      stats.aggMs = performance.now() - ta;
      renderAgg();
      invalidate(false);
      const p = { t0: range.t0, t1: range.t1, dur: range.t1 - range.t0, rows: range.rows.slice() };
      live.textContent = 'Range ' + fmtDur(p.dur);
      if (!silent) emit('range', p);
    }
    /** The range [a, b] over `rowIdx`: per slice name the count of slices that overlap it, their
     *  time inside it (total, share of the range) and their whole durations (mean, max); per row
     *  its busy time (union of its top-level slices) and idle time inside the range. */
    function aggregate(a, b, rowIdx) {
      const nN = D.names.length;
      const cnt = new Int32Array(nN), tot = new Float64Array(nN), sum = new Float64Array(nN), mx = new Float64Array(nN);
      const seen = [];
      const rowsOut = [];
      let slices = 0;
      for (const r of rowIdx) {
        const row = D.rows[r];
        if (!row) continue;
        let busy = 0;
        const durs = [];
        row.lanes.forEach((L, d) => {
          const ts = L.ts, end = L.end, idx = L.idx;
          let upto = -Infinity;
          for (let j = upper(L.pmax, a); j < L.n; j++) {
            const s0 = ts[j];
            if (s0 >= b) break;
            const e0 = end[j];
            if (e0 <= a) continue;
            const i = idx[j], ni = D.nameA[i];
            const ca = s0 > a ? s0 : a, cb = e0 < b ? e0 : b;
            if (!cnt[ni]) seen.push(ni);
            cnt[ni]++; tot[ni] += cb - ca; sum[ni] += e0 - s0;
            if (e0 - s0 > mx[ni]) mx[ni] = e0 - s0;
            slices++;
            if (d === 0) durs.push(e0 - s0);
            if (d === 0 && cb > upto) { busy += cb - (ca > upto ? ca : upto); upto = cb; }
          }
        });
        // the typical top-level slice (kernel) of the row: the median whole duration
        const sorted = Float64Array.from(durs).sort();
        const median = sorted.length ? (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2 : 0;
        const out = { row: r, name: row.name, rank: row.rank, kind: row.kind, busy, idle: (b - a) - busy, busyShare: b > a ? busy / (b - a) : 0, count: durs.length, median };
        if (row.kind === 'nccl') out.exposed = exposedTime(row, a, b, busy);
        rowsOut.push(out);
      }
      const names = seen.map((ni) => ({
        name: String(D.names[ni]), count: cnt[ni], total: tot[ni], mean: sum[ni] / cnt[ni], max: mx[ni], share: b > a ? tot[ni] / (b - a) : 0,
      }));
      names.sort((x, y) => y.total - x.total || (x.name < y.name ? -1 : 1));
      return { t0: a, t1: b, dur: b - a, slices, names, rows: rowsOut };
    }
    /** Merged busy intervals of a row's top-level slices inside [a, b] (flat [s0, e0, s1, e1…]). */
    function busySpans(row, a, b) {
      const out = [];
      const L = row.lanes[0];
      if (!L) return out;
      for (let j = upper(L.pmax, a); j < L.n; j++) {
        const s0 = L.ts[j];
        if (s0 >= b) break;
        const e0 = L.end[j];
        if (e0 <= a) continue;
        const ca = s0 > a ? s0 : a, cb = e0 < b ? e0 : b;
        const n = out.length;
        if (n && ca <= out[n - 1]) { if (cb > out[n - 1]) out[n - 1] = cb; } else out.push(ca, cb);
      }
      return out;
    }
    /** A communication row's busy time inside [a, b] while its rank's compute stream is idle
     *  (the exposed, unoverlapped part of the communication). */
    function exposedTime(row, a, b, busy) {
      const comp = D.rows.find((x) => x.rank === row.rank && x.kind === 'gpu');
      if (!comp) return busy;
      const n = busySpans(row, a, b), c = busySpans(comp, a, b);
      let under = 0, k = 0;
      for (let i = 0; i < n.length; i += 2) {
        while (k < c.length && c[k + 1] <= n[i]) k += 2;
        for (let m = k; m < c.length && c[m] < n[i + 1]; m += 2) {
          const lo = c[m] > n[i] ? c[m] : n[i], hi = c[m + 1] < n[i + 1] ? c[m + 1] : n[i + 1];
          if (hi > lo) under += hi - lo;
        }
      }
      return Math.max(0, busy - under);
    }
    const AGG_TOP = 25;
    function renderAgg() {
      aggBox.textContent = '';
      aggBox.hidden = !agg;
      if (!agg) return;
      const head = el('div', 'tt-agg-head');
      const title = el('h3', 'tt-agg-title', 'Selection ' + fmtMs(agg.dur) + ' ms');
      const sub = el('span', 'tt-agg-sub', fmtDur(agg.t0) + ' → ' + fmtDur(agg.t1) + ' · ' + agg.rows.length + (agg.rows.length === 1 ? ' row · ' : ' rows · ') + agg.slices.toLocaleString('en-US') + ' slices');
      const close = el('button', 'tt-btn tt-agg-close', 'Clear');
      close.type = 'button'; close.title = 'Clear the selection (Esc)';
      close.addEventListener('click', () => setRange(null));
      head.append(title, sub, close);
      aggBox.append(head);
      const wrap = el('div', 'tt-agg-tables');
      // rows: busy / idle
      const tr = el('table', 'tt-agg-table tt-agg-rows');
      tr.append(el('caption', null, 'Rows in the selection'));
      const thr = el('tr');
      const anyComm = agg.rows.some((r) => r.exposed !== undefined);
      const heads = [['Row', false], ['Busy (ms)', true], ['Idle (ms)', true], ['Busy', true], ['Slices', true], ['Median (ms)', true]];
      if (anyComm) heads.push(['Exposed (ms)', true]);
      const tips = { 'Slices': 'Top-level slices that overlap the selection', 'Median (ms)': 'Median whole duration of those slices (the typical kernel on a GPU stream)' };
      for (const [h, num] of heads) { const th = el('th', num ? 'tt-num' : null, h); th.scope = 'col'; if (tips[h]) th.title = tips[h]; if (h === 'Exposed (ms)') th.title = 'Communication busy while the same rank\'s compute stream is idle'; thr.append(th); }
      const thd = el('thead'); thd.append(thr); tr.append(thd);
      const tbr = el('tbody');
      for (const r of agg.rows) {
        const row = el('tr');
        const nameCell = el('th', 'tt-agg-name', (D.rankBy.size > 1 ? 'rank ' + r.rank + ' · ' : '') + r.name);
        nameCell.scope = 'row';
        row.append(nameCell, el('td', 'tt-num', fmtMs(r.busy)), el('td', 'tt-num', fmtMs(r.idle)), el('td', 'tt-num', fmtPct(r.busyShare)),
          el('td', 'tt-num', r.count.toLocaleString('en-US')), el('td', 'tt-num', r.count ? fmtMs(r.median) : ''));
        if (anyComm) row.append(el('td', 'tt-num', r.exposed === undefined ? '' : fmtMs(r.exposed)));
        tbr.append(row);
      }
      tr.append(tbr);
      // names: count, total, mean, max, share
      const tn = el('table', 'tt-agg-table tt-agg-names');
      tn.append(el('caption', null, 'By slice name (total and share: time inside the selection; mean and max: whole slices)'));
      const thn = el('tr');
      for (const [h, num] of [['Name', false], ['Count', true], ['Total (ms)', true], ['Mean (ms)', true], ['Max (ms)', true], ['Share', true]]) { const th = el('th', num ? 'tt-num' : null, h); th.scope = 'col'; thn.append(th); }
      const thd2 = el('thead'); thd2.append(thn); tn.append(thd2);
      const tbn = el('tbody');
      for (const a of agg.names.slice(0, AGG_TOP)) {
        const row = el('tr');
        const nameCell = el('th', 'tt-agg-name', a.name);
        nameCell.scope = 'row'; nameCell.title = a.name;
        row.append(nameCell, el('td', 'tt-num', a.count.toLocaleString('en-US')), el('td', 'tt-num', fmtMs(a.total)), el('td', 'tt-num', fmtMs(a.mean)), el('td', 'tt-num', fmtMs(a.max)), el('td', 'tt-num', fmtPct(a.share)));
        tbn.append(row);
      }
      if (agg.names.length > AGG_TOP) {
        const more = el('tr', 'tt-agg-more');
        const td = el('td', null, '… ' + (agg.names.length - AGG_TOP) + ' more names with less time');
        td.colSpan = 6; more.append(td); tbn.append(more);
      }
      if (!agg.names.length) { const row = el('tr'); const td = el('td', 'tt-empty', 'No slices in this range: the rows are idle.'); td.colSpan = 6; row.append(td); tbn.append(row); }
      tn.append(tbn);
      wrap.append(tr, tn);
      aggBox.append(wrap);
    }
    function renderDetails() {
      details.textContent = '';
      if (selected < 0) {
        details.append(el('p', 'tt-empty', 'Click a slice (or use ↑/↓ and ←/→) to see its details. Drag across the timeline to measure a gap.'));
        return;
      }
      const s = sliceInfo(selected);
      const h = el('h3', 'tt-d-title', s.name);
      const sw = el('span', 'tt-swatch'); sw.style.background = D.palette[D.catA[selected] * 3].fill;
      h.prepend(sw);
      const dl = el('dl', 'tt-d-grid');
      const add = (k, v) => { const w = el('div', 'tt-d-item'); w.append(el('dt', null, k), el('dd', null, v)); dl.append(w); return w; };
      add('Start', fmtDur(s.start));
      add('Duration', fmtDur(s.dur));
      add('End', fmtDur(s.end));
      add('Row', s.row);
      add('Rank', String(s.rank));
      add('Category', s.cat || '—');
      add('Depth', String(s.depth));
      if (s.args && s.args.stream !== undefined) add('Stream', String(s.args.stream));
      if (s.corr) {
        const w = add('Correlation', String(s.corr));
        const p = partner(selected);
        if (p >= 0) {
          const pi = sliceInfo(p);
          const isLaunch = s.rowKind === 'cuda_api';
          const b = el('button', 'tt-link', (isLaunch ? 'kernel → ' : 'launched by ← ') + pi.name);
          b.type = 'button';
          b.title = (isLaunch ? 'Go to the kernel on ' : 'Go to the launch on ') + pi.row;
          b.addEventListener('click', () => { reveal(p); select(p); });
          w.querySelector('dd').append(el('br'), b);
          const lat = isLaunch ? pi.start - s.start : s.start - pi.start;
          add(isLaunch ? 'Launch → kernel start' : 'Launch → this start', fmtDur(lat));
        }
      }
      for (const k of Object.keys(s.args || {})) {
        if (k === 'stream' || (/^corr(elation)?$/i.test(k) && +s.args[k] === s.corr)) continue;
        add(k, fmtArg(k, s.args[k]));
      }
      details.append(h, dl);
    }
    function reveal(i) {
      // make a slice visible: expand its rank, scroll to it, pan (or zoom out) so it is in view
      const row = D.rows[D.rowA[i]];
      if (!row) return;
      if (row.R.collapsed) { row.R.collapsed = false; relayout(); }
      const y = row.y + ROW_PAD + D.depA[i] * LANE_H;
      if (!row.pinned && (y < scrollY || y + LANE_H > scrollY + scrollH())) scrollTo(y - scrollH() / 3);
      const a = D.tsA[i], b = a + D.durA[i];
      const span = t1 - t0;
      if (b - a > span * 0.9) setView(a - (b - a) * 0.1, b + (b - a) * 0.1);
      else if (a < t0 || b > t1) setView((a + b) / 2 - span / 2, (a + b) / 2 + span / 2);
      const ci = items.findIndex((it) => it.type === 'row' && it.row === row);
      if (ci >= 0) cursor = ci;
    }
    function updateReadout() {
      const v = 'View ' + fmtDur(t0 - D.span[0] < 0 ? 0 : t0) + ' – ' + fmtDur(t1) + '  (' + fmtDur(t1 - t0) + ')';
      if (viewText.data !== v) viewText.data = v;
      const rg = drag && drag.mode === 'select' && drag.moved ? { t0: Math.min(drag.ta, drag.tb), t1: Math.max(drag.ta, drag.tb) } : range;
      const r = rg ? 'Selection Δ ' + fmtDur(rg.t1 - rg.t0) + '  (' + fmtDur(rg.t0) + ' → ' + fmtDur(rg.t1) + ')' : 'Drag to measure';
      if (rangeText.data !== r) { rangeText.data = r; rangeOut.classList.toggle('tt-has-range', !!rg); }
    }

    // ---- tooltip
    function showTip(i, x, y) {
      if (i < 0) { tip.hidden = true; return; }
      const s = sliceInfo(i);
      tip.textContent = '';
      tip.append(el('strong', null, s.name));
      tip.append(el('div', null, fmtDur(s.dur) + ' · starts ' + fmtDur(s.start)));
      tip.append(el('div', 'tt-tip-muted', s.row + ' · ' + (s.cat || '')));
      const p = partner(i);
      let partnerBelow = null;
      if (p >= 0) {
        const pr = sliceRect(p);
        if (pr) partnerBelow = pr.y > y;
        const pi = sliceInfo(p);
        const isLaunch = s.rowKind === 'cuda_api';
        const line = el('div', 'tt-tip-flow', (isLaunch ? '→ kernel: ' : '← launched by: ') + pi.name);
        tip.append(line);
        const lat = isLaunch ? pi.start - s.start : s.start - pi.start;
        tip.append(el('div', 'tt-tip-muted', (isLaunch ? 'on ' + pi.row + ', starts ' : 'launch was ') + fmtDur(lat) + (isLaunch ? ' after the launch' : ' earlier') + ' · corr ' + s.corr));
      }
      tip.hidden = false;
      const tw = tip.offsetWidth, th = tip.offsetHeight;
      // keep the tooltip off the connector: above the pointer when the partner is below
      let lx = x + 14, ly = partnerBelow ? y - th - 14 : y + 16;
      if (lx + tw > cssW - 4) lx = Math.max(4, x - tw - 10);
      if (ly + th > height - 4) ly = Math.max(4, y - th - 10);
      if (ly < 4) ly = Math.min(height - th - 4, y + 16);
      tip.style.left = lx + 'px';
      tip.style.top = ly + 'px';
    }

    // ---- input
    function pos(e) { const r = over.getBoundingClientRect(); return { x: e.clientX - r.left, y: e.clientY - r.top }; }
    // ---- touch: one finger drags (pans time, scrolls rows), two fingers pinch-zoom, a tap selects
    const touches = new Map(); // pointerId -> {x, y}
    function touchStart(e) {
      const p = pos(e);
      touches.set(e.pointerId, p);
      try { over.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events */ }
      tip.hidden = true;
      if (touches.size === 1 && touchSelect && p.x >= trackX0() && p.y >= AXIS_H) {
        const ta = snap(xt(p.x), p.y, false);
        drag = { mode: 'select', touch: true, x: p.x, y: p.y, ya: p.y, yb: p.y, ta, tb: ta, moved: false };
      } else if (touches.size === 1) drag = { mode: 'touch', x: p.x, y: p.y, v0: t0, v1: t1, s: scrollY, moved: false };
      else if (touches.size === 2) {
        const [a, b] = [...touches.values()];
        const mx = (a.x + b.x) / 2;
        drag = { mode: 'pinch', d0: Math.max(8, Math.hypot(a.x - b.x, a.y - b.y)), tm: xt(mx), v0: t0, v1: t1, moved: true };
      }
      e.preventDefault();
    }
    function touchMove(e) {
      if (!touches.has(e.pointerId)) return;
      const p = pos(e);
      touches.set(e.pointerId, p);
      if (!drag) return;
      if (drag.mode === 'pinch' && touches.size >= 2) {
        const [a, b] = [...touches.values()];
        const d = Math.max(8, Math.hypot(a.x - b.x, a.y - b.y));
        const span = ((drag.v1 - drag.v0) * drag.d0) / d;
        const fx = ((a.x + b.x) / 2 - trackX0()) / trackW();
        setView(drag.tm - fx * span, drag.tm + (1 - fx) * span);
      } else if (drag.mode === 'select') {
        if (!drag.moved && Math.abs(p.x - drag.x) + Math.abs(p.y - drag.y) >= DRAG_PX) drag.moved = true;
        drag.tb = snap(xt(Math.min(Math.max(p.x, trackX0()), trackX1())), p.y, false);
        drag.yb = p.y;
        invalidate(false);
      } else if (drag.mode === 'touch') {
        const dx = p.x - drag.x, dy = p.y - drag.y;
        if (!drag.moved && Math.abs(dx) + Math.abs(dy) >= DRAG_PX * 2) drag.moved = true;
        if (!drag.moved) return;
        const dt = (dx * (drag.v1 - drag.v0)) / trackW();
        setView(drag.v0 - dt, drag.v1 - dt);
        scrollTo(drag.s - dy);
      }
      e.preventDefault();
    }
    function touchEnd(e) {
      if (!touches.has(e.pointerId)) return;
      const p = pos(e);
      touches.delete(e.pointerId);
      const d = drag;
      if (touches.size === 1) {
        // a pinch became a one-finger drag: restart it from the remaining finger
        const q = [...touches.values()][0];
        drag = { mode: 'touch', x: q.x, y: q.y, v0: t0, v1: t1, s: scrollY, moved: true };
        return;
      }
      drag = null;
      if (d && d.mode === 'select' && d.moved && e.type === 'pointerup' && Math.abs(tx(d.tb) - tx(d.ta)) >= 1) {
        setRange(d.ta, d.tb, false, rowsBetween(d.ya, d.yb));
        return;
      }
      if (d && (d.mode === 'touch' || d.mode === 'select') && !d.moved && e.type === 'pointerup') {
        // a tap: fold a rank header, pin from the label, or select the slice under it
        const h = laneAt(p.y);
        if (h && h.it.type === 'rank') { toggleRank(h.it.R); return; }
        if (p.x < trackX0()) { if (h && h.it.type === 'row' && p.x >= trackX0() - PIN_W - 2) togglePin(h.it.row); return; }
        select(hitTest(p.x, p.y));
      }
      invalidate(false);
    }
    function onPointerDown(e) {
      if (e.pointerType === 'touch') { touchStart(e); return; }
      over.focus({ preventScroll: true });
      const p = pos(e);
      mouse = p;
      if (p.x >= trackX1() && contentH > scrollH() && p.y >= AXIS_H + pinH) { // scrollbar
        const bh = scrollH(), th = Math.max(24, (bh * bh) / contentH);
        const ty = AXIS_H + pinH + (scrollY / (maxScroll() || 1)) * (bh - th);
        if (p.y < ty || p.y > ty + th) scrollTo(scrollY + (p.y < ty ? -1 : 1) * bh * 0.9);
        drag = { mode: 'scrollbar', y: p.y, s: scrollY, k: maxScroll() / Math.max(1, bh - th) };
      } else if (e.button === 1 || (e.button === 0 && spaceHeld)) {
        drag = { mode: 'pan', x: p.x, y: p.y, v0: t0, v1: t1, s: scrollY, moved: false };
        over.classList.add('tt-grabbing');
        e.preventDefault();
      } else if (e.button === 0) {
        if (p.x < trackX0()) {
          drag = { mode: 'label', x: p.x, y: p.y, s: scrollY, moved: false };
        } else {
          const ta = p.y < AXIS_H ? xt(p.x) : snap(xt(p.x), p.y, e.altKey);
          drag = { mode: 'select', x: p.x, y: p.y, ya: p.y, yb: p.y, ta, tb: ta, moved: false };
        }
      } else return;
      try { over.setPointerCapture(e.pointerId); } catch (err) { /* synthetic events */ }
      tip.hidden = true;
    }
    function onPointerMove(e) {
      if (e.pointerType === 'touch') { touchMove(e); return; }
      pointerIn = true;
      const p = pos(e);
      mouse = p;
      if (drag) {
        const dx = p.x - drag.x, dy = p.y - drag.y;
        if (drag.mode === 'scrollbar') { scrollTo(drag.s + dy * drag.k); return; }
        if (!drag.moved && Math.abs(dx) + Math.abs(dy) >= DRAG_PX) drag.moved = true;
        if (!drag.moved) return;
        if (drag.mode === 'pan') {
          const dt = (dx * (drag.v1 - drag.v0)) / trackW();
          setView(drag.v0 - dt, drag.v1 - dt);
          scrollTo(drag.s - dy);
        } else if (drag.mode === 'label') {
          scrollTo(drag.s - dy);
        } else if (drag.mode === 'select') {
          const x = Math.min(Math.max(p.x, trackX0()), trackX1());
          drag.tb = snap(xt(x), p.y, e.altKey);
          drag.yb = p.y;
          invalidate(false);
        }
        return;
      }
      const h = hitTest(p.x, p.y);
      const lh = p.x < trackX0() ? laneAt(p.y) : null;
      const labelRow = lh && lh.it.type === 'row' ? lh.it.row.index : -1;
      if (labelRow !== hoverLabelRow) { hoverLabelRow = labelRow; invalidate(true); }
      over.classList.toggle('tt-pointer', h >= 0 || (p.x < trackX0() && (isRankHeader(p.y) || (labelRow >= 0 && p.x >= trackX0() - PIN_W - 2))));
      over.title = labelRow >= 0 && p.x >= trackX0() - PIN_W - 2 ? (D.rows[labelRow].pinned ? 'Unpin this row (P)' : 'Pin this row to the top (P)') : '';
      if (h !== hover) { hover = h; invalidate(false); }
      else if (p.x >= trackX0()) invalidate(false); // hover time line
      showTip(h, p.x, p.y);
    }
    function isRankHeader(y) { const h = laneAt(y); return !!(h && h.it.type === 'rank'); }
    function onPointerUp(e) {
      if (e.pointerType === 'touch') { touchEnd(e); return; }
      const p = pos(e);
      const d = drag;
      drag = null;
      over.classList.remove('tt-grabbing');
      if (!d) return;
      if (d.mode === 'select' && d.moved) {
        if (Math.abs(tx(d.tb) - tx(d.ta)) >= 1) setRange(d.ta, d.tb, false, rowsBetween(d.ya, d.yb));
        else invalidate(false);
        return;
      }
      if (d.moved || d.mode === 'scrollbar') { invalidate(false); return; }
      // a click
      const h = laneAt(p.y);
      if (h && h.it.type === 'rank') { // a click anywhere on a rank header folds it
        toggleRank(h.it.R);
        cursor = items.findIndex((it) => it.type === 'rank' && it.R === h.it.R);
        return;
      }
      if (d.mode === 'label') {
        if (h && h.it.type === 'row' && p.x >= trackX0() - PIN_W - 2) { togglePin(h.it.row); return; }
        if (h && h.it.type === 'row') { cursor = items.indexOf(h.it); invalidate(false); }
        return;
      }
      const i = hitTest(p.x, p.y);
      if (h && h.it.type === 'row') cursor = items.indexOf(h.it);
      select(i);
    }
    function onLeave(e) {
      if (e && e.pointerType === 'touch') return; pointerIn = false; mouse = null; if (hoverLabelRow >= 0) { hoverLabelRow = -1; invalidate(true); } if (!drag) { hover = -1; tip.hidden = true; invalidate(false); } }
    function onWheel(e) {
      e.preventDefault();
      const p = pos(e);
      mouse = p;
      const unit = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? bodyH() : 1;
      const dx = e.deltaX * unit, dy = e.deltaY * unit;
      if (p.x < trackX0() || p.x >= trackX1()) { scrollTo(scrollY + dy); return; }
      if (e.shiftKey || Math.abs(dx) > Math.abs(dy)) {
        const px = Math.abs(dx) > Math.abs(dy) ? dx : dy;
        panBy((px * (t1 - t0)) / trackW());
        return;
      }
      const f = Math.exp(dy * (e.ctrlKey ? 0.01 : 0.0022));
      zoomBy(Math.min(4, Math.max(0.25, f)), xt(p.x));
      tip.hidden = true;
    }
    function setQuery(q) {
      q = String(q || '').trim().toLowerCase();
      matchPos = -1;
      if (!q) { mName = null; matches = new Int32Array(0); matchOut.textContent = ''; invalidate(true); return; }
      const m = new Uint8Array(D.names.length);
      let any = false;
      for (let k = 0; k < D.names.length; k++) if (String(D.names[k]).toLowerCase().includes(q)) { m[k] = 1; any = true; }
      mName = m;
      let cnt = 0;
      if (any) for (let i = 0; i < D.n; i++) if (m[D.nameA[i]] && D.rows[D.rowA[i]]) cnt++;
      const out = new Int32Array(cnt);
      let w = 0;
      if (any) for (let i = 0; i < D.n; i++) if (m[D.nameA[i]] && D.rows[D.rowA[i]]) out[w++] = i;
      const ts = D.tsA;
      matches = Int32Array.from(Array.prototype.slice.call(out).sort((a, b) => ts[a] - ts[b] || a - b));
      matchOut.textContent = cnt ? cnt.toLocaleString('en-US') + ' matches' : 'no match';
      invalidate(true);
    }
    function stepMatch(dir) {
      const n = matches.length;
      if (!n) return;
      if (matchPos < 0) {
        // the first match from the start of the view (or the last before its end)
        const ts = D.tsA;
        let lo = 0, hi = n;
        const at = dir > 0 ? t0 : t1;
        while (lo < hi) { const mid = (lo + hi) >>> 1; if (ts[matches[mid]] < at) lo = mid + 1; else hi = mid; }
        matchPos = dir > 0 ? (lo < n ? lo : 0) : (lo > 0 ? lo - 1 : n - 1);
      } else matchPos = (matchPos + dir + n) % n;
      const i = matches[matchPos];
      goTo(i);
      matchOut.textContent = (matchPos + 1).toLocaleString('en-US') + ' / ' + n.toLocaleString('en-US');
    }
    function goTo(i) {
      // select slice i, bring it into view, and zoom in when it would be under a few pixels wide
      reveal(i);
      const a = D.tsA[i], d = Math.max(D.durA[i], MIN_SPAN);
      if (d * scale() < 3) { const span = Math.max(d * 20, MIN_SPAN * 20); setView(a + d / 2 - span / 2, a + d / 2 + span / 2); }
      select(i);
    }
    /** The longest GPU kernel — a compute kernel or an NCCL (communication) kernel; copies and
     *  memsets are not kernels — on every stream, or in the selected range and rows. NCCL
     *  kernels count: they are kernels on the device, and their time includes waiting for the
     *  other ranks; select a compute row to get its longest compute kernel. */
    function longestKernel() {
      const kc = D.cats.indexOf('kernel'), nc = D.cats.indexOf('nccl');
      const inRows = range ? new Uint8Array(D.rows.length) : null;
      if (range) for (const r of range.rows) inRows[r] = 1;
      let best = -1, bd = -1;
      for (let i = 0; i < D.n; i++) {
        const row = D.rows[D.rowA[i]];
        if (!row) continue;
        const c = D.catA[i];
        // without kernel categories in the data: any slice on a GPU or NCCL stream
        if (kc >= 0 || nc >= 0 ? c !== kc && c !== nc : row.kind !== 'gpu' && row.kind !== 'nccl') continue;
        if (range && (!inRows[row.index] || D.tsA[i] >= range.t1 || D.tsA[i] + D.durA[i] <= range.t0)) continue;
        if (D.durA[i] > bd) { bd = D.durA[i]; best = i; }
      }
      if (best < 0) { live.textContent = 'No kernel' + (range ? ' in the selection' : ''); return -1; }
      reveal(best);
      const a = D.tsA[best], m = Math.max(bd, MIN_SPAN) * 0.6;
      setView(a - m, a + bd + m);
      select(best);
      const row = D.rows[D.rowA[best]];
      live.textContent = 'Longest kernel' + (range ? ' in the selection' : '') + ': ' + D.names[D.nameA[best]] + ', ' + fmtDur(bd) + ' on ' + (D.rankBy.size > 1 ? 'rank ' + row.rank + ' · ' : '') + row.name;
      return best;
    }
    function togglePin(row, on) {
      const want = on === undefined ? !pinned.has(row.index) : !!on;
      if (want) pinned.add(row.index); else pinned.delete(row.index);
      relayout();
      const ci = items.findIndex((it) => it.type === 'row' && it.row === row);
      if (ci >= 0) cursor = ci;
      live.textContent = (want ? 'Pinned ' : 'Unpinned ') + row.name + ' (rank ' + row.rank + ')';
    }
    function toggleRank(R, collapsed) {
      R.collapsed = collapsed === undefined ? !R.collapsed : !!collapsed;
      if (selected >= 0 && !D.rows[D.rowA[selected]].visible) { /* keep selection, drawn on the header */ }
      relayout();
      live.textContent = R.label + (R.collapsed ? ' collapsed' : ' expanded');
    }
    function ensureCursorVisible() {
      const it = items[cursor];
      if (!it) return;
      if (it.fixed) { invalidate(false); return; }
      if (it.y < scrollY) scrollTo(it.y);
      else if (it.y + it.h > scrollY + scrollH()) scrollTo(it.y + it.h - scrollH());
    }
    function stepSlice(dir) {
      const it = items[cursor];
      if (!it || it.type !== 'row') return;
      const cur = selected >= 0 && D.rowA[selected] === it.row.index ? D.tsA[selected] : dir > 0 ? t0 - 1e-9 : t1;
      let best = -1, bestT = dir > 0 ? Infinity : -Infinity;
      for (const L of it.row.lanes) {
        if (!L.n) continue;
        if (dir > 0) {
          let j = upper(L.ts, cur);
          // same start as the current slice but a different (deeper) one
          if (j < L.n && L.ts[j] < bestT) { bestT = L.ts[j]; best = L.idx[j]; }
        } else {
          const j = lower(L.ts, cur) - 1;
          if (j >= 0 && L.ts[j] > bestT) { bestT = L.ts[j]; best = L.idx[j]; }
        }
      }
      if (best >= 0) { reveal(best); select(best); }
    }
    function onKey(e) {
      if (e.ctrlKey || e.metaKey) return;
      const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
      let handled = true;
      switch (k) {
        case 'w': zoomBy(ZOOM_STEP); break;
        case 's': zoomBy(1 / ZOOM_STEP); break;
        case 'a': panBy(-(t1 - t0) * PAN_STEP); break;
        case 'd': panBy((t1 - t0) * PAN_STEP); break;
        case 'ArrowUp': cursor = Math.max(0, cursor - 1); ensureCursorVisible(); invalidate(false); break;
        case 'ArrowDown': cursor = Math.min(items.length - 1, cursor + 1); ensureCursorVisible(); invalidate(false); break;
        case 'ArrowLeft': if (items[cursor] && items[cursor].type === 'row') stepSlice(-1); else panBy(-(t1 - t0) * PAN_STEP); break;
        case 'ArrowRight': if (items[cursor] && items[cursor].type === 'row') stepSlice(1); else panBy((t1 - t0) * PAN_STEP); break;
        case 'PageUp': scrollTo(scrollY - scrollH() * 0.9); break;
        case 'PageDown': scrollTo(scrollY + scrollH() * 0.9); break;
        case 'Enter': {
          const it = items[cursor];
          if (it && it.type === 'rank') toggleRank(it.R);
          else if (it) stepSlice(1);
          break;
        }
        case 'Home': case '0': fit(); break;
        case 'f': {
          if (selected >= 0) { const a = D.tsA[selected], b = a + D.durA[selected], m = Math.max(b - a, MIN_SPAN) * 0.15; setView(a - m, b + m); }
          else if (range) { const m = (range.t1 - range.t0) * 0.1; setView(range.t0 - m, range.t1 + m); }
          break;
        }
        case 'l': longestKernel(); break;
        case '/': search.focus(); search.select(); break;
        case 'p': {
          // pin the row under the pointer, else the keyboard cursor's row
          const lh = mouse ? laneAt(mouse.y) : null;
          const it = lh && lh.it.type === 'row' ? lh.it : items[cursor];
          if (it && it.type === 'row') togglePin(it.row);
          break;
        }
        // M: measure the selected slice on its row; Shift+M: its time span on every row (a step's
        // idle time per stream from the keyboard, as a drag across the rows measures it)
        case 'm': if (selected >= 0) setRange(D.tsA[selected], D.tsA[selected] + D.durA[selected], false, e.shiftKey ? undefined : [D.rowA[selected]]); break;
        case 'Escape':
          if (drag) { drag = null; invalidate(false); }
          else if (range) setRange(null);
          else if (selected >= 0) select(-1);
          else if (highlights.length) { /* leave evidence alone */ handled = false; }
          else handled = false;
          break;
        case ' ': spaceHeld = true; over.classList.add('tt-grab'); break;
        default: handled = false;
      }
      if (handled) e.preventDefault();
    }
    function onKeyUp(e) { if (e.key === ' ') { spaceHeld = false; over.classList.remove('tt-grab'); } }
    // As in Perfetto, the keys work while the pointer is over the timeline, without a click first
    // (unless the user is typing in a field: the diagnosis form keeps its keys).
    function typing(t) {
      return !!(t && t.closest && t.closest('input, textarea, select, [contenteditable=""], [contenteditable="true"]'));
    }
    function onDocKey(e) {
      if (destroyed || e.defaultPrevented || e.target === over || !pointerIn || typing(e.target)) return;
      onKey(e);
    }
    function onDocKeyUp(e) { if (e.target !== over) onKeyUp(e); }
    document.addEventListener('keydown', onDocKey);
    document.addEventListener('keyup', onDocKeyUp);
    function onFocus() { hasFocus = true; invalidate(false); }
    function onBlur() { hasFocus = false; spaceHeld = false; over.classList.remove('tt-grab'); invalidate(false); }

    let searchTimer = 0;
    search.addEventListener('input', () => { clearTimeout(searchTimer); searchTimer = setTimeout(() => setQuery(search.value), 120); });
    search.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        clearTimeout(searchTimer);
        if (mName === null || search.value.trim().toLowerCase() !== lastQuery) setQuery(search.value);
        lastQuery = search.value.trim().toLowerCase();
        stepMatch(e.shiftKey ? -1 : 1);
      } else if (e.key === 'Escape') { e.preventDefault(); search.value = ''; lastQuery = ''; setQuery(''); }
    });
    let lastQuery = '';
    over.addEventListener('pointerdown', onPointerDown);
    over.addEventListener('pointermove', onPointerMove);
    over.addEventListener('pointerup', onPointerUp);
    over.addEventListener('pointercancel', (e) => { if (e.pointerType === 'touch') { touchEnd(e); return; } drag = null; invalidate(false); });
    over.addEventListener('pointerleave', onLeave);
    over.addEventListener('pointerenter', (e) => { if (e.pointerType !== 'touch') pointerIn = true; });
    over.addEventListener('wheel', onWheel, { passive: false });
    over.addEventListener('keydown', onKey);
    over.addEventListener('keyup', onKeyUp);
    over.addEventListener('focus', onFocus);
    over.addEventListener('blur', onBlur);
    over.addEventListener('auxclick', (e) => e.preventDefault());
    over.addEventListener('contextmenu', (e) => { if (drag) e.preventDefault(); });
    let ro = null;
    if (global.ResizeObserver) {
      ro = new ResizeObserver(() => { const w = Math.floor(stage.clientWidth); if (w && w !== cssW) resize(); });
      ro.observe(stage);
    }

    // ---- first frame (synchronous, so mount → first frame is measurable)
    relayout();
    renderDetails();
    resize();
    stats.firstRenderMs = performance.now() - tMount;
    stats.frames.length = 0; stats.drawMs.length = 0;

    const api = {
      zoomTo(a, b) { if (b < a) { const t = a; a = b; b = t; } setView(+a, +b); render(); return api; },
      getView() { return { t0, t1 }; },
      getRange() { return range ? { t0: range.t0, t1: range.t1, dur: range.t1 - range.t0, rows: range.rows.slice() } : null; },
      /** Select [a, b] over the given row indices (default: every row); the table follows. */
      setRange(a, b, rows) { if (a === null || a === undefined) setRange(null); else setRange(+a, +b, true, rows); return api; },
      /** The selected range's table: {t0, t1, dur, slices, names: [{name, count, total, mean, max, share}], rows: [{row, name, rank, kind, busy, idle, busyShare, count, median, exposed?}]} (µs). */
      getAggregate() { return agg; },
      /** Find slices whose name contains q (case-insensitive); returns the number of matches. */
      find(q) { search.value = q || ''; lastQuery = search.value.trim().toLowerCase(); setQuery(q); return matches.length; },
      /** Step to the next (dir 1) or previous (-1) match; returns the selected slice's index. */
      findNext(dir) { stepMatch(dir === undefined ? 1 : dir); return selected; },
      /** Select and zoom to the longest GPU kernel, compute or NCCL (in the selected range and
       *  rows, if any); returns its index, -1 when there is none. */
      longestKernel() { const i = longestKernel(); render(); return i; },
      highlight(evidence) { highlights = Array.isArray(evidence) ? evidence.slice() : evidence ? [evidence] : []; invalidate(false); return api; },
      clearHighlight() { highlights = []; invalidate(false); return api; },
      /** What the evidence looks like now: the spans drawn ({index, x0, x1, bands}) and the label
       *  boxes ({label, x, y, w, h}), in viewport (client) CSS px. Draws first. */
      highlightLayout() {
        dirtyOver = true;
        render();
        const b = over.getBoundingClientRect();
        return {
          spans: hlDrawn.map((d) => ({ index: d.index, x0: b.left + d.x0, x1: b.left + d.x1, bands: d.bands })),
          labels: hlLabels.map((l) => ({ label: l.label, x: b.left + l.x, y: b.top + l.y, w: l.w, h: l.h })),
        };
      },
      on(name, cb) {
        if (!listeners[name]) listeners[name] = [];
        listeners[name].push(cb);
        return () => { listeners[name] = listeners[name].filter((f) => f !== cb); };
      },
      off(name, cb) { if (listeners[name]) listeners[name] = listeners[name].filter((f) => f !== cb); },
      select(i) { if (i === null || i === undefined || i < 0) select(-1); else { reveal(i); select(i, { silent: true }); } return api; },
      getSelection() { return selected >= 0 ? sliceInfo(selected) : null; },
      toggleRank(rank, collapsed) { const R = D.rankBy.get(rank); if (R) toggleRank(R, collapsed); return api; },
      isCollapsed(rank) { const R = D.rankBy.get(rank); return !!(R && R.collapsed); },
      /** Where slice i is drawn, in viewport (client) CSS px, or null when not drawn. */
      sliceBox(i) {
        const r = sliceRect(i);
        if (!r || r.hidden) return null;
        const b = over.getBoundingClientRect();
        const x0 = Math.max(r.x0, trackX0()), x1 = Math.min(r.x1, trackX1());
        if (x1 < x0 || r.y + r.h < AXIS_H || r.y > height) return null;
        return { x: b.left + x0, y: b.top + r.y, w: Math.max(1, x1 - x0), h: r.h };
      },
      /** Viewport x of time t and y of a row (by index), for tests and tours. */
      timeToClientX(t) { return over.getBoundingClientRect().left + tx(t); },
      rowClientY(rowIndex) { const row = D.rows[rowIndex]; if (!row || !row.visible) return null; return over.getBoundingClientRect().top + rowTop(row) + row.h / 2; },
      rankClientY(rank) { const R = D.rankBy.get(rank); return R ? over.getBoundingClientRect().top + rankTop(R) + HEADER_H / 2 : null; },
      scrollToRow(rowIndex) { const row = D.rows[rowIndex]; if (row) { if (row.R.collapsed) toggleRank(row.R, false); if (!row.pinned) scrollTo(row.y - 4); render(); } return api; },
      /** Pin (or unpin, or toggle when `on` is omitted) a row: pinned rows stay at the top. */
      pinRow(rowIndex, on) { const row = D.rows[rowIndex]; if (row) togglePin(row, on); return api; },
      pinnedRows() { return [...pinned]; },
      /** Scroll the unpinned rows by dy CSS px. */
      scrollBy(dy) { scrollTo(scrollY + dy); render(); return api; },
      partnerOf: (i) => partner(i),
      /** Busy fraction of a row over the current view, per CSS-pixel column, and its mean. */
      utilisation(rowIndex) {
        const row = D.rows[rowIndex];
        if (!row) return null;
        const u = utilisation(row);
        return { busy: u.span > 0 ? u.busy / u.span : 0, columns: Array.from(utilBuf.subarray(0, u.cols), (v) => Math.min(1, v)) };
      },
      redraw() { dirtyBase = dirtyOver = true; render(); return api; },
      stats,
      canvas: over,
      element: root,
      destroy() {
        destroyed = true;
        if (raf) cancelAnimationFrame(raf);
        if (ro) ro.disconnect();
        document.removeEventListener('keydown', onDocKey);
        document.removeEventListener('keyup', onDocKeyUp);
        listeners.select = []; listeners.range = []; listeners.view = [];
        root.remove();
      },
    };
    return api;
  }

  global.TraceTimeline = { mount, formatDuration: fmtDur, version: '1.0' };
})(typeof window !== 'undefined' ? window : globalThis);
