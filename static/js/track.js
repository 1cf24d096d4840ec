/* Track pages: mount inline timelines, drive the walkthrough step-through, size progress bars.
   No inline scripts (strict CSP): everything comes from data attributes. */
(function () {
  "use strict";

  /* ---- focus vocabulary: full | step:N | evidence:K | rank:R ------------------------------ */

  function profilerSteps(data) {
    const rows = new Set();
    data.rows.forEach((r, i) => { if (r.rank === 0 && r.kind === "cpu") rows.add(i); });
    const s = data.slices, out = [];
    for (let i = 0; i < s.ts.length; i++) {
      if (!rows.has(s.row[i])) continue;
      const name = data.names[s.name[i]] || "";
      if (name.indexOf("ProfilerStep#") === 0) out.push({ name: name, ts: +s.ts[i], dur: +s.dur[i] });
    }
    out.sort((a, b) => a.ts - b.ts);
    return out;
  }

  function applyFocus(viewer, data, focus) {
    const span = data.span || [0, 1];
    const m = /^(full|step|evidence|rank)(?::(\d+))?$/.exec(focus || "full") || ["", "full"];
    const kind = m[1], n = m[2] === undefined ? 0 : parseInt(m[2], 10);
    viewer.clearHighlight();
    if (kind === "step") {
      const steps = profilerSteps(data);
      const st = steps.find((x) => x.name === "ProfilerStep#" + n) || steps[Math.min(n, steps.length - 1)];
      if (st) {
        const pad = st.dur * 0.04;
        viewer.highlight([{ rank: 0, row: "cpu", start_us: st.ts, end_us: st.ts + st.dur, label: st.name }]);
        viewer.zoomTo(Math.max(span[0], st.ts - pad), st.ts + st.dur + pad);
        return;
      }
    } else if (kind === "evidence") {
      const ev = (data.evidence || [])[n];
      if (ev) {
        const pad = (ev.end_us - ev.start_us) * 0.4 + 1;
        viewer.highlight([ev]);
        viewer.zoomTo(Math.max(span[0], ev.start_us - pad), Math.min(span[1], ev.end_us + pad));
        return;
      }
    } else if (kind === "rank") {
      viewer.highlight([{ rank: n, row: "*", start_us: span[0], end_us: span[1], label: "rank " + n }]);
    }
    viewer.zoomTo(span[0], span[1]);
  }

  function showDetails(box, slice) {
    if (!box) return;
    const rows = [["Name", slice.name], ["Start", (slice.start / 1000).toFixed(3) + " ms"],
      ["Duration", slice.dur >= 1000 ? (slice.dur / 1000).toFixed(3) + " ms" : slice.dur.toFixed(1) + " µs"], ["Row", slice.row]];
    for (const [k, v] of Object.entries(slice.args || {})) rows.push([k, Array.isArray(v) ? v.join(" × ") : String(v)]);
    const dl = document.createElement("dl");
    for (const [k, v] of rows) {
      const dt = document.createElement("dt"); dt.textContent = k;
      const dd = document.createElement("dd"); dd.textContent = v;
      dl.append(dt, dd);
    }
    box.replaceChildren(dl);
  }

  /* ---- mounting -------------------------------------------------------------------------- */

  function mount(host) {
    if (host.dataset.mounted || !window.TraceTimeline) return Promise.resolve(null);
    host.dataset.mounted = "1";
    host.classList.add("loading");
    return fetch(host.dataset.src, { credentials: "same-origin" })
      .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then((data) => {
        host.classList.remove("loading");
        const viewer = window.TraceTimeline.mount(host, data, { height: parseInt(host.dataset.height || "300", 10) });
        host.viewer = viewer; host.timelineData = data;
        const details = host.parentElement.querySelector(".details");
        viewer.on("select", (s) => showDetails(details, s));
        if (host.dataset.focus) applyFocus(viewer, data, host.dataset.focus);
        host.dispatchEvent(new CustomEvent("timeline:ready", { bubbles: true }));
        return host;
      })
      .catch((err) => {
        host.classList.remove("loading");
        host.textContent = "Could not load the timeline (" + err.message + ").";
        return null;
      });
  }

  /* ---- walkthrough step-through ---------------------------------------------------------- */

  function stepper(root) {
    const steps = Array.from(root.querySelectorAll(".wt-step"));
    const host = root.querySelector("#timeline");
    const prev = root.querySelector(".wt-prev"), next = root.querySelector(".wt-next");
    const counter = root.querySelector(".wt-current");
    let current = 0;
    root.classList.add("js-stepper");

    function go(i, opts) {
      current = Math.max(0, Math.min(steps.length - 1, i));
      steps.forEach((li, j) => {
        li.classList.toggle("current", j === current);
        li.classList.toggle("done", j < current);
        li.setAttribute("aria-current", j === current ? "step" : "false");
      });
      prev.disabled = current === 0;
      next.disabled = current === steps.length - 1;
      counter.textContent = String(current + 1);
      root.dataset.step = String(current);
      if (host.viewer) applyFocus(host.viewer, host.timelineData, steps[current].dataset.focus);
      if (!opts || !opts.silent) {
        history.replaceState(null, "", "#step-" + (current + 1));
        steps[current].scrollIntoView({ block: "nearest", behavior: "smooth" });
      }
    }

    root.addEventListener("click", (e) => {
      const b = e.target.closest("[data-step-move]");
      if (b) { go(current + parseInt(b.dataset.stepMove, 10)); return; }
      const link = e.target.closest(".wt-step-link");
      if (link) { e.preventDefault(); go(parseInt(link.closest(".wt-step").dataset.index, 10)); }
    });
    document.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      const t = e.target;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      if (e.key === "ArrowRight" || e.key === "n" || e.key === "j") { e.preventDefault(); go(current + 1); }
      else if (e.key === "ArrowLeft" || e.key === "p" || e.key === "k") { e.preventDefault(); go(current - 1); }
    });
    const m = /^#step-(\d+)$/.exec(location.hash);
    const start = m ? parseInt(m[1], 10) - 1 : 0;
    go(start, { silent: true });
    host.addEventListener("timeline:ready", () => go(current, { silent: true }));
    mount(host);
  }

  function init() {
    // On a phone the track's contents fold under their summary, so the page itself comes first.
    const navBox = document.querySelector(".track-nav-box");
    if (navBox && window.matchMedia("(max-width: 820px)").matches) navBox.open = false;
    document.querySelectorAll(".progress-bar[data-max]").forEach((bar) => {
      const max = parseFloat(bar.dataset.max) || 1;
      bar.style.width = Math.round((100 * parseFloat(bar.dataset.value || "0")) / max) + "%";
    });
    const wt = document.getElementById("walkthrough");
    if (wt) stepper(wt);
    const hosts = Array.from(document.querySelectorAll(".timeline-host[data-src]")).filter((h) => !h.dataset.mounted);
    if (!hosts.length) return;
    if (!("IntersectionObserver" in window)) { hosts.forEach(mount); return; }
    const io = new IntersectionObserver((entries) => {
      for (const en of entries) if (en.isIntersecting) { io.unobserve(en.target); mount(en.target); }
    }, { rootMargin: "300px" });
    hosts.forEach((h) => io.observe(h));
  }

  document.addEventListener("DOMContentLoaded", init);
})();
