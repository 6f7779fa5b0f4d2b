/* The HTML report's behaviour: plan switching, the node panel (histograms, sortable task
   table), links from findings to plan nodes, node search. Data comes only from <script type="application/json"> elements and is
   inserted with textContent / createElementNS, never as HTML. */
(function () {
  "use strict";
  var dataCache = {};
  var SVG = "http://www.w3.org/2000/svg";

  function executionData(section) {
    var id = section.getAttribute("data-data-id");
    if (!(id in dataCache)) {
      var el = document.getElementById(id);
      dataCache[id] = el ? JSON.parse(el.textContent) : { hist: {}, tasks: {} };
    }
    return dataCache[id];
  }

  function fmtCount(v) { return Math.round(v).toLocaleString("en-US"); }
  function fmtBytes(v) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return i === 0 ? Math.trunc(v) + " B" : v.toFixed(1) + " " + units[i];
  }
  function fmtMs(ms) {
    if (Math.abs(ms) < 1000) return Math.round(ms) + " ms";
    var s = ms / 1000;
    if (Math.abs(s) < 60) return s.toFixed(1) + " s";
    var total = Math.round(s), m = Math.floor(total / 60), sec = total % 60;
    if (m < 60) return m + "m " + String(sec).padStart(2, "0") + "s";
    return Math.floor(m / 60) + "h " + String(m % 60).padStart(2, "0") + "m";
  }
  function fmtValue(type, v) {
    if (v === null || v === undefined) return "–";
    if (type === "size") return fmtBytes(v);
    if (type === "timing") return fmtMs(v);
    if (type === "nsTiming") return fmtMs(v / 1e6);
    if (type === "average") return (v / 10).toFixed(1);
    return fmtCount(v);
  }

  function svgEl(name, attrs) {
    var el = document.createElementNS(SVG, name);
    for (var k in attrs) el.setAttribute(k, attrs[k]);
    return el;
  }

  function drawHistogram(container, hist) {
    if (!hist) return;
    var counts = hist.counts, w = 300, h = 60, n = counts.length;
    var max = Math.max.apply(null, counts) || 1;
    var svg = svgEl("svg", { width: w, height: h + 14, "class": "histogram" });
    var bw = w / n;
    counts.forEach(function (c, i) {
      var bh = c === 0 ? 0 : Math.max(1, (h * c) / max);
      var r = svgEl("rect", { x: (i * bw + 0.5).toFixed(1), y: (h - bh).toFixed(1), width: Math.max(bw - 1, 1).toFixed(1), height: bh.toFixed(1) });
      var t = svgEl("title", {});
      t.textContent = fmtCount(c) + (c === 1 ? " value" : " values");
      r.appendChild(t);
      svg.appendChild(r);
    });
    var lo = svgEl("text", { x: 0, y: h + 12 }); lo.textContent = hist.lo_str;
    var hi = svgEl("text", { x: w, y: h + 12, "text-anchor": "end" }); hi.textContent = hist.hi_str;
    svg.appendChild(lo); svg.appendChild(hi);
    container.appendChild(svg);
  }

  function buildTaskTable(container, detail) {
    if (!detail) return;
    var head = ["task", "stage", "partition", "executor", "host", "task duration"];
    var types = ["sum", "sum", "sum", "str", "str", "timing"];
    detail.columns.forEach(function (c) { head.push(c.name); types.push(c.type); });
    var caption = document.createElement("p");
    caption.className = "muted";
    caption.textContent = detail.rows.length < detail.n_tasks
      ? "The " + detail.rows.length + " tasks with the largest " + detail.main + " of " + fmtCount(detail.n_tasks) + " (the JSON report has the statistics over all)."
      : "All " + fmtCount(detail.n_tasks) + " tasks; click a column to sort.";
    container.appendChild(caption);
    var table = document.createElement("table");
    var thead = table.createTHead().insertRow();
    var tbody = table.createTBody();
    var rows = detail.rows.slice();
    var sortCol = 6, desc = true;
    function fill() {
      tbody.textContent = "";
      rows.forEach(function (r) {
        var tr = tbody.insertRow();
        r.forEach(function (v, i) {
          var td = tr.insertCell();
          if (types[i] === "str") td.textContent = v === null ? "–" : String(v);
          else { td.textContent = i < 3 ? (v === null ? "–" : String(v)) : fmtValue(types[i], v); td.className = "num"; }
        });
      });
      Array.prototype.forEach.call(thead.cells, function (th, i) {
        th.className = i === sortCol ? (desc ? "sorted-desc" : "sorted-asc") : "";
      });
    }
    head.forEach(function (name, i) {
      var th = document.createElement("th");
      th.textContent = name;
      th.addEventListener("click", function () {
        desc = sortCol === i ? !desc : true;
        sortCol = i;
        rows.sort(function (a, b) {
          var x = a[i], y = b[i];
          if (x === y) return 0;
          if (x === null) return 1;
          if (y === null) return -1;
          return (x < y ? -1 : 1) * (desc ? -1 : 1);
        });
        fill();
      });
      thead.appendChild(th);
    });
    fill();
    container.appendChild(table);
  }

  var panel = document.getElementById("panel");
  var panelBody = document.getElementById("panel-body");
  var panelTitle = document.getElementById("panel-title");
  var selected = null;

  function openPanel(target) {
    var key = target.getAttribute("data-node");
    var section = target.closest("section.execution");
    var source = section.querySelector('.node-panel[data-panel="' + key + '"]');
    if (!source) return;
    var data = executionData(section);
    var copy = source.cloneNode(true);
    panelBody.textContent = "";
    panelBody.appendChild(copy);
    panelTitle.textContent = "Execution " + section.id.replace("exec-", "");
    copy.querySelectorAll(".hist").forEach(function (h) { drawHistogram(h, data.hist[h.getAttribute("data-hist")]); });
    copy.querySelectorAll(".task-table").forEach(function (t) { buildTaskTable(t, data.tasks[t.getAttribute("data-tasks")]); });
    if (selected) selected.classList.remove("selected");
    selected = target;
    target.classList.add("selected");
    panel.hidden = false;
    panel.scrollTop = 0;
  }

  function showPlan(section, planId) {
    section.querySelectorAll(".plan-tab").forEach(function (b) { b.classList.toggle("active", b.getAttribute("data-plan") === planId); });
    section.querySelectorAll(".plan").forEach(function (p) { p.hidden = p.id !== planId; });
  }

  /* A finding's node link: show the plan holding the node, scroll to it and open its panel. */
  function showNode(id) {
    var node = document.getElementById(id);
    if (!node || !node.classList.contains("node-target")) return false;
    var plan = node.closest(".plan");
    if (plan.hidden) showPlan(plan.closest("section.execution"), plan.id);
    node.scrollIntoView({ block: "center", inline: "center" });
    openPanel(node);
    return true;
  }

  document.addEventListener("click", function (ev) {
    var link = ev.target.closest ? ev.target.closest(".finding-node") : null;
    if (link) {
      if (showNode(link.getAttribute("data-target-node"))) ev.preventDefault();
      return;
    }
    var target = ev.target.closest ? ev.target.closest(".node-target") : null;
    if (target) { openPanel(target); return; }
    var tab = ev.target.closest ? ev.target.closest(".plan-tab") : null;
    if (tab) showPlan(tab.closest("section.execution"), tab.getAttribute("data-plan"));
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") panel.hidden = true;
    if (ev.key === "Enter" && ev.target.classList && ev.target.classList.contains("node")) openPanel(ev.target);
  });
  document.getElementById("panel-close").addEventListener("click", function () { panel.hidden = true; });
  if (location.hash.length > 1) showNode(location.hash.slice(1));

  var search = document.getElementById("node-search");
  var searchCount = document.getElementById("search-count");
  search.addEventListener("input", function () {
    var q = search.value.trim().toLowerCase();
    var hits = 0;
    document.querySelectorAll(".node-target").forEach(function (n) {
      var hit = q !== "" && n.getAttribute("data-name").toLowerCase().indexOf(q) >= 0;
      n.classList.toggle("match", hit);
      if (hit && !n.closest(".plan").hidden) hits++;
    });
    searchCount.textContent = q === "" ? "" : hits + (hits === 1 ? " node" : " nodes");
  });
  search.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter") return;
    var first = Array.prototype.find.call(document.querySelectorAll(".node-target.match"), function (n) { return !n.closest(".plan").hidden; });
    if (first) { first.scrollIntoView({ block: "center", inline: "center" }); openPanel(first); }
  });
})();
