// edgemond's live page: the board now (one server-sent-event stream,
// api/live) and its history (api/history, api/energy). Everything comes from
// the daemon that served this file; a missing value reads "\u2014", never 0.
(function () {
  "use strict";
  var DASH = "\u2014";
  var NS = "http://www.w3.org/2000/svg";
  var COLORS = ["#2166ac", "#d6604d", "#1b7837", "#762a83", "#e08214", "#35978f", "#c51b7d",
                "#4d4d4d", "#8c510a", "#5aae61", "#9970ab", "#b2182b"];
  var LIVE_POINTS = 120;

  var hello = null;   // the stream's hello: board, channels, rail_tree
  var keyIndex = {};  // channel key -> index
  var cells = {};     // channel key -> table cells showing it
  var liveRails = []; // rail power keys drawn live
  var recent = [];    // the last frames, oldest first
  var color = {};     // rail name -> color
  var remainder = null;  // the input rail's "other" row: {td, parent, subs}

  function $(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function has(v) { return typeof v === "number" && isFinite(v); }
  function key(c) { return c.kind + "/" + c.name + "/" + c.field; }

  // A value in the channel's unit, written in the unit a person reads.
  function fmt(c, v) {
    if (!has(v)) return DASH;
    switch (c.unit) {
      case "mW": return (v / 1000).toFixed(3) + " W";
      case "mV": return (v / 1000).toFixed(3) + " V";
      case "mA": return (v / 1000).toFixed(3) + " A";
      case "mJ": return (v / 1000).toFixed(1) + " J";
      case "mC": return (v / 1000).toFixed(1) + " \u00B0C";
      case "kHz": return (v / 1000).toFixed(0) + " MHz";
      case "permille": return (v / 10).toFixed(1) + " %";
      case "KiB": return v >= 1048576 ? (v / 1048576).toFixed(2) + " GiB" : (v / 1024).toFixed(0) + " MiB";
      case "rpm": return v.toFixed(0) + " rpm";
      case "bool": return v ? "on" : "off";
      default: return String(v);
    }
  }

  function utc(ms, withDate) {
    var s = new Date(ms).toISOString();
    return withDate ? s.slice(0, 10) + " " + s.slice(11, 19) : s.slice(11, 19);
  }
  function dur(ms) {
    var s = ms / 1000;
    if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + Math.round(s % 60) + " s";
    return (s / 3600).toFixed(2) + " h";
  }

  // ---- Tables built from the hello ----

  // One table: a row per (kind, name) of the given kinds, a column per field.
  function table(id, kinds, cols, keep) {
    var t = $(id);
    t.textContent = "";
    var rows = {}, order = [];
    hello.channels.forEach(function (c) {
      if (kinds.indexOf(c.kind) < 0 || (keep && !keep(c))) return;
      if ((c.flags || []).indexOf("constant") >= 0) return;
      var rk = c.kind + "/" + c.name;
      if (!rows[rk]) { rows[rk] = { name: c.name, kind: c.kind, ch: {} }; order.push(rk); }
      rows[rk].ch[c.field] = c;
    });
    var used = cols.filter(function (col) {
      return order.some(function (rk) { return rows[rk].ch[col.field]; });
    });
    if (!order.length || !used.length) {
      t.appendChild(el("caption", { class: "note" }, "none on this board"));
      return;
    }
    var head = el("tr");
    head.appendChild(el("th", {}, ""));
    used.forEach(function (col) { head.appendChild(el("th", {}, col.title)); });
    t.appendChild(el("thead")).appendChild(head);
    var body = t.appendChild(el("tbody"));
    order.forEach(function (rk) {
      var r = rows[rk];
      var tr = body.appendChild(el("tr", { "data-row": rk }));
      tr.appendChild(el("td", {}, r.name));
      used.forEach(function (col) { addCell(tr, r.ch[col.field]); });
    });
  }

  function addCell(tr, c) {
    var td = tr.appendChild(el("td", c ? { "data-key": key(c) } : {}, c ? DASH : ""));
    if (c) {
      td.className = "missing";
      (cells[key(c)] = cells[key(c)] || []).push(td);
    }
  }

  function railTable() {
    var t = $("rails");
    t.textContent = "";
    var byName = {};
    hello.channels.forEach(function (c) {
      if (c.kind !== "rail") return;
      (byName[c.name] = byName[c.name] || {})[c.field] = c;
    });
    var head = el("tr");
    ["Rail", "Power", "Voltage", "Current"].forEach(function (h) { head.appendChild(el("th", {}, h)); });
    t.appendChild(el("thead")).appendChild(head);
    var body = t.appendChild(el("tbody"));
    liveRails = [];
    hello.rail_tree.forEach(function (r, i) {
      var ch = byName[r.name] || {};
      var tr = body.appendChild(el("tr", { "data-rail": r.name, class: r.input ? "input" : "" }));
      var name = tr.appendChild(el("td", {}, r.name + (r.input ? " (board input)" : "")));
      name.style.paddingLeft = (6 + 16 * r.depth) + "px";
      addCell(tr, ch.power);
      addCell(tr, ch.voltage);
      addCell(tr, ch.current);
      color[r.name] = COLORS[i % COLORS.length];
      if (ch.power) liveRails.push({ name: r.name, key: key(ch.power) });
    });
    // The input rail's unmeasured rest: the input less its sub-rails (shown,
    // never added to anything).
    remainder = null;
    hello.rail_tree.forEach(function (r, i) {
      var subs = [];
      for (var j = i + 1; j < hello.rail_tree.length && hello.rail_tree[j].depth > r.depth; j++) {
        if (hello.rail_tree[j].depth === r.depth + 1) subs.push(hello.rail_tree[j].name);
      }
      if (!r.input || !subs.length || !byName[r.name] || !byName[r.name].power) return;
      var tr = body.appendChild(el("tr", { class: "other" }));
      tr.appendChild(el("td", {}, "other (" + r.name + " \u2212 sub-rails)")).style.paddingLeft = "22px";
      var td = tr.appendChild(el("td", { class: "missing" }, DASH));
      tr.appendChild(el("td"));
      tr.appendChild(el("td"));
      remainder = { td: td, parent: key(byName[r.name].power), subs: subs.map(function (n) {
        return byName[n].power ? key(byName[n].power) : null; }) };
    });
    if (!hello.rail_tree.length) t.appendChild(el("caption", { class: "note" }, "no power rails on this board"));
    legend($("live-legend"), liveRails.map(function (r) { return r.name; }));
  }

  function legend(box, names) {
    box.textContent = "";
    names.forEach(function (n) {
      var s = box.appendChild(el("span", {}, n));
      s.style.setProperty("--c", color[n] || "#888");
    });
  }

  function onHello(h) {
    hello = h;
    keyIndex = {};
    cells = {};
    recent = [];
    h.channels.forEach(function (c, i) { keyIndex[key(c)] = i; });
    var b = h.board;
    $("board").textContent = b.model || b.hostname || "edgemon";
    document.title = "edgemon: " + (b.model || b.hostname || "live");
    $("ident").textContent = [b.hostname, b.soc, b.l4t && "L4T " + b.l4t,
      b.jetpack && "JetPack " + b.jetpack, b.kernel].filter(Boolean).join(" \u00B7 ");
    railTable();
    table("temp-table", ["thermal"], [{ field: "temp", title: "\u00B0C" }]);
    table("clock-table", ["cpu", "gpu", "emc", "devfreq"], [
      { field: "freq", title: "Clock" }, { field: "load", title: "Load" },
      { field: "freq_max", title: "Max" }, { field: "online", title: "Online" }]);
    table("mem-table", ["memory", "swap"], [
      { field: "used", title: "Used" }, { field: "total", title: "Total" },
      { field: "available", title: "Available" }, { field: "shared", title: "Shared" },
      { field: "lfb_size", title: "Largest free" }]);
    table("fan-table", ["fan"], [{ field: "speed", title: "Speed" }, { field: "duty", title: "Duty" }]);
    table("engine-table", ["engine"], [{ field: "state", title: "State" }, { field: "freq", title: "Clock" }]);
    seedLive();
    if (!historyLoaded) loadHistory();
  }

  // A GET that a busy daemon refused (503) is asked again when its
  // Retry-After says (at most 5 s), up to 3 times; resolves to the last answer.
  function fetchRetrying(q, tries) {
    return fetch(q, { credentials: "same-origin" }).then(function (r) {
      if (r.status !== 503 || (tries || 0) >= 3) return r;
      var wait = Math.min(5, Math.max(1, +r.headers.get("Retry-After") || 1));
      return new Promise(function (done) { setTimeout(done, wait * 1000); }).then(function () {
        return fetchRetrying(q, (tries || 0) + 1);
      });
    });
  }

  // The live chart drawn on load: the rails' last stored frames (one step per
  // frame period) come first; the stream's frames follow them.
  function seedLive() {
    var keys = liveRails.map(function (r) { return r.key; });
    if (!keys.length) return;
    var period = Math.max(1, hello.period_ms);
    var q = "api/history?from=-" + Math.ceil(LIVE_POINTS * period / 1000) + "s&to=now&step=" +
            period + "ms&channels=" + encodeURIComponent(keys.join(","));
    var asked = hello;
    fetchRetrying(q).then(function (r) {
      return r.ok ? r.json() : null;
    }).then(function (h) {
      if (!h || hello !== asked) return;
      var byT = {};
      h.series.forEach(function (sr) {
        var i = keyIndex[sr.key];
        if (i === undefined) return;
        sr.t.forEach(function (t, j) {
          var f = byT[t] || (byT[t] = { t: t, v: hello.channels.map(function () { return null; }) });
          f.v[i] = sr.avg[j];
        });
      });
      var first = recent.length ? recent[0].t : Infinity;
      var stored = Object.keys(byT).map(function (t) { return byT[t]; })
        .filter(function (f) { return f.t < first; })
        .sort(function (a, b) { return a.t - b.t; });
      recent = stored.concat(recent).slice(-LIVE_POINTS);
      drawLive();
    }).catch(function () { /* the stream's frames draw it */ });
  }

  function modeName(v) {
    if (!has(v)) return DASH;
    var modes = (hello.board && hello.board.nvpmodel_modes) || {};
    return modes[String(v)] ? modes[String(v)] + " (" + v + ")" : String(v);
  }

  function onFrame(f) {
    if (!hello) return;
    hello.channels.forEach(function (c, i) {
      var list = cells[key(c)];
      if (!list) return;
      var v = f.v[i];
      list.forEach(function (td) {
        td.textContent = fmt(c, v);
        td.className = has(v) ? "" : "missing";
      });
    });
    if (remainder) {
      // Known only when the input and every sub-rail are.
      var rest = f.v[keyIndex[remainder.parent]];
      remainder.subs.forEach(function (k) {
        var v = k === null ? null : f.v[keyIndex[k]];
        rest = has(rest) && has(v) ? rest - v : null;
      });
      remainder.td.textContent = fmt({ unit: "mW" }, rest);
      remainder.td.className = has(rest) ? "" : "missing";
    }
    var mode = hello.channels.findIndex(function (c) { return c.kind === "board" && c.field === "mode"; });
    $("mode").textContent = "power mode " + (mode >= 0 ? modeName(f.v[mode]) : (hello.board.nvpmodel || DASH));
    $("status").textContent = "frame " + f.seq + " at " + utc(f.t) + " UTC";
    $("status").className = "live";
    recent.push(f);
    if (recent.length > LIVE_POINTS) recent.shift();
    drawLive();
  }

  // ---- Charts ----

  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }
  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
                    21600, 43200, 86400, 172800, 604800].map(function (s) { return s * 1000; });
  function timeStep(span, n) {
    for (var i = 0; i < TIME_STEPS.length; i++) if (span / TIME_STEPS[i] <= n) return TIME_STEPS[i];
    return TIME_STEPS[TIME_STEPS.length - 1];
  }

  // Axes and grid into `g`; returns the x and y mappings.
  function frame(g, box, t0, t1, lo, hi, yunit) {
    var W = box.w, H = box.h, L = 56, R = 10, T = 10, B = 22;
    var X = function (t) { return L + (t - t0) / (t1 - t0) * (W - L - R); };
    var Y = function (v) { return T + (1 - (v - lo) / (hi - lo)) * (H - T - B); };
    var ys = niceStep(hi - lo, 4);
    for (var v = Math.ceil(lo / ys) * ys; v <= hi + 1e-9; v += ys) {
      g.appendChild(svg("line", { class: "grid", x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      g.appendChild(svg("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end" }, +v.toFixed(3) + " " + yunit));
    }
    var ts = timeStep(t1 - t0, 7), withDate = t1 - t0 > 86400000;
    for (var t = Math.ceil(t0 / ts) * ts; t <= t1; t += ts) {
      g.appendChild(svg("line", { class: "grid", x1: X(t), x2: X(t), y1: T, y2: H - B }));
      g.appendChild(svg("text", { x: X(t), y: H - 6, "text-anchor": "middle" }, utc(t, withDate)));
    }
    return { X: X, Y: Y, L: L, R: W - R, T: T, B: H - B };
  }

  function path(points) {
    var d = "", pen = false;
    points.forEach(function (p) {
      if (!p) { pen = false; return; }
      d += (pen ? "L" : "M") + p[0].toFixed(1) + " " + p[1].toFixed(1) + " ";
      pen = true;
    });
    return d.trim();
  }

  function range(values) {
    var lo = Infinity, hi = -Infinity;
    values.forEach(function (v) { if (has(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
    if (lo === Infinity) return [0, 1];
    lo = Math.min(0, lo);
    if (hi <= lo) hi = lo + 1;
    return [lo, hi * 1.05];
  }

  function drawLive() {
    var s = $("live-chart");
    s.textContent = "";
    if (recent.length < 1 || !liveRails.length) return;
    var all = [];
    liveRails.forEach(function (r) {
      recent.forEach(function (f) { var v = f.v[keyIndex[r.key]]; if (has(v)) all.push(v / 1000); });
    });
    var yr = range(all);
    var t1 = recent[recent.length - 1].t;
    var t0 = Math.min(recent[0].t, t1 - 1000 * Math.max(10, hello.period_ms / 1000 * 10));
    var m = frame(s, { w: 960, h: 200 }, t0, t1, yr[0], yr[1], "W");
    liveRails.forEach(function (r) {
      var pts = recent.map(function (f) {
        var v = f.v[keyIndex[r.key]];
        return has(v) ? [m.X(f.t), m.Y(v / 1000)] : null;
      });
      s.appendChild(svg("path", { class: "series", d: path(pts), stroke: color[r.name], "data-rail": r.name }));
    });
  }

  // ---- History ----

  var historyLoaded = false;
  // The range shown, as the api takes it; the page's address keeps it
  // (#range=1h, or #from=..&to=..) so a view can be bookmarked or shared.
  var view = viewFromHash() || { from: "-15m", to: "now", relative: "15m" };

  function viewFromHash() {
    var p = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) p[kv.slice(0, i)] = decodeURIComponent(kv.slice(i + 1));
    });
    if (p.range) return { from: "-" + p.range, to: "now", relative: p.range };
    if (p.from) return { from: p.from, to: p.to || "now", relative: null };
    return null;
  }
  var shown = null;  // the last history response
  var energyCache = {};
  var refreshTimer = null;

  function at(ms) { return (ms / 1000).toFixed(3); }  // Unix seconds, as the time syntax takes them

  function loadHistory() {
    historyLoaded = true;
    var hash = view.relative ? "#range=" + view.relative
                             : "#from=" + encodeURIComponent(view.from) + "&to=" + encodeURIComponent(view.to);
    if (location.hash !== hash) history.replaceState(null, "", hash);
    var keys = liveRails.map(function (r) { return r.key; });
    var q = "api/history?from=" + encodeURIComponent(view.from) + "&to=" + encodeURIComponent(view.to) +
            (keys.length ? "&channels=" + encodeURIComponent(keys.join(",")) : "");
    fetch(q, { credentials: "same-origin" }).then(function (r) {
      return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; });
    }).then(function (h) {
      shown = h;
      drawHistory();
    }).catch(function (e) {
      $("range-text").textContent = "history: " + e.message;
    });
    clearTimeout(refreshTimer);
    if (view.relative) refreshTimer = setTimeout(loadHistory, 5000);
    Array.prototype.forEach.call(document.querySelectorAll("#ranges button[data-range]"), function (b) {
      b.className = b.getAttribute("data-range") === view.relative ? "on" : "";
    });
  }

  function drawHistory() {
    var s = $("history-chart"), h = shown;
    s.textContent = "";
    var all = [];
    h.series.forEach(function (sr) { sr.max.forEach(function (v) { all.push(v / 1000); }); sr.min.forEach(function (v) { all.push(v / 1000); }); });
    var yr = range(all);
    var m = frame(s, { w: 960, h: 260 }, h.from, h.to, yr[0], yr[1], "W");
    $("range-text").textContent = utc(h.from, true) + " .. " + utc(h.to, true) + " UTC, step " + dur(h.step);
    // Labels at least 11 px on the screen whatever the chart's scale, in as
    // many rows as fit; the chart remembers the width it was drawn for.
    var shownWidth = s.getBoundingClientRect().width || 960;
    s.setAttribute("data-width", Math.round(shownWidth));
    var fs = Math.max(11, 11 * 960 / shownWidth), pitch = Math.ceil(fs * 1.25);
    var rows = [];  // per label row, where its last label ends
    var maxRows = Math.max(1, Math.floor((m.B - m.T - 4) / pitch));
    h.windows.slice().sort(function (p, q) { return p.start - q.start; }).forEach(function (w) {
      var a = Math.max(h.from, w.start), b = Math.min(h.to, w.end === null ? h.now : w.end);
      var x0 = m.X(a), x1 = Math.max(m.X(b), x0 + 2);
      var r = svg("rect", { class: "window" + (w.end === null ? " open" : ""), x: x0, y: m.T,
                            width: x1 - x0, height: m.B - m.T, "data-window": w.id });
      r.appendChild(svg("title", {}, w.label + " (window " + w.id + "): " + utc(w.start, true) + " UTC, " +
                    (w.end === null ? "open" : dur(w.end - w.start)) + (w.abandoned ? ", abandoned" : "")));
      r.addEventListener("mouseenter", function () { showEnergy(w, r); });
      r.addEventListener("click", function () { showEnergy(w, r); });
      s.appendChild(r);
      // A label that would overlap one already drawn goes one row lower (in
      // start order, by its drawn width); none fits: the window's tooltip
      // still names it.
      // A label that would run past the chart's right edge ends at it.
      var text = s.appendChild(svg("text", { class: "wlabel", style: "font-size:" + fs.toFixed(1) + "px" },
                                   w.label));
      var width = text.getComputedTextLength ? text.getComputedTextLength() : 0;
      if (!(width > 0)) width = 0.6 * fs * w.label.length;
      var x = Math.max(m.L, Math.min(x0 + 2, m.R - width));
      var row = 0;
      while (row < rows.length && rows[row] > x) row++;
      if (row >= maxRows) { s.removeChild(text); return; }
      text.setAttribute("x", x);
      text.setAttribute("y", m.T + fs + pitch * row);
      rows[row] = x + width + fs / 2;
    });
    var names = [];
    h.series.forEach(function (sr) {
      var name = sr.key.split("/").slice(1, -1).join("/");
      names.push(name);
      var c = color[name] || "#888";
      // Runs of consecutive steps; a step without a value breaks the line.
      var runs = [], run = null;
      for (var i = 0; i < sr.t.length; i++) {
        if (!run || sr.t[i] - sr.t[i - 1] > h.step) runs.push(run = []);
        run.push(i);
      }
      var line = [], bands = "";
      runs.forEach(function (r) {
        // A lone step is drawn across its width, not as a dot.
        var xs = r.length === 1 ? [sr.t[r[0]], sr.t[r[0]] + h.step] : null;
        var up = [], down = [];
        r.forEach(function (i) {
          (xs || [sr.t[i] + h.step / 2]).forEach(function (t) {
            var x = m.X(Math.min(h.to, t));
            up.push([x, m.Y(sr.max[i] / 1000)]);
            down.unshift([x, m.Y(sr.min[i] / 1000)]);
            line.push([x, m.Y(sr.avg[i] / 1000)]);
          });
        });
        line.push(null);
        bands += path(up.concat(down)) + " Z ";
      });
      if (runs.length) s.appendChild(svg("path", { class: "band", d: bands.trim(), fill: c }));
      s.appendChild(svg("path", { class: "series", d: path(line), stroke: c, "data-key": sr.key,
                                  "data-points": sr.t.length }));
    });
    legend($("history-legend"), names);
    brush(s, m);
  }

  function brush(s, m) {
    var start = null, rect = null;
    function sx(ev) {
      var b = s.getBoundingClientRect();
      return Math.min(m.R, Math.max(m.L, (ev.clientX - b.left) / b.width * 960));
    }
    s.onmousedown = function (ev) {
      if (ev.target.classList.contains("window")) return;
      start = sx(ev);
      rect = s.appendChild(svg("rect", { class: "brush", x: start, y: m.T, width: 0, height: m.B - m.T }));
    };
    s.onmousemove = function (ev) {
      if (start === null) return;
      var x = sx(ev);
      rect.setAttribute("x", Math.min(x, start));
      rect.setAttribute("width", Math.abs(x - start));
    };
    s.onmouseup = function (ev) {
      if (start === null) return;
      var x = sx(ev), a = Math.min(x, start), b = Math.max(x, start);
      start = null;
      if (b - a < 4) { rect.remove(); return; }
      var t = function (px) { return shown.from + (px - m.L) / (m.R - m.L) * (shown.to - shown.from); };
      view = { from: at(t(a)), to: at(t(b)), relative: null };
      loadHistory();
    };
  }

  function showEnergy(w, r) {
    Array.prototype.forEach.call(document.querySelectorAll("#history-chart .picked"), function (p) { p.classList.remove("picked"); });
    r.classList.add("picked");
    var box = $("window-info");
    var cached = energyCache[w.id];
    if (cached && w.end !== null) return renderEnergy(w, cached);
    fetch("api/energy?window=" + w.id, { credentials: "same-origin" }).then(function (x) {
      return x.json().then(function (j) { if (!x.ok) throw new Error(j.error || x.status); return j; });
    }).then(function (e) {
      energyCache[w.id] = e;
      renderEnergy(w, e);
    }).catch(function (e) { box.textContent = w.label + ": " + e.message; });
  }

  function renderEnergy(w, e) {
    var box = $("window-info");
    box.textContent = "";
    box.appendChild(el("strong", {}, w.label + " (window " + w.id + ")"));
    box.appendChild(document.createTextNode(" " + utc(e.from, true) + " UTC, " + e.duration_s.toFixed(3) + " s" +
                                           (w.end === null ? ", open: up to now" : "")));
    var t = box.appendChild(el("table", { id: "energy-table", "data-window": w.id }));
    var head = el("tr");
    ["Rail", "Energy", "Avg", "Peak"].forEach(function (x) { head.appendChild(el("th", {}, x)); });
    t.appendChild(el("thead")).appendChild(head);
    var byName = {};
    e.rails.forEach(function (r) { byName[r.name] = r; });
    var order = (hello ? hello.rail_tree : []).filter(function (r) { return byName[r.name]; });
    e.rails.forEach(function (r) {
      if (!order.some(function (o) { return o.name === r.name; })) order.push({ name: r.name, depth: 0 });
    });
    var body = t.appendChild(el("tbody"));
    order.forEach(function (o) {
      var r = byName[o.name];
      var tr = body.appendChild(el("tr", { "data-rail": r.name, class: r.input ? "input" : "" }));
      tr.appendChild(el("td", {}, r.name)).style.paddingLeft = (6 + 16 * (o.depth || 0)) + "px";
      tr.appendChild(el("td", {}, has(r.energy_j) ? r.energy_j.toFixed(3) + " J" : DASH));
      tr.appendChild(el("td", {}, has(r.avg_w) ? r.avg_w.toFixed(3) + " W" : DASH));
      tr.appendChild(el("td", {}, has(r.peak_w) ? r.peak_w.toFixed(3) + " W" : DASH));
    });
    if (e.note) box.appendChild(el("p", { class: "note" }, e.note));
  }

  Array.prototype.forEach.call(document.querySelectorAll("#ranges button[data-range]"), function (b) {
    b.addEventListener("click", function () {
      var r = b.getAttribute("data-range");
      view = { from: "-" + r, to: "now", relative: r };
      loadHistory();
    });
  });
  $("zoom-out").addEventListener("click", function () {
    if (!shown) return;
    var span = shown.to - shown.from, mid = (shown.from + shown.to) / 2;
    var to = Math.min(shown.now, mid + span);
    view = { from: at(to - 2 * span), to: at(to), relative: null };
    loadHistory();
  });

  // The history redrawn for a new width (its labels keep their size on the screen).
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { if (shown) drawHistory(); }, 100);
  });

  // ---- The stream ----

  var es = new EventSource("api/live", { withCredentials: true });
  es.addEventListener("hello", function (ev) { onHello(JSON.parse(ev.data)); });
  es.addEventListener("frame", function (ev) { onFrame(JSON.parse(ev.data)); });
  es.onerror = function () {
    $("status").textContent = "disconnected: retrying";
    $("status").className = "down";
  };

  // What this page fetched, for anyone checking that it talks to its own
  // daemon only.
  function listResources() {
    var names = [location.href];
    if (window.performance && performance.getEntriesByType) {
      performance.getEntriesByType("resource").forEach(function (e) { names.push(e.name); });
    }
    $("resources").textContent = JSON.stringify(names);
  }
  setInterval(listResources, 1000);
  listResources();
})();
