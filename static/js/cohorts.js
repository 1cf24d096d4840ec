// Cohort pages: sortable grids, the accuracy/retrievability toggle, confirm-before-remove.
// Loaded as a file (CSP forbids inline scripts); no dependencies.
(function () {
  "use strict";

  function cellValue(row, index, table) {
    var cell = row.children[index];
    if (!cell) return "";
    var th = table.tHead.rows[0].children[index];
    if (th && th.dataset.sort === "metric") {
      return cell.getAttribute("data-" + (table.dataset.metric || "acc")) || "";
    }
    var v = cell.getAttribute("data-sort-value");
    return v === null ? cell.textContent.trim() : v;
  }

  function compare(a, b, numeric) {
    var ea = a === "", eb = b === "";
    if (ea || eb) return ea === eb ? 0 : ea ? 1 : -1; // blanks last, either direction
    if (numeric) return parseFloat(a) - parseFloat(b);
    return a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  }

  function sortBy(table, index, descending) {
    var th = table.tHead.rows[0].children[index];
    var numeric = th.dataset.sort === "num" || th.dataset.sort === "metric";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (ra, rb) {
      var va = cellValue(ra, index, table), vb = cellValue(rb, index, table);
      if (va === "" || vb === "") return compare(va, vb, numeric);
      var c = compare(va, vb, numeric);
      return descending ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
    Array.prototype.forEach.call(table.tHead.rows[0].children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
  }

  document.querySelectorAll("table.sortable").forEach(function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    Array.prototype.forEach.call(table.tHead.rows[0].children, function (th, index) {
      if (!th.dataset.sort) return;
      th.tabIndex = 0;
      th.classList.add("sort-header");
      function go() {
        var desc = th.getAttribute("aria-sort") === "ascending";
        sortBy(table, index, desc);
      }
      th.addEventListener("click", go);
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); go(); }
      });
    });
  });

  document.querySelectorAll("button.metric").forEach(function (btn) {
    btn.addEventListener("click", function () {
      var table = document.getElementById("scenario-grid");
      if (!table) return;
      table.dataset.metric = btn.dataset.metric;
      document.querySelectorAll("button.metric").forEach(function (b) {
        b.setAttribute("aria-pressed", b === btn ? "true" : "false");
      });
      table.classList.toggle("by-r", btn.dataset.metric === "r");
      var sorted = table.querySelector('th[aria-sort]');
      if (sorted && sorted.dataset.sort === "metric") {
        sortBy(table, Array.prototype.indexOf.call(sorted.parentNode.children, sorted),
               sorted.getAttribute("aria-sort") === "descending");
      }
    });
  });

  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (ev) {
      if (!window.confirm(form.dataset.confirm)) ev.preventDefault();
    });
  });
})();
