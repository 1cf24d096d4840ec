// Confirm before a form that cannot be undone (regenerating a cohort's join code, deleting an
// uploaded trace): a form with data-confirm="question" submits only when the question is
// answered OK. Loaded as a file on every page (CSP forbids inline scripts); no dependencies.
(function () {
  "use strict";

  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
    });
  });
})();
