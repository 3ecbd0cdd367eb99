// stagebench report.html: sort tables, zoom flame graphs and the
// timeline. No request, no storage; names are read from the DOM as text.
"use strict";
(function () {
  // Sortable tables: click a heading; numbers sort by data-v when a cell has it.
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var heads = table.querySelectorAll("thead th");
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        var up = th.getAttribute("aria-sort") !== "ascending";
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", up ? "ascending" : "descending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        var key = function (row) {
          var cell = row.cells[col];
          if (!cell) return "";
          var v = cell.getAttribute("data-v");
          return v === null ? cell.textContent : parseFloat(v);
        };
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          var c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
          return up ? c : -c;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  // Flame graphs: hover shows a frame's title in the details line; a
  // click zooms to the frame (its ancestors stretched, others hidden).
  document.querySelectorAll("svg.flame").forEach(function (svg) {
    var frames = svg.querySelector("svg[id$='-frames']");
    var details = svg.querySelector("text[id$='-details']");
    var unzoom = svg.querySelector("text[id$='-unzoom']");
    if (!frames) return;
    var groups = Array.prototype.slice.call(frames.querySelectorAll("g"));
    var spanOf = function (g) {
      var r = g.querySelector("rect");
      return { x: parseFloat(r.getAttribute("fg:x")), w: parseFloat(r.getAttribute("fg:w")), y: parseFloat(r.getAttribute("y")) };
    };
    var total = Math.max.apply(null, groups.map(function (g) { var s = spanOf(g); return s.x + s.w; }));
    var place = function (x0, w0, y0) {
      groups.forEach(function (g) {
        var s = spanOf(g), r = g.querySelector("rect"), t = g.querySelector("text");
        var out = s.x + s.w <= x0 || s.x >= x0 + w0;
        var ancestor = s.y < y0 && s.x <= x0 && s.x + s.w >= x0 + w0;
        g.classList.toggle("hide", out && !ancestor);
        g.classList.toggle("parent", ancestor);
        var from = Math.max(s.x, x0), to = Math.min(s.x + s.w, x0 + w0);
        var px = (from - x0) / w0 * 100, pw = Math.max(0, (to - from) / w0 * 100);
        r.setAttribute("x", px.toFixed(4) + "%");
        r.setAttribute("width", pw.toFixed(4) + "%");
        if (t) t.setAttribute("x", (px + 0.25).toFixed(4) + "%");
      });
    };
    // The stage's spans table, whose row for a frame's span gives its
    // calls and self time per trial; on a compare page, its stacks table,
    // whose row for the frame's stack gives the one change it shows.
    var box = svg.closest(".stage-spans");
    var table = box ? box.querySelector("table.spans") : null;
    var stacks = box ? box.querySelector("table.stacks") : null;
    var nameOf = function (g) {
      var text = g.querySelector("title").textContent;
      return text.slice(0, text.lastIndexOf(" ("));
    };
    var stackOf = function (g) {
      var s = spanOf(g);
      var above = groups.filter(function (o) {
        var t = spanOf(o);
        return t.y < s.y && t.x <= s.x && t.x + t.w >= s.x + s.w;
      });
      above.sort(function (a, b) { return spanOf(a).y - spanOf(b).y; });
      return above.slice(1).map(nameOf).concat([nameOf(g)]).join(";");
    };
    var change = function (g) {
      var rows = stacks.tBodies[0].rows, path = stackOf(g);
      for (var i = 0; i < rows.length; i++) {
        if (rows[i].getAttribute("data-stack") === path) {
          var c = rows[i].cells;
          return " · self " + c[1].textContent + " → " + c[2].textContent + " per trial, " +
            c[3].textContent + " (" + c[6].textContent + ")";
        }
      }
      return "";
    };
    var about = function (name, g) {
      if (stacks) return change(g);
      if (!table) return "";
      var rows = table.tBodies[0].rows;
      for (var i = 0; i < rows.length; i++) {
        if (rows[i].getAttribute("data-span") === name) {
          var c = rows[i].cells;
          return " · " + c[2].textContent + " call(s) per trial, median " + c[4].textContent +
            ", self " + c[9].textContent + " per trial";
        }
      }
      return "";
    };
    groups.forEach(function (g) {
      var title = g.querySelector("title");
      g.addEventListener("mouseover", function () {
        if (!details || !title) return;
        details.textContent = title.textContent + about(nameOf(g), g);
      });
      g.addEventListener("click", function () {
        var s = spanOf(g);
        place(s.x, s.w, s.y);
        if (unzoom) unzoom.classList.remove("hide");
      });
    });
    if (unzoom) unzoom.addEventListener("click", function () {
      place(0, total, -1);
      unzoom.classList.add("hide");
    });
  });

  // The timeline: the wheel zooms around the pointer, a double click resets.
  document.querySelectorAll("svg.timeline").forEach(function (svg) {
    var inner = svg.querySelector("svg.zoom");
    if (!inner) return;
    var box = inner.getAttribute("viewBox").split(" ").map(parseFloat);
    var full = box.slice();
    svg.addEventListener("wheel", function (e) {
      e.preventDefault();
      var rect = inner.getBoundingClientRect();
      var at = box[0] + (e.clientX - rect.left) / rect.width * box[2];
      var f = e.deltaY < 0 ? 0.8 : 1.25;
      box[2] = Math.min(full[2], Math.max(full[2] / 1000, box[2] * f));
      box[0] = Math.min(full[2] - box[2], Math.max(0, at - (at - box[0]) * f));
      inner.setAttribute("viewBox", box.join(" "));
    }, { passive: false });
    svg.addEventListener("dblclick", function () {
      box = full.slice();
      inner.setAttribute("viewBox", box.join(" "));
    });
  });
})();
