// Draws the arena (time x offset) and memory over time from the embedded plan data, then
// records what it drew, read back from the SVG elements and mapped through the inverse of
// each chart's scales, in <script id="drawn"> so a test can compare it with plan.json.
(function () {
  "use strict";
  var errors = [];
  window.addEventListener("error", function (e) { errors.push(String(e.message)); showErrors(); });

  var SVG = "http://www.w3.org/2000/svg";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var W = 1000, LEFT = 78, RIGHT = 14, TOP = 14, BOTTOM = 34;
  var plotW = W - LEFT - RIGHT;
  var columns = data.steps + 1;  // step -1 (graph inputs) and every operator
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#e15759", "#9c755f",
                 "#86bcb6", "#d37295", "#8cd17d", "#a0cbe8", "#bab0ac", "#fabfd2", "#499894", "#79706e"];

  function showErrors() {
    var box = document.getElementById("errors");
    if (box) { box.style.display = "block"; box.textContent = "Script errors: " + errors.join("; "); }
  }
  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) node.setAttribute(k, attrs[k]); }
    if (parent) parent.appendChild(node);
    return node;
  }
  function fmt(n) { return n.toLocaleString("en-US"); }
  function bytes(n) {
    if (n >= 1048576) return (n / 1048576).toFixed(n % 1048576 ? 1 : 0) + " MB";
    if (n >= 1024) return (n / 1024).toFixed(n % 1024 ? 1 : 0) + " KB";
    return n + " B";
  }
  function niceStep(range, target) {
    var raw = range / Math.max(target, 1), p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1e-9))));
    var m = [1, 2, 2.5, 5, 10].find(function (f) { return f * p >= raw; });
    return Math.max(1, m * p);
  }
  function shortName(name, width) {
    var parts = name.split(";"), tail = parts[parts.length - 1] || name;
    return tail.length <= width ? tail : "\u2026" + tail.slice(tail.length - width + 1);
  }
  function stepLabel(s) { return s < 0 ? "graph inputs" : "step " + s + " " + data.ops[s].op; }

  // x: a column per step, step -1 first; X(s) is the left edge of step s's column.
  function X(s) { return LEFT + (s + 1) * plotW / columns; }
  function Xinv(x) { return (x - LEFT) * columns / plotW - 1; }
  function yScale(top, plotH) {
    var f = function (b) { return TOP + plotH * (1 - b / top); };
    f.inv = function (y) { return (1 - (y - TOP) / plotH) * top; };
    return f;
  }

  // Colour by the op that writes the block's tensor, so a picture reads as "convs here, adds there".
  var blockOp = function (k) { return k.first >= 0 ? data.ops[k.first].op : "input"; };
  var ops = [];
  data.blocks.forEach(function (k) { if (ops.indexOf(blockOp(k)) < 0) ops.push(blockOp(k)); });
  ops.sort();
  var colour = function (op) { return PALETTE[ops.indexOf(op) % PALETTE.length]; };

  var tip = document.getElementById("tip");
  function showTip(evt, lines) {
    tip.textContent = "";
    lines.forEach(function (line, i) {
      var div = document.createElement("div");
      if (i === 0) { var b = document.createElement("b"); b.textContent = line; div.appendChild(b); }
      else { div.textContent = line; if (line.charAt(0) !== " ") div.className = "row"; }
      tip.appendChild(div);
    });
    tip.style.display = "block";
    var x = evt.clientX + 14, y = evt.clientY + 14, r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 8) x = Math.max(8, evt.clientX - r.width - 14);
    if (y + r.height > window.innerHeight - 8) y = Math.max(8, evt.clientY - r.height - 14);
    tip.style.left = x + "px"; tip.style.top = y + "px";
  }
  function hideTip() { tip.style.display = "none"; }
  function bufferTip(b) {
    var lines = [shortName(b.name, 70),
      fmt(b.size) + " bytes at offset " + fmt(b.offset) + "\u2013" + fmt(b.offset + b.size) +
        (data.regions.length > 1 ? " of " + b.region : ""),
      "live " + stepLabel(b.first) + " \u2192 " + stepLabel(b.last) + " (" + (b.last - b.first + 1) + " steps)",
      b.tensors.length + (b.tensors.length === 1 ? " tensor:" : " tensors:")];
    b.tensors.forEach(function (t) {
      var extra = t.shape ? " " + (t.dtype || "") + "[" + t.shape.join("\u00d7") + "]" : "";
      if (t.offset !== null && t.offset !== undefined && t.offset !== b.offset) extra += " @" + fmt(t.offset);
      lines.push("  " + t.name + extra);
    });
    return lines;
  }

  function blockTip(k, b) {  // a tensor's block, or a buffer's (or part's) where the plan gives no tensors
    if (!k.tensor) {
      var lines = bufferTip(b);
      if (k.size !== b.size || k.first !== b.first || k.last !== b.last)
        lines.splice(1, 0, "this part: " + fmt(k.size) + " bytes at " + fmt(k.offset) + ", " + stepLabel(k.first) +
                     " \u2192 " + stepLabel(k.last));
      return lines;
    }
    var t = b.tensors.find(function (x) { return x.name === k.tensor; }) || {};
    var shape = t.shape ? " " + (t.dtype || "") + "[" + t.shape.join("\u00d7") + "]" : "";
    return [shortName(k.tensor, 70), fmt(k.size) + " bytes at offset " + fmt(k.offset) + "\u2013" + fmt(k.offset + k.size) +
              (data.regions.length > 1 ? " of " + b.region : "") + shape,
            "written " + (k.first >= 0 ? "by " + stepLabel(k.first) : "before the first step") + ", last read " +
              (k.last >= 0 ? "by " + stepLabel(k.last) : "before the first step"),
            "in buffer " + shortName(b.name, 60) + " (" + fmt(b.size) + " bytes, " + b.tensors.length + " tensor" +
              (b.tensors.length === 1 ? "" : "s") + ")"];
  }

  function axes(svg, top, plotH, withLabels) {
    var g = el("g", {"class": "axis"}, svg), grid = el("g", {"class": "grid"}, svg);
    svg.insertBefore(grid, svg.firstChild);
    // Ticks at round numbers of the unit they are labelled in (B, KB or MB).
    var unit = top >= 4 * 1048576 ? 1048576 : top >= 4096 ? 1024 : 1;
    var y = yScale(top, plotH), step = niceStep(top / unit, 6) * unit;
    for (var b = 0; b <= top + 1e-9; b += step) {
      el("line", {x1: LEFT, x2: W - RIGHT, y1: y(b), y2: y(b)}, grid);
      var t = el("text", {x: LEFT - 6, y: y(b) + 4, "text-anchor": "end"}, g);
      t.textContent = bytes(b);
    }
    el("line", {x1: LEFT, x2: LEFT, y1: TOP, y2: TOP + plotH}, g);
    el("line", {x1: LEFT, x2: W - RIGHT, y1: TOP + plotH, y2: TOP + plotH}, g);
    var every = niceStep(columns, 20);
    for (var s = -1; s < data.steps; s++) {
      if (s === -1 ? every > 2 : s % every !== 0) continue;  // "in" would collide with "0"
      var cx = (X(s) + X(s + 1)) / 2;
      el("line", {x1: cx, x2: cx, y1: TOP + plotH, y2: TOP + plotH + 4}, g);
      if (withLabels) {
        var label = el("text", {x: cx, y: TOP + plotH + 16, "text-anchor": "middle"}, g);
        label.textContent = s < 0 ? "in" : String(s);
      }
    }
    var name = el("text", {x: LEFT + plotW / 2, y: TOP + plotH + 30, "text-anchor": "middle"}, g);
    name.textContent = "step (execution order)";
    return y;
  }
  function band(svg, s, plotH, cls) {
    return el("rect", {"class": cls, x: X(s), y: TOP, width: X(s + 1) - X(s), height: plotH}, svg);
  }
  var focusBands = [];
  function focus(s) {
    focusBands.forEach(function (r) {
      if (s === null) { r.setAttribute("display", "none"); return; }
      r.setAttribute("display", "inline"); r.setAttribute("x", X(s)); r.setAttribute("width", X(s + 1) - X(s));
    });
  }

  var atPeak = {};
  data.peak.buffers.forEach(function (name) { atPeak[name] = true; });

  function drawArena(container, region) {
    var plotH = 300, H = TOP + plotH + BOTTOM;
    var top = Math.max(region.drawn_bytes, 1);
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, role: "img",
                         "aria-label": "arena " + region.name + ": buffers by step and offset"});
    container.appendChild(svg);
    var y = axes(svg, top, plotH, true);
    band(svg, data.peak.step, plotH, "peak-band");
    var fb = band(svg, -1, plotH, "focus-band"); fb.setAttribute("display", "none"); focusBands.push(fb);
    var pc = (X(data.peak.step) + X(data.peak.step + 1)) / 2, base = TOP + plotH;
    el("path", {"class": "peak-mark", d: "M" + pc + "," + (base + 1) + "l-5,8h10z"}, svg);
    var drawn = [];
    data.blocks.forEach(function (k, i) {  // one block per tensor: operators sharing a buffer each get their own
      var b = data.buffers[k.buffer];
      if (b.region !== region.name) return;
      var live = k.first <= data.peak.step && data.peak.step <= k.last && atPeak[b.name];
      var w = X(k.last + 1) - X(k.first), h = y(k.offset) - y(k.offset + k.size);
      var r = el("rect", {"class": "buf" + (live ? " at-peak" : ""), x: X(k.first), y: y(k.offset + k.size),
                          width: w, height: h, fill: colour(blockOp(k)), "data-index": i, "data-buffer": b.name,
                          "data-tensor": k.tensor || ""}, svg);
      if (w < 3 || h < 3) r.classList.add("thin");
      r.addEventListener("mousemove", function (evt) { showTip(evt, blockTip(k, b)); });
      r.addEventListener("mouseleave", hideTip);
      drawn.push(r);
      // the label in the columns no later tensor overlaps (one written in place starts in this one's last step)
      var label = bytes(k.size), room = k.last > k.first ? X(k.last) - X(k.first) : w;
      if (h >= 13 && room >= label.length * 6 + 6) {
        var t = el("text", {"class": "buf-label", x: X(k.first) + 3, y: y(k.offset) - h / 2 + 4}, svg);
        t.textContent = label;
      }
    });
    (data.marks || []).forEach(function (m) {  // transfers and recomputes of a fast-memory budget
      if (m.regions.indexOf(region.name) < 0) return;
      var x0 = X(m.first), x1 = X(m.last + 1);
      var r = el("rect", {"class": "mark mark-" + m.kind, x: x0, y: TOP, width: Math.max(x1 - x0, 2), height: plotH}, svg);
      var what = {out: "copy out to the slow region", "in": "copy back", recompute: "recompute"}[m.kind];
      r.addEventListener("mousemove", function (evt) {
        showTip(evt, [what + (m.asynchronous ? " (DMA)" : ""), m.tensor, "steps " + m.first + (m.last !== m.first ? "–" + m.last : "")]);
      });
      r.addEventListener("mouseleave", hideTip);
    });
    if (data.regions.length === 1 && data.lower_bound_bytes > 0 && data.lower_bound_bytes <= top) {
      el("line", {"class": "bound-line", x1: LEFT, x2: W - RIGHT, y1: y(data.lower_bound_bytes), y2: y(data.lower_bound_bytes)}, svg);
      var t = el("text", {"class": "bound-label", x: W - RIGHT - 4, y: y(data.lower_bound_bytes) - 4, "text-anchor": "end"}, svg);
      t.textContent = "lower bound " + fmt(data.lower_bound_bytes) + " B";
    }
    var legend = container.querySelector(".legend");
    ops.forEach(function (op) {
      if (!data.blocks.some(function (k) { return data.buffers[k.buffer].region === region.name && blockOp(k) === op; })) return;
      var s = document.createElement("span"); s.style.setProperty("--swatch", colour(op)); s.textContent = op;
      legend.appendChild(s);
    });
    return drawn.map(function (r) {
      var x = parseFloat(r.getAttribute("x")), w = parseFloat(r.getAttribute("width"));
      var ry = parseFloat(r.getAttribute("y")), h = parseFloat(r.getAttribute("height"));
      return {buffer: r.getAttribute("data-buffer"), tensor: r.getAttribute("data-tensor") || null, region: region.name,
              first: Math.round(Xinv(x)), last: Math.round(Xinv(x + w)) - 1,
              offset: Math.round(y.inv(ry + h)), size: Math.round(y.inv(ry) - y.inv(ry + h))};
    });
  }

  function drawMemory(container) {
    var plotH = 220, H = TOP + plotH + BOTTOM;
    var peakBytes = data.peak.bytes;
    var top = Math.max(data.arena_bytes, peakBytes, 1) * 1.12;
    var svg = el("svg", {viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": "live bytes by step"});
    container.appendChild(svg);
    var y = axes(svg, top, plotH, true);
    band(svg, data.peak.step, plotH, "peak-band");
    var fb = band(svg, -1, plotH, "focus-band"); fb.setAttribute("display", "none"); focusBands.push(fb);
    var d = "M" + X(-1) + "," + y(0);
    data.live.forEach(function (v, i) { d += "L" + X(i - 1) + "," + y(v) + "L" + X(i) + "," + y(v); });
    d += "L" + X(data.steps - 1) + "," + y(0) + "Z";
    el("path", {"class": "live", d: d}, svg);
    // The arena's label above its line, the bound's below its own: they never collide.
    var lines = [["arena-line", data.arena_bytes, "arena " + fmt(data.arena_bytes) + " B", "line-label", -4]];
    if (data.lower_bound_bytes !== data.arena_bytes)
      lines.push(["bound-line", data.lower_bound_bytes, "lower bound " + fmt(data.lower_bound_bytes) + " B", "bound-label", 12]);
    lines.forEach(function (l) {
      el("line", {"class": l[0], x1: LEFT, x2: W - RIGHT, y1: y(l[1]), y2: y(l[1])}, svg);
      var t = el("text", {"class": l[3], x: W - RIGHT - 4, y: y(l[1]) + l[4], "text-anchor": "end"}, svg);
      t.textContent = l[2];
    });
    var px = (X(data.peak.step) + X(data.peak.step + 1)) / 2, py = y(peakBytes);
    el("line", {"class": "peak-line", x1: px, x2: px, y1: py, y2: TOP + plotH}, svg);
    var dot = el("circle", {"class": "peak", cx: px, cy: py, r: 4.5, "data-step": data.peak.step, "data-bytes": peakBytes}, svg);
    var label = el("text", {"class": "peak-label", x: px + (px > W * 0.7 ? -8 : 8), y: Math.max(py - 8, TOP + 10),
                            "text-anchor": px > W * 0.7 ? "end" : "start"}, svg);
    label.textContent = "peak " + fmt(peakBytes) + " B at " + stepLabel(data.peak.step);
    for (var s = -1; s < data.steps; s++) {
      (function (s) {
        var hit = el("rect", {"class": "hit", x: X(s), y: TOP, width: X(s + 1) - X(s), height: plotH}, svg);
        hit.addEventListener("mousemove", function (evt) {
          focus(s);
          var lines = [stepLabel(s), fmt(data.live[s + 1]) + " bytes live"];
          if (s >= 0) lines.push("  " + data.ops[s].node);
          showTip(evt, lines);
        });
        hit.addEventListener("mouseleave", function () { focus(null); hideTip(); });
      })(s);
    }
    // Read the curve back: the path's horizontal segments give one live value per column.
    var nums = svg.querySelector("path.live").getAttribute("d").match(/-?[\d.]+(e-?\d+)?/g).map(parseFloat);
    var curve = [];
    for (var k = 0; k < data.live.length; k++) curve.push(Math.round(y.inv(nums[2 + 4 * k + 1])));
    return {curve: curve, peak: {step: Math.round(Xinv(parseFloat(dot.getAttribute("cx"))) - 0.5),
                                 bytes: Math.round(y.inv(parseFloat(dot.getAttribute("cy"))))}};
  }

  var rects = [];
  document.querySelectorAll(".arena-chart").forEach(function (container) {
    var name = container.getAttribute("data-region");
    var region = data.regions.find(function (r) { return r.name === name; });
    rects = rects.concat(drawArena(container, region));
  });
  var memory = drawMemory(document.getElementById("memory-chart"));

  document.querySelectorAll("#operator-table tbody tr").forEach(function (tr) {
    var s = parseInt(tr.getAttribute("data-step"), 10);
    tr.addEventListener("mouseenter", function () { focus(s); });
    tr.addEventListener("mouseleave", function () { focus(null); });
  });
  document.querySelectorAll("#peak-table tbody tr[data-buffer]").forEach(function (tr) {
    var name = tr.getAttribute("data-buffer");
    var hot = function (on) {
      document.querySelectorAll("rect.buf").forEach(function (r) {
        if (r.getAttribute("data-buffer") === name) r.classList.toggle("hot", on);
      });
    };
    tr.addEventListener("mouseenter", function () { hot(true); });
    tr.addEventListener("mouseleave", function () { hot(false); });
  });

  document.getElementById("drawn").textContent = JSON.stringify(
    {rects: rects, memory: memory.curve, peak: memory.peak, errors: errors}).replace(/</g, "\\u003c");
})();
