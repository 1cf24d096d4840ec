/* The cosmetic countdown shared by the trace and mental-math drills. The server owns every time
   limit; this only mirrors the seconds it said were left when it rendered the page.
   Markup: <div id=… data-remaining="118.2"><span class="clock-label"></span><span class="clock-value"></span></div>
   The clock itself is silent to screen readers (role=timer, aria-live=off). With data-announce="<id>" it
   names a polite live region that is told twice: when the warning starts and when time runs out. */
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
    const live = el.dataset.announce ? document.getElementById(el.dataset.announce) : null;
    let said = "";
    function say(key, text) {
      if (!live || said === key) return;
      said = key;
      live.textContent = text;
    }
    function tick() {
      if (!document.body.contains(el)) return;
      const left = (deadline - performance.now()) / 1000;
      value.textContent = left > 0 ? format(left) : "0:00";
      el.classList.toggle("warn", left <= warnAt && left > 0);
      el.classList.toggle("over", left <= 0);
      // Announce on crossing a threshold only; a page opened already inside it stays quiet until the next.
      if (left <= warnAt && left > 0 && parseFloat(el.dataset.remaining) > warnAt) say("warn", Math.ceil(left) + " seconds left.");
      if (left <= 0) { say("over", "Time is up. You can still commit; it counts as a miss."); onZero(el); return; }
      setTimeout(tick, 250);
    }
    tick();
  }

  global.TraceTrackClock = { start, format };
})(window);
