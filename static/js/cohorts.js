// Cohort pages: confirm-before-remove. The roster is sorted and paged by the server (its
// headers and page numbers are links), so every learner of the cohort is reachable in order.
// Loaded as a file (CSP forbids inline scripts); no dependencies.
(function () {
  "use strict";

  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
    });
  });
})();
