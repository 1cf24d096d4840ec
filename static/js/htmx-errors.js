// What htmx leaves silent: an answer it could not deliver. htmx 2 swaps nothing on a 401/403/404/
// 429/5xx or a network failure (base.html's responseHandling), so the Commit button just came
// back and the learner could not tell their diagnosis had not been sent. Here a line beside the
// form says why and that what was typed is still there (it is: nothing was swapped).
//
// Every htmx request also takes the CSRF token from the cookie when there is one (header and form
// field): a sign-in in another tab rotates it, and the token this page was rendered with would
// then be refused (403) on every later send from this tab, even after signing in again.
// Loaded as a file on every page (CSP forbids inline scripts); no dependencies.
(function () {
  "use strict";

  function cookie(name) {
    var found = document.cookie.match(new RegExp("(?:^|; )" + name + "=([^;]*)"));
    return found ? decodeURIComponent(found[1]) : null;
  }

  var KEPT = " What you typed is still here.";
  function reason(status) {
    if (status === 401) {
      return "Not sent: you are signed out (in another tab, or the session ended). " +
        "Sign in again in another tab, then send it again." + KEPT;
    }
    if (status === 403) {
      return "Not sent: the page's session changed (a sign-in in another tab). " +
        "Check which account is signed in, then send it again." + KEPT;
    }
    if (status === 404) {
      return "Not sent: this is not found for the account now signed in " +
        "(signed in as someone else in another tab?)." + KEPT;
    }
    if (status === 429) return "Not sent: too many requests just now; wait a moment and try again." + KEPT;
    if (status === 0) return "Not sent: the server could not be reached. Try again in a moment." + KEPT;
    return "Not sent: the server failed (error " + status + "). Try again in a moment." + KEPT;
  }

  function box(elt) {
    var host = (elt.closest && elt.closest("form")) || elt;
    var line = host.querySelector(".send-error");
    if (!line) {
      line = document.createElement("p");
      line.className = "errors send-error";
      line.setAttribute("role", "alert");
      host.appendChild(line);
    }
    return line;
  }

  document.addEventListener("htmx:configRequest", function (evt) {
    var token = cookie("csrftoken");
    if (!token) return;
    evt.detail.headers["x-csrftoken"] = token;
    // A form's own hidden token is checked before the header: it gets the fresh one too.
    var params = evt.detail.parameters;
    if (params && params.csrfmiddlewaretoken !== undefined) params.csrfmiddlewaretoken = token;
  });
  document.addEventListener("htmx:beforeRequest", function (evt) {
    var host = (evt.detail.elt.closest && evt.detail.elt.closest("form")) || evt.detail.elt;
    var line = host.querySelector(".send-error");
    if (line) line.remove();
  });
  document.addEventListener("htmx:responseError", function (evt) {
    box(evt.detail.elt).textContent = reason(evt.detail.xhr.status);
  });
  document.addEventListener("htmx:sendError", function (evt) {
    box(evt.detail.elt).textContent = reason(0);
  });
})();
