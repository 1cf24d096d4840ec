/* Mental-math pages: the cosmetic clocks and focus handling. The server owns every time limit
   (2:00 per problem, the sprint's end); these clocks only mirror what it said when it rendered. */
(function () {
  "use strict";

  function fmt(seconds) {
    const s = Math.max(0, Math.ceil(seconds));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function startClock(el, onZero) {
    if (!el || el.dataset.running) return;
    el.dataset.running = "1";
    const value = el.querySelector(".clock-value");
    const deadline = performance.now() + parseFloat(el.dataset.remaining) * 1000;
    function tick() {
      if (!document.body.contains(el)) return;
      const left = (deadline - performance.now()) / 1000;
      value.textContent = left > 0 ? fmt(left) : "0:00";
      el.classList.toggle("warn", left <= 20 && left > 0);
      el.classList.toggle("over", left <= 0);
      if (left <= 0) { onZero(el); return; }
      setTimeout(tick, 250);
    }
    tick();
  }

  function problemOver(el) {
    el.querySelector(".clock-label").textContent = "Over 2:00 — still answer, it counts as a miss";
  }

  function sprintOver(el) {
    el.querySelector(".clock-label").textContent = "Time!";
    const form = document.getElementById("sprint-answer-form");
    if (form) form.querySelectorAll("input, button").forEach((x) => { x.disabled = true; });
    // Show the summary (the server decides what counted).
    setTimeout(() => { if (document.body.contains(el)) window.location.assign(el.dataset.doneUrl); }, 600);
  }

  function focusAnswer() {
    const input = document.querySelector(".math-answer input[name=answer]");
    if (input && !input.disabled) { input.focus(); input.select(); }
  }

  function init() {
    startClock(document.getElementById("math-clock"), problemOver);
    startClock(document.getElementById("sprint-clock"), sprintOver);
  }

  document.addEventListener("DOMContentLoaded", () => { init(); focusAnswer(); });
  document.addEventListener("htmx:afterSettle", () => {
    init();
    const reveal = document.getElementById("math-reveal");
    if (reveal && !document.getElementById("sprint-area")) {
      reveal.scrollIntoView({ block: "start" });
      reveal.focus({ preventScroll: true });
    } else {
      focusAnswer();
    }
  });
})();
