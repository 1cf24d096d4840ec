/* The drill page: mount the timeline, run the cosmetic clock, show the reveal's evidence.
   The server owns the time limit; this clock only mirrors it. */
(function () {
  "use strict";

  function overTime(el) {
    el.querySelector(".clock-label").textContent = "Over time — still commit; your schedule counts it as a miss";
  }

  // Highlight evidence spans and zoom the viewer to them (with some context either side).
  function showEvidence(viewer, evidence) {
    if (!viewer || !evidence || !evidence.length) return;
    viewer.highlight(evidence);
    const t0 = Math.min(...evidence.map((e) => e.start_us));
    const t1 = Math.max(...evidence.map((e) => e.end_us));
    const pad = (t1 - t0) * 0.4 + 1;
    viewer.zoomTo(Math.max(0, t0 - pad), t1 + pad);
  }

  // The reveal's "Show me" buttons: zoom the timeline to the evidence of one sentence.
  document.addEventListener("click", (evt) => {
    const button = evt.target.closest && evt.target.closest("button.show-me");
    if (!button) return;
    const host = document.getElementById("timeline");
    if (!host || !host.viewer) return;
    const evidence = JSON.parse(button.dataset.evidence || "[]");
    showEvidence(host.viewer, evidence);
    host.scrollIntoView({ block: "center", behavior: "smooth" });
    // Say what changed: the timeline moved, out of sight of a screen reader; focus stays here.
    const say = document.getElementById("evidence-announce");
    const labels = [...new Set(evidence.map((e) => e.label).filter(Boolean))];
    if (say) say.textContent = "The timeline is zoomed to the evidence" + (labels.length ? ": " + labels.join(", ") : "") + ", highlighted.";
  });

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
        if (ev) showEvidence(viewer, JSON.parse(ev.textContent));
      })
      .catch((err) => { host.textContent = "Could not load the timeline (" + err.message + "). Use “Export to Perfetto” instead."; });
  }

  function init(root) {
    root = root || document;
    window.TraceTrackClock.start(root.querySelector("#clock"), { warnAt: 30, onZero: overTime });
    mountTimeline(root);
  }

  document.addEventListener("DOMContentLoaded", () => init(document));
  // After an htmx swap of the drill area, put the keyboard (and a screen reader) where the user now is:
  // the verdict after a commit, the first bad field after a failed one, the question on a fresh drill.
  document.addEventListener("htmx:afterSettle", (evt) => {
    init(document);
    const area = document.getElementById("drill-area");
    if (!area || !(evt.target === area || evt.target.contains(area) || area.contains(evt.target))) return;
    const reveal = document.getElementById("reveal");
    const bad = area.querySelector(".has-error select, .has-error input");
    const title = document.getElementById("drill-title");
    if (reveal) { reveal.scrollIntoView({ block: "start" }); reveal.focus({ preventScroll: true }); }
    else if (bad) { bad.focus(); }
    else if (title) { title.focus({ preventScroll: true }); window.scrollTo(0, 0); }
  });
})();
