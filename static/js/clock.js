/* The cosmetic countdown shared by the trace and mental-math drills. The server owns every time
   limit; this only mirrors the seconds it said were left when it rendered the page.
   Markup: <div id=… data-remaining="118.2"><span class="clock-label"></span><span class="clock-value"></span></div> */
(function (global) {
  "use strict";

  function format(seconds) {
    const s = Math.max(0, Math.ceil(seconds));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function start(el, { warnAt = 30, onZero = () => {} } = {}) {
    if (!el || el.dataset.running) return;
    el.dataset.running = "1";
    const value = el.querySelector(".clock-value");
    const deadline = performance.now() + parseFloat(el.dataset.remaining) * 1000;
    function tick() {
      if (!document.body.contains(el)) return;
      const left = (deadline - performance.now()) / 1000;
      value.textContent = left > 0 ? format(left) : "0:00";
      el.classList.toggle("warn", left <= warnAt && left > 0);
      el.classList.toggle("over", left <= 0);
      if (left <= 0) { onZero(el); return; }
      setTimeout(tick, 250);
    }
    tick();
  }

  global.TraceTrackClock = { start, format };
})(window);
