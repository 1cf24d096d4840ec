/* The drill page: mount the timeline, run the cosmetic clock, show the reveal's evidence.
   The server owns the time limit; this clock only mirrors it. */
(function () {
  "use strict";

  function fmt(seconds) {
    const s = Math.max(0, Math.ceil(seconds));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function startClock(el) {
    if (!el || el.dataset.running) return;
    el.dataset.running = "1";
    const value = el.querySelector(".clock-value");
    const deadline = performance.now() + parseFloat(el.dataset.remaining) * 1000;
    function tick() {
      if (!document.body.contains(el)) return;
      const left = (deadline - performance.now()) / 1000;
      value.textContent = left > 0 ? fmt(left) : "0:00";
      el.classList.toggle("warn", left <= 30 && left > 0);
      el.classList.toggle("over", left <= 0);
      if (left <= 0) {
        el.querySelector(".clock-label").textContent = "Over time — still commit, it counts as a miss";
        return;
      }
      setTimeout(tick, 250);
    }
    tick();
  }

  function mountTimeline(root) {
    const host = root.querySelector("#timeline");
    if (!host || host.dataset.mounted || !window.TraceTimeline) return;
    host.dataset.mounted = "1";
    fetch(host.dataset.src, { credentials: "same-origin" })
      .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then((data) => {
        const viewer = window.TraceTimeline.mount(host, data, { height: 520 });
        host.viewer = viewer;
        const ev = document.getElementById("reveal-evidence");
        if (ev) {
          const evidence = JSON.parse(ev.textContent);
          if (evidence.length) {
            viewer.highlight(evidence);
            const t0 = Math.min(...evidence.map((e) => e.start_us));
            const t1 = Math.max(...evidence.map((e) => e.end_us));
            const pad = (t1 - t0) * 0.4 + 1;
            viewer.zoomTo(Math.max(0, t0 - pad), t1 + pad);
          }
        }
      })
      .catch((err) => { host.textContent = "Could not load the timeline (" + err.message + "). Use “Export to Perfetto” instead."; });
  }

  function init(root) {
    root = root || document;
    startClock(root.querySelector("#clock"));
    mountTimeline(root);
  }

  document.addEventListener("DOMContentLoaded", () => init(document));
  document.addEventListener("htmx:afterSettle", () => {
    init(document);
    const reveal = document.getElementById("reveal");
    if (reveal) { reveal.scrollIntoView({ block: "start" }); reveal.focus({ preventScroll: true }); }
  });
})();
