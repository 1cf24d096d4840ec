/* Mental-math pages: the cosmetic clocks and focus handling. The server owns every time limit
   (2:00 per problem, the sprint's end); these clocks only mirror what it said when it rendered. */
(function () {
  "use strict";

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
    const clock = window.TraceTrackClock;
    clock.start(document.getElementById("math-clock"), { warnAt: 20, onZero: problemOver });
    clock.start(document.getElementById("sprint-clock"), { warnAt: 20, onZero: sprintOver });
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
