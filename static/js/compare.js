/* Two timelines on one time scale: the contrast trial's pair and the reveal's "after the fix".
   Markup: <div data-shared-scale> holding two .timeline-host[data-src]. Both are fetched, given the
   same span (the longer of the two), mounted, and kept on the same view: zooming or panning one
   moves the other. A json_script #compare-evidence ({left: [...], right: [...]}) is highlighted. */
(function () {
  "use strict";

  function mountPair(group) {
    if (group.dataset.mounted || !window.TraceTimeline) return;
    group.dataset.mounted = "1";
    const hosts = Array.from(group.querySelectorAll(".timeline-host[data-src]"));
    Promise.all(hosts.map((h) => fetch(h.dataset.src, { credentials: "same-origin" })
      .then((r) => { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })))
      .then((all) => {
        const spans = all.map(spanOf);
        const start = Math.min(...spans.map((s) => s[0])), end = Math.max(...spans.map((s) => s[1]));
        const viewers = all.map((data, i) => {
          data.span = [start, end];
          const v = window.TraceTimeline.mount(hosts[i], data, { height: 360, details: false });
          hosts[i].viewer = v;
          return v;
        });
        let syncing = false;
        viewers.forEach((v, i) => v.on("view", (view) => {
          if (syncing) return;
          syncing = true;
          try { viewers.forEach((w, j) => { if (j !== i) w.zoomTo(view.t0, view.t1); }); } finally { syncing = false; }
        }));
        group.dataset.span = String(end);
        const ev = document.getElementById(group.dataset.evidence || "compare-evidence");
        if (ev) {
          const bySide = JSON.parse(ev.textContent);
          hosts.forEach((h, i) => { const e = bySide[h.dataset.side]; if (e && e.length) viewers[i].highlight(e); });
        }
      })
      .catch((err) => { group.textContent = "Could not load the timelines (" + err.message + ")."; });
  }

  function spanOf(data) {
    return data.span && data.span[1] > data.span[0] ? [+data.span[0], +data.span[1]] : [0, 1];
  }

  function init() {
    document.querySelectorAll("[data-shared-scale]").forEach(mountPair);
    const clock = document.querySelector("#trial-area #clock");
    if (clock && window.TraceTrackClock) {
      window.TraceTrackClock.start(clock, { warnAt: 15, onZero: (el) => {
        el.querySelector(".clock-label").textContent = "Over time — still commit, it counts as a miss";
      } });
    }
  }

  document.addEventListener("DOMContentLoaded", init);
  document.addEventListener("htmx:afterSettle", init);  // the reveal swapped in after a commit
})();
