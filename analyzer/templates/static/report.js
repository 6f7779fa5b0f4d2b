/* The HTML report's behaviour: plan graphs you can pan, zoom, fit, fold and collapse; the node
   panel (histograms, sortable task table); links from the first screen to plan nodes and stage
   rows; node search. Data comes only from <script type="application/json"> elements and the
   page's own attributes, and is inserted with textContent / createElementNS, never as HTML. */
(function () {
  "use strict";
  var dataCache = {};
  var SVG = "http://www.w3.org/2000/svg";
  var MIN_ZOOM = 0.04, MAX_ZOOM = 4, CLUSTER_PAD = 10, CLUSTER_HEAD = 28;

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

  /* ---- Plan graphs: one state per plan container ------------------------------------------ */

  var graphs = {};

  function pair(text) {
    var p = (text || "").split(",");
    return [parseFloat(p[0]), parseFloat(p[1])];
  }

  function Graph(plan) {
    this.plan = plan;
    this.view = plan.querySelector(".plan-view");
    this.svg = plan.querySelector("svg.plan-graph");
    this.nodes = {};
    this.order = [];
    var self = this;
    plan.querySelectorAll("g.node").forEach(function (g) {
      var xy = pair(g.getAttribute("data-xy")), fxy = pair(g.getAttribute("data-fxy"));
      var node = {
        el: g, id: g.id, x: xy[0], y: xy[1], fx: fxy[0], fy: fxy[1],
        into: g.getAttribute("data-into"), tp: g.getAttribute("data-tp"), ftp: g.getAttribute("data-ftp"),
        cluster: g.getAttribute("data-cluster"), w: 196, h: 46
      };
      var r = g.querySelector("rect");
      node.w = parseFloat(r.getAttribute("width"));
      node.h = parseFloat(r.getAttribute("height"));
      self.nodes[g.id] = node;
      self.order.push(node);
    });
    this.clusters = {};
    plan.querySelectorAll("g.cluster").forEach(function (g) {
      var b = g.getAttribute("data-box").split(",").map(parseFloat);
      self.clusters[g.id] = { el: g, id: g.id, x: b[0], y: b[1], w: b[2], h: b[3], members: [] };
    });
    this.order.forEach(function (n) { if (n.cluster && self.clusters[n.cluster]) self.clusters[n.cluster].members.push(n); });
    this.edges = Array.prototype.map.call(plan.querySelectorAll("path.edge"), function (p) {
      return { el: p, from: p.getAttribute("data-from"), to: p.getAttribute("data-to") };
    });
    this.order.forEach(function (n) {
      if (n.el.classList.contains("has-inputs")) n.el.appendChild(collapseButton(n.w - 26, -7, "the inputs of " + n.el.getAttribute("data-name")));
    });
    Object.keys(this.clusters).forEach(function (id) {
      var c = self.clusters[id];
      c.el.appendChild(collapseButton(c.x + c.w - 20, c.y + 3, "the codegen box"));
    });
    this.folded = false;
    this.collapsed = {};
    this.collapsedClusters = {};
    this.k = 1; this.x = 0; this.y = 0;
    this.ready = false;
    this.bindEvents();
  }

  function collapseButton(x, y, what) {
    var g = svgEl("g", { "class": "collapse", role: "button", "aria-label": "collapse or expand " + what });
    var title = svgEl("title", {});
    title.textContent = "Collapse or expand " + what;
    g.appendChild(title);
    g.appendChild(svgEl("rect", { x: x, y: y, width: 16, height: 13, rx: 3 }));
    var t = svgEl("text", { x: x + 8, y: y + 11, "text-anchor": "middle" });
    t.textContent = "−";
    g.appendChild(t);
    return g;
  }

  Graph.prototype.parentOf = function (n) { return this.folded ? n.ftp : n.tp; };

  /* Which nodes show, where, and what a hidden one is drawn as (its representative). */
  Graph.prototype.update = function () {
    var self = this, hidden = {}, rep = {};
    function collapsedAbove(n) {
      var seen = 0, p = self.parentOf(n);
      while (p && seen++ < 100000) {
        if (self.collapsed[p]) return true;
        var pn = self.nodes[p];
        p = pn ? self.parentOf(pn) : null;
      }
      return false;
    }
    this.order.forEach(function (n) {
      if (self.folded && n.into) { hidden[n.id] = true; rep[n.id] = n.into; return; }
      if (collapsedAbove(n)) { hidden[n.id] = true; rep[n.id] = null; return; }
      if (!self.folded && n.cluster && self.collapsedClusters[n.cluster]) {
        var out = self.clusterOutput(self.clusters[n.cluster]);
        if (out && out !== n) { hidden[n.id] = true; rep[n.id] = out.id; return; }
      }
    });
    function resolve(id) {
      var guard = 0;
      while (id && hidden[id] && guard++ < 1000) id = rep[id];
      return id && !hidden[id] ? id : null;
    }
    this.hidden = hidden;
    this.order.forEach(function (n) {
      var x = self.folded ? n.fx : n.x, y = self.folded ? n.fy : n.y;
      n.cx = x; n.cy = y;
      n.el.setAttribute("transform", "translate(" + x + "," + y + ")");
      n.el.style.display = hidden[n.id] ? "none" : "";
      n.el.classList.toggle("collapsed", !!self.collapsed[n.id]);
      var t = n.el.querySelector(".collapse text");
      if (t) t.textContent = self.collapsed[n.id] ? "+" : "−";
    });
    Object.keys(this.clusters).forEach(function (id) {
      var c = self.clusters[id], rect = c.el.querySelector("rect"), label = c.el.querySelector(":scope > text");
      c.el.style.display = self.folded ? "none" : "";
      var shut = !!self.collapsedClusters[id], out = shut ? self.clusterOutput(c) : null;
      var box = out ? { x: out.x - CLUSTER_PAD, y: out.y - CLUSTER_HEAD, w: c.w, h: out.h + CLUSTER_HEAD + CLUSTER_PAD } : c;
      rect.setAttribute("x", box.x); rect.setAttribute("y", box.y);
      rect.setAttribute("width", box.w); rect.setAttribute("height", box.h);
      label.setAttribute("x", box.x + 6); label.setAttribute("y", box.y + 13);
      var tr = c.el.querySelector(".collapse rect"), tt = c.el.querySelector(".collapse text");
      tr.setAttribute("x", box.x + box.w - 20); tr.setAttribute("y", box.y + 3);
      tt.setAttribute("x", box.x + box.w - 12); tt.setAttribute("y", box.y + 14);
      tt.textContent = shut ? "+" : "−";
      c.el.classList.toggle("collapsed", shut);
    });
    this.edges.forEach(function (e) {
      var a = self.nodes[resolve(e.from)], b = self.nodes[resolve(e.to)];
      if (!a || !b || a === b) { e.el.style.display = "none"; return; }
      e.el.style.display = "";
      e.el.setAttribute("d", edgePath(a, b));
    });
  };

  /* The same curve as plan_graph.edge_path: from the bottom of the input to the top of its reader. */
  function edgePath(a, b) {
    var x1 = Math.round(a.cx + a.w / 2), y1 = Math.round(a.cy + a.h);
    var x2 = Math.round(b.cx + b.w / 2), y2 = Math.round(b.cy);
    if (y2 <= y1) return "M" + x1 + "," + y1 + " C" + x1 + "," + (y1 + 40) + " " + x2 + "," + (y2 - 40) + " " + x2 + "," + y2;
    var mid = Math.round((y1 + y2) / 2);
    return "M" + x1 + "," + y1 + " C" + x1 + "," + mid + " " + x2 + "," + mid + " " + x2 + "," + y2;
  }

  /* The member a codegen box's code ends with: the one whose consumer is outside the box. */
  Graph.prototype.clusterOutput = function (c) {
    var self = this;
    for (var i = 0; i < c.members.length; i++) {
      var m = c.members[i], p = m.tp ? self.nodes[m.tp] : null;
      if (!p || p.cluster !== c.id) return m;
    }
    return c.members[0] || null;
  };

  Graph.prototype.bounds = function () {
    var self = this, x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    function take(x, y, w, h) { x0 = Math.min(x0, x); y0 = Math.min(y0, y); x1 = Math.max(x1, x + w); y1 = Math.max(y1, y + h); }
    this.order.forEach(function (n) { if (!self.hidden[n.id]) take(n.cx, n.cy - 30, n.w, n.h + 30); });
    if (!this.folded) {
      Object.keys(this.clusters).forEach(function (id) {
        var r = self.clusters[id].el.querySelector("rect");
        take(+r.getAttribute("x"), +r.getAttribute("y"), +r.getAttribute("width"), +r.getAttribute("height"));
      });
    }
    if (x0 === Infinity) return { x: 0, y: 0, w: 100, h: 100 };
    return { x: x0 - 12, y: y0 - 12, w: x1 - x0 + 24, h: y1 - y0 + 24 };
  };

  Graph.prototype.size = function () { return [this.view.clientWidth || 1, this.view.clientHeight || 1]; };

  Graph.prototype.apply = function () {
    var s = this.size();
    this.svg.setAttribute("viewBox", [this.x, this.y, s[0] / this.k, s[1] / this.k].map(function (v) { return v.toFixed(2); }).join(" "));
    this.plan.setAttribute("data-zoom", this.k.toFixed(3));
  };

  Graph.prototype.fit = function () {
    var b = this.bounds(), s = this.size();
    this.k = Math.max(MIN_ZOOM, Math.min(1.2, s[0] / b.w, s[1] / b.h));
    this.x = b.x + b.w / 2 - s[0] / 2 / this.k;
    this.y = b.y + b.h / 2 - s[1] / 2 / this.k;
    this.apply();
  };

  Graph.prototype.zoomAt = function (factor, sx, sy) {
    var s = this.size();
    if (sx === undefined) { sx = s[0] / 2; sy = s[1] / 2; }
    var k = Math.max(MIN_ZOOM, Math.min(MAX_ZOOM, this.k * factor));
    var gx = this.x + sx / this.k, gy = this.y + sy / this.k;
    this.k = k;
    this.x = gx - sx / k;
    this.y = gy - sy / k;
    this.apply();
  };

  /* Centre a node in the part of the view the side panel leaves free (keeping the zoom). */
  Graph.prototype.centre = function (n, minZoom) {
    if (minZoom && this.k < minZoom) this.k = minZoom;
    var rect = this.view.getBoundingClientRect(), left = rect.left, right = rect.right;
    if (!panel.hidden) {
      var pr = panel.getBoundingClientRect();
      if (pr.left < right && pr.left - left > 160) right = pr.left;
    }
    var sx = (left + right) / 2 - rect.left, sy = rect.height / 2;
    this.x = n.cx + n.w / 2 - sx / this.k;
    this.y = n.cy + n.h / 2 - sy / this.k;
    this.apply();
  };

  /* True when the node's box lies inside the view and clear of the side panel. */
  Graph.prototype.isClear = function (n) {
    var r = n.el.getBoundingClientRect(), v = this.view.getBoundingClientRect();
    if (r.left < v.left || r.right > v.right || r.top < v.top || r.bottom > v.bottom) return false;
    if (!panel.hidden) {
      var p = panel.getBoundingClientRect();
      if (r.right > p.left && r.left < p.right && r.bottom > p.top && r.top < p.bottom) return false;
    }
    return true;
  };

  /* The first view: the whole plan when it reads at a useful size, else the hottest operator
     (or, in a plan without self times such as an initial plan, its output). */
  Graph.prototype.init = function () {
    if (this.ready || this.plan.hidden) return;
    this.ready = true;
    this.update();
    var b = this.bounds(), s = this.size();
    var fitK = Math.min(s[0] / b.w, s[1] / b.h);
    var hot = this.nodes[this.plan.getAttribute("data-hottest")];
    for (var i = 0; !hot && i < this.order.length; i++) {
      if (!this.order[i].tp) hot = this.order[i];
    }
    if (fitK >= 0.6 || !hot) { this.fit(); return; }
    this.k = 0.8;
    this.centre(hot);
  };

  Graph.prototype.visibleNode = function (id) {
    var guard = 0;
    while (id && this.hidden[id] && guard++ < 1000) {
      var n = this.nodes[id];
      if (this.folded && n.into) id = n.into;
      else if (n.cluster && this.collapsedClusters[n.cluster]) { var out = this.clusterOutput(this.clusters[n.cluster]); id = out ? out.id : null; }
      else { this.expandTo(n); }
    }
    return this.nodes[id] || null;
  };

  /* Reopen whatever collapsed operator hides `n`. */
  Graph.prototype.expandTo = function (n) {
    var p = this.parentOf(n), guard = 0;
    while (p && guard++ < 100000) {
      delete this.collapsed[p];
      var pn = this.nodes[p];
      p = pn ? this.parentOf(pn) : null;
    }
    this.update();
  };

  Graph.prototype.setFolded = function (on) {
    var keep = this.focusCentre();
    this.folded = on;
    this.collapsed = {};
    this.update();
    var cb = this.plan.querySelector(".fold-trivial");
    if (cb) cb.checked = on;
    if (keep) { var n = this.visibleNode(keep); if (n) { this.centre(n); return; } }
    this.fit();
  };

  /* The node nearest the middle of the view, to keep in sight when the graph changes. */
  Graph.prototype.focusCentre = function () {
    if (selected && this.nodes[selected.id]) return selected.id;
    var s = this.size(), gx = this.x + s[0] / 2 / this.k, gy = this.y + s[1] / 2 / this.k, best = null, bd = Infinity, self = this;
    this.order.forEach(function (n) {
      if (self.hidden && self.hidden[n.id]) return;
      var d = Math.pow(n.cx + n.w / 2 - gx, 2) + Math.pow(n.cy + n.h / 2 - gy, 2);
      if (d < bd) { bd = d; best = n.id; }
    });
    return best;
  };

  Graph.prototype.bindEvents = function () {
    var self = this, view = this.view, drag = null;
    view.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = view.getBoundingClientRect();
      var d = ev.deltaMode === 1 ? ev.deltaY * 30 : ev.deltaY;
      self.zoomAt(Math.exp(-d * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
    }, { passive: false });
    view.addEventListener("pointerdown", function (ev) {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, moved: false, id: ev.pointerId };
    });
    view.addEventListener("pointermove", function (ev) {
      if (!drag || ev.pointerId !== drag.id) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!drag.moved) { drag.moved = true; view.setPointerCapture(ev.pointerId); view.classList.add("dragging"); }
      self.x -= dx / self.k; self.y -= dy / self.k;
      drag.x = ev.clientX; drag.y = ev.clientY;
      self.apply();
    });
    function endDrag(ev) {
      if (!drag) return;
      if (drag.moved) {
        view.classList.remove("dragging");
        self.suppressClick = true;
        setTimeout(function () { self.suppressClick = false; }, 0);
      }
      drag = null;
    }
    view.addEventListener("pointerup", endDrag);
    view.addEventListener("pointercancel", endDrag);
    view.addEventListener("keydown", function (ev) {
      if (ev.target !== view && !(ev.target.classList && ev.target.classList.contains("node"))) return;
      var step = 80 / self.k, handled = true;
      switch (ev.key) {
        case "+": case "=": self.zoomAt(1.25); break;
        case "-": case "_": self.zoomAt(0.8); break;
        case "0": self.fit(); break;
        case "1": self.zoomAt(1 / self.k); break;
        case "h": case "H": self.showHottest(); break;
        case "ArrowLeft": self.x -= step; self.apply(); break;
        case "ArrowRight": self.x += step; self.apply(); break;
        case "ArrowUp": self.y -= step; self.apply(); break;
        case "ArrowDown": self.y += step; self.apply(); break;
        default: handled = false;
      }
      if (handled) ev.preventDefault();
    });
    this.plan.querySelector(".plan-tools").addEventListener("click", function (ev) {
      var b = ev.target.closest("[data-pz]");
      if (!b) return;
      var what = b.getAttribute("data-pz");
      if (what === "fit") self.fit();
      else if (what === "in") self.zoomAt(1.25);
      else if (what === "out") self.zoomAt(0.8);
      else if (what === "one") self.zoomAt(1 / self.k);
      else if (what === "hot") self.showHottest();
      else if (what === "expand") { self.collapsed = {}; self.collapsedClusters = {}; self.update(); }
    });
    var cb = this.plan.querySelector(".fold-trivial");
    if (cb) cb.addEventListener("change", function () { self.setFolded(cb.checked); });
  };

  Graph.prototype.showHottest = function () {
    var hot = this.visibleNode(this.plan.getAttribute("data-hottest"));
    if (hot) { this.centre(hot, 0.8); flash(hot.el); }
  };

  function graphOf(el) {
    var plan = el.closest(".plan");
    if (!plan) return null;
    if (!graphs[plan.id]) graphs[plan.id] = new Graph(plan);
    return graphs[plan.id];
  }

  function flash(el) {
    el.classList.remove("flash");
    void el.getBoundingClientRect();
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 2200);
  }

  /* ---- The side panel ---------------------------------------------------------------------- */

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
    var g = graphOf(target);
    panel.classList.toggle("show-folded", !!(g && g.folded));
    if (selected) selected.classList.remove("selected");
    selected = target;
    target.classList.add("selected");
    panel.hidden = false;
    panel.scrollTop = 0;
    keepInAddress(target.id);
    if (g && g.nodes[target.id] && !g.isClear(g.nodes[target.id])) g.centre(g.nodes[target.id]);
  }

  function showPlan(section, planId) {
    section.querySelectorAll(".plan-tab").forEach(function (b) { b.classList.toggle("active", b.getAttribute("data-plan") === planId); });
    section.querySelectorAll(".plan").forEach(function (p) { p.hidden = p.id !== planId; });
    var plan = document.getElementById(planId);
    if (plan) { var g = graphOf(plan); g.init(); }
  }

  /* Bring a plan's view on screen, below the sticky top bar. */
  function scrollToView(g) {
    var tools = g.plan.querySelector(".plan-tools").getBoundingClientRect();
    var r = g.view.getBoundingClientRect(), top = document.querySelector(".topbar").offsetHeight;
    if (tools.top < top || r.bottom > window.innerHeight) window.scrollBy(0, tools.top - top - 6);
  }

  /* A link to a node: show its plan, bring it into view beside the panel, open its panel. */
  function showNode(id) {
    var el = document.getElementById(id);
    if (!el || !el.classList.contains("node-target")) return false;
    var plan = el.closest(".plan");
    if (plan.hidden) showPlan(plan.closest("section.execution"), plan.id);
    var g = graphOf(el);
    g.init();
    var n = el.classList.contains("node") ? g.visibleNode(el.id) : null;
    scrollToView(g);
    var target = n ? n.el : el;
    openPanel(target);
    if (n) g.centre(n, 0.7);
    flash(target);
    return true;
  }

  /* A link to a stage: open the stage table, scroll to the row, highlight it. */
  function showStage(id) {
    var row = document.getElementById(id);
    if (!row) return false;
    var details = row.closest("details");
    if (details) details.open = true;
    row.scrollIntoView({ block: "center" });
    flash(row);
    return true;
  }

  /* Closing the panel takes its node out of the address, so a reload does not reopen it. */
  function closePanel() {
    panel.hidden = true;
    if (selected && location.hash === "#" + selected.id) {
      try { history.replaceState(null, "", location.pathname + location.search); } catch (e) { /* not writable */ }
    }
  }

  /* The address bar names what was opened, so a link to it can go into a ticket. */
  function keepInAddress(id) {
    try { history.replaceState(null, "", "#" + id); } catch (e) { /* history not writable here */ }
  }

  function showTarget(id) {
    var el = document.getElementById(id);
    if (!el) return false;
    if (el.classList.contains("node-target")) return showNode(id);
    if (el.tagName === "TBODY") return showStage(id);
    var own = el.tagName === "DETAILS" ? el : el.querySelector(":scope > details");
    if (own) own.open = true;
    for (var d = el.parentNode && el.parentNode.closest ? el.parentNode.closest("details") : null; d; d = d.parentNode && d.parentNode.closest ? d.parentNode.closest("details") : null) d.open = true;
    if (own || el.classList.contains("finding")) { el.scrollIntoView({ block: "nearest" }); flash(el); return true; }
    return false;
  }

  document.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!t.closest) return;
    var link = t.closest("a[href^='#']");
    if (link) {
      var linked = link.getAttribute("href").slice(1);
      if (showTarget(linked)) { ev.preventDefault(); keepInAddress(linked); }
      return;
    }
    var toggle = t.closest(".collapse");
    if (toggle) {
      var g = graphOf(toggle);
      if (!g || g.suppressClick) return;
      var owner = toggle.parentNode;
      if (owner.classList.contains("cluster")) {
        if (g.collapsedClusters[owner.id]) delete g.collapsedClusters[owner.id]; else g.collapsedClusters[owner.id] = true;
      } else if (g.collapsed[owner.id]) delete g.collapsed[owner.id];
      else g.collapsed[owner.id] = true;
      g.update();
      return;
    }
    var target = t.closest(".node-target");
    if (target) {
      var tg = graphOf(target);
      if (tg && tg.suppressClick) return;
      openPanel(target);
      return;
    }
    var tab = t.closest(".plan-tab");
    if (tab) showPlan(tab.closest("section.execution"), tab.getAttribute("data-plan"));
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "Escape") closePanel();
    if (ev.key === "Enter" && ev.target.classList && ev.target.classList.contains("node")) openPanel(ev.target);
  });
  document.getElementById("panel-close").addEventListener("click", closePanel);

  /* ---- Search ------------------------------------------------------------------------------ */

  var search = document.getElementById("node-search");
  var searchCount = document.getElementById("search-count");
  var hitIndex = -1;
  search.addEventListener("input", function () {
    var q = search.value.trim().toLowerCase();
    var hits = 0;
    hitIndex = -1;
    document.querySelectorAll(".node-target").forEach(function (n) {
      var hit = q !== "" && n.getAttribute("data-name").toLowerCase().indexOf(q) >= 0;
      n.classList.toggle("match", hit);
      if (hit && !n.closest(".plan").hidden) hits++;
    });
    searchCount.textContent = q === "" ? "" : hits + (hits === 1 ? " node" : " nodes") + (hits ? " · Enter: next" : "");
  });
  search.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter") return;
    var hits = Array.prototype.filter.call(document.querySelectorAll(".node-target.match"), function (n) { return !n.closest(".plan").hidden; });
    if (!hits.length) return;
    hitIndex = (hitIndex + 1) % hits.length;
    showNode(hits[hitIndex].id);
  });

  /* ---- Executor timeline: a stage in the legend highlights its tasks ----------------------- */

  document.querySelectorAll(".timeline").forEach(function (tl) {
    tl.addEventListener("mouseover", function (ev) {
      var item = ev.target.closest ? ev.target.closest("[data-stage-class]") : null;
      tl.querySelectorAll(".task.dim").forEach(function (b) { b.classList.remove("dim"); });
      if (!item) return;
      var cls = item.getAttribute("data-stage-class");
      tl.querySelectorAll(".task").forEach(function (b) { if (!b.classList.contains(cls)) b.classList.add("dim"); });
    });
  });

  /* ---- Start -------------------------------------------------------------------------------- */

  document.querySelectorAll(".plan").forEach(function (plan) { if (!plan.hidden) graphOf(plan).init(); });
  window.addEventListener("resize", function () {
    Object.keys(graphs).forEach(function (id) { if (graphs[id].ready) graphs[id].apply(); });
  });
  /* The side panel starts below the top bar, however many lines a narrow window wraps it to. */
  function placePanel() {
    var bar = document.querySelector(".topbar");
    if (bar) document.documentElement.style.setProperty("--bar-height", bar.offsetHeight + "px");
  }
  placePanel();
  window.addEventListener("resize", placePanel);

  if (location.hash.length > 1) showTarget(location.hash.slice(1));
})();
