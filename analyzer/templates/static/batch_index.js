// Sort the applications table by a clicked column and filter its rows by a search string.
(function () {
  "use strict";
  var table = document.getElementById("apps");
  if (!table) { return; }
  var body = table.tBodies[0];
  var headers = table.tHead.rows[0].cells;
  function key(row, index, numeric) {
    var cell = row.cells[index];
    if (numeric) { return Number(cell.getAttribute("data-value")); }
    return cell.textContent.trim().toLowerCase();
  }
  Array.prototype.forEach.call(headers, function (th, index) {
    var kind = th.getAttribute("data-sort");
    if (!kind) { return; }
    th.addEventListener("click", function () {
      var ascending = !th.classList.contains("sorted-asc");
      Array.prototype.forEach.call(headers, function (h) { h.classList.remove("sorted-asc", "sorted-desc"); });
      th.classList.add(ascending ? "sorted-asc" : "sorted-desc");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a, index, kind === "num"), y = key(b, index, kind === "num");
        var order = x < y ? -1 : x > y ? 1 : 0;
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
  var filter = document.getElementById("filter");
  filter.addEventListener("input", function () {
    var needle = filter.value.trim().toLowerCase();
    Array.prototype.forEach.call(body.rows, function (row) {
      var hit = !needle || row.textContent.toLowerCase().indexOf(needle) >= 0;
      row.classList.toggle("hidden", !hit);
    });
  });
})();
