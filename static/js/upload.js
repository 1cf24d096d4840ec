/* The upload detail page: mount the timeline, and let "Show me" / "zoom" buttons move it. */
(function () {
  "use strict";

  function zoom(viewer, evidence) {
    if (!viewer || !evidence.length) return;
    viewer.highlight(evidence);
    const t0 = Math.min(...evidence.map((e) => e.start_us));
    const t1 = Math.max(...evidence.map((e) => e.end_us));
    const pad = (t1 - t0) * 0.15 + 1;
    viewer.zoomTo(Math.max(0, t0 - pad), t1 + pad);
    const R = evidence[0].rank;
    if (viewer.isCollapsed && viewer.isCollapsed(R)) viewer.toggleRank(R, false);
    const y = viewer.rankClientY && viewer.rankClientY(R);
    viewer.element.scrollIntoView({ block: "start", behavior: "smooth" });
    return y;
  }

  function init() {
    const host = document.getElementById("timeline");
    if (!host || host.dataset.mounted || !window.TraceTimeline) return;
    host.dataset.mounted = "1";
    fetch(host.dataset.src, { credentials: "same-origin" })
      .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then((data) => {
        const viewer = window.TraceTimeline.mount(host, data, { height: 520 });
        host.viewer = viewer;
        document.querySelectorAll("button.show-me").forEach((b) => {
          b.addEventListener("click", () => {
            const ev = JSON.parse(document.getElementById(b.dataset.evidence).textContent);
            zoom(viewer, ev);
          });
        });
        document.querySelectorAll("button.zoom").forEach((b) => {
          b.addEventListener("click", () => zoom(viewer, [{
            rank: +b.dataset.rank, row: "*", start_us: +b.dataset.start, end_us: +b.dataset.end, label: "step",
          }]));
        });
      })
      .catch((err) => { host.textContent = "Could not load the timeline (" + err.message + "). Use “Export to Perfetto” instead."; });
  }

  document.addEventListener("DOMContentLoaded", init);
})();
