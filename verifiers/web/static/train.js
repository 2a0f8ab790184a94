// vf view: the training run page. Reads each run's metrics.jsonl and rollouts.jsonl
// incrementally (/run/KEY/-/metrics?since=OFFSET&last=STEP: only the lines appended since)
// and draws the charts as SVG. Every text from the run's files goes in through textContent
// or setAttribute: nothing is parsed as HTML.
"use strict";
(function () {
  const root = document.getElementById("train");
  if (!root) return;
  const single = root.dataset.single === "yes";
  const SVGNS = "http://www.w3.org/2000/svg";
  const W = 520, H = 200, L = 56, R = 10, T = 10, B = 24;
  const FAST_MS = 1000, SLOW_MS = 5000;

  const CHARTS = [
    ["reward", ["reward", /^reward\//]],
    ["loss", ["loss"]],
    ["KL / logprob mismatch", ["mismatch_kl", "logprob_diff_mean"]],
    ["entropy", ["entropy"]],
    ["learning rate", ["lr"]],
    ["tokens per second", ["tokens_per_second"]],
    ["off-policy lag (steps)", ["off_policy_lag", "off_policy_lag_max"]],
    ["masked fraction", ["masked_fraction"]],
    ["masked and skipped counts",
      ["dropped_sequences", "skipped_batches", "dropped_overlong", /^counts\//]],
    ["grad norm", ["grad_norm"]],
    ["seconds per step", ["step_seconds", "wait_seconds"]],
  ];

  const runs = Array.from(document.querySelectorAll("tr.train-run")).map((tr, i) => ({
    i: i,
    base: tr.dataset.base,
    name: tr.dataset.name,
    tr: tr,
    status: "unknown",
    m: { offset: 0, last: null, n: 0, cols: { step: [] } },
    r: { offset: 0, last: null, steps: [], q: [], n: [], samples: [] },
  }));

  function el(tag, attrs, text) {
    const e = tag.startsWith("svg:")
      ? document.createElementNS(SVGNS, tag.slice(4))
      : document.createElement(tag);
    for (const k in attrs || {}) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = String(text);
    return e;
  }

  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
    return String(Math.round(v * 1000) / 1000);
  }

  // ------------------------------------------------------------------ data

  let dirty = true;  // something new since the page was last drawn

  function addMetrics(run, d) {
    const m = run.m;
    if (d.reset) { m.n = 0; m.cols = { step: [] }; m.last = null; }
    const rows = (d.cols.step || []).length;
    for (const k of Object.keys(d.cols)) {
      if (!(k in m.cols)) m.cols[k] = new Array(m.n).fill(null);
    }
    for (const k of Object.keys(m.cols)) {
      const add = d.cols[k];
      const col = m.cols[k];
      if (add) { for (let j = 0; j < rows; j++) col.push(add[j]); }
      else { for (let j = 0; j < rows; j++) col.push(null); }
    }
    m.n += rows;
    if (d.offset !== m.offset || d.reset) m.crc = d.crc;
    m.offset = d.offset;
    if (rows) m.last = m.cols.step[m.n - 1];
    const cks = JSON.stringify(d.checkpoints || []);
    if (rows || d.reset || run.status !== d.status || cks !== run.cks) dirty = true;
    run.status = d.status;
    run.updatedAt = d.updated_at;
    run.cks = cks;
    run.checkpoints = d.checkpoints || [];
    return d.offset < d.size;
  }

  function addRewards(run, d) {
    const r = run.r;
    if (d.reset) { r.steps = []; r.q = []; r.n = []; r.samples = []; r.last = null; }
    for (let j = 0; j < d.steps.length; j++) {
      r.steps.push(d.steps[j]); r.q.push(d.q[j]); r.n.push(d.n[j]); r.samples.push(d.samples[j]);
    }
    if (d.offset !== r.offset || d.reset) r.crc = d.crc;
    if (d.steps.length || d.reset) dirty = true;
    r.offset = d.offset;
    if (d.steps.length) r.last = d.steps[d.steps.length - 1];
    return d.offset < d.size;
  }

  async function getJSON(url) {
    const resp = await fetch(url, { credentials: "same-origin", cache: "no-store" });
    if (!resp.ok) throw new Error(url + ": HTTP " + resp.status);
    return resp.json();
  }

  function q(state) {
    return "since=" + state.offset + (state.last === null ? "" : "&last=" + state.last) +
      (state.crc === undefined || state.crc === null ? "" : "&crc=" + state.crc);
  }

  // catch up in bounded chunks, then wait for the next poll
  async function pollMetrics(run) {
    let more = true;
    while (more) more = addMetrics(run, await getJSON(run.base + "/-/metrics?" + q(run.m)));
  }
  async function pollRewards(run) {
    let more = true;
    while (more) more = addRewards(run, await getJSON(run.base + "/-/rewards?" + q(run.r)));
  }

  // ------------------------------------------------------------------ charts

  function seriesOf(names) {
    const found = [];
    const seen = new Set();
    for (const want of names) {
      for (const run of runs) {
        for (const k of Object.keys(run.m.cols)) {
          const hit = typeof want === "string" ? k === want : want.test(k);
          if (hit && !seen.has(k)) { seen.add(k); found.push(k); }
        }
      }
    }
    return found;
  }

  // points (x, y) thinned to at most ~2 per pixel column: min and max of each bucket
  function thin(xs, ys, x0, x1) {
    const out = [];
    const n = xs.length;
    if (n <= 1200) {
      for (let j = 0; j < n; j++) if (ys[j] !== null && isFinite(ys[j])) out.push([xs[j], ys[j]]);
      return out;
    }
    const buckets = 400, span = (x1 - x0) || 1;
    let cur = -1, lo = null, hi = null, xl = 0, xh = 0;
    const flush = () => {
      if (lo === null) return;
      if (xl <= xh) { out.push([xl, lo]); out.push([xh, hi]); }
      else { out.push([xh, hi]); out.push([xl, lo]); }
    };
    for (let j = 0; j < n; j++) {
      const y = ys[j];
      if (y === null || !isFinite(y)) continue;
      const b = Math.min(buckets - 1, Math.floor((xs[j] - x0) / span * buckets));
      if (b !== cur) { flush(); cur = b; lo = hi = null; }
      if (lo === null || y < lo) { lo = y; xl = xs[j]; }
      if (hi === null || y > hi) { hi = y; xh = xs[j]; }
    }
    flush();
    return out;
  }

  // the y range of a flat series: from 0 to twice its value (a learning rate of 0.01 is drawn
  // on 0 to 0.02, not on -0.49 to 0.51), or +-0.5 around 0
  function flatRange(y) {
    if (y > 0) return [0, 2 * y];
    if (y < 0) return [2 * y, 0];
    return [-0.5, 0.5];
  }

  function frame(svg, x0, x1, y0, y1) {
    svg.appendChild(el("svg:line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }));
    svg.appendChild(el("svg:line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }));
    svg.appendChild(el("svg:text", { x: L - 4, y: T + 9, "text-anchor": "end" }, fmt(y1)));
    svg.appendChild(el("svg:text", { x: L - 4, y: H - B, "text-anchor": "end" }, fmt(y0)));
    svg.appendChild(el("svg:text", { x: L, y: H - 6, "text-anchor": "start" }, "step " + x0));
    svg.appendChild(el("svg:text", { x: W - R, y: H - 6, "text-anchor": "end" }, "step " + x1));
    const sx = (x) => L + (x - x0) / ((x1 - x0) || 1) * (W - L - R);
    const sy = (y) => H - B - (y - y0) / ((y1 - y0) || 1) * (H - B - T);
    return [sx, sy];
  }

  function pathOf(points, sx, sy) {
    let d = "";
    for (let j = 0; j < points.length; j++) {
      d += (j ? "L" : "M") + sx(points[j][0]).toFixed(1) + " " + sy(points[j][1]).toFixed(1);
    }
    return d;
  }

  function drawChart(fig, title, names) {
    const series = [];
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    names.forEach((name, si) => {
      for (const run of runs) {
        const ys = run.m.cols[name];
        if (!ys || !run.m.n) continue;
        const xs = run.m.cols.step;
        x0 = Math.min(x0, xs[0]); x1 = Math.max(x1, xs[run.m.n - 1]);
        series.push({ run: run, name: name, si: si, xs: xs, ys: ys });
      }
    });
    for (const s of series) {
      for (const y of s.ys) if (y !== null && isFinite(y)) { if (y < y0) y0 = y; if (y > y1) y1 = y; }
    }
    fig.textContent = "";
    fig.appendChild(el("figcaption", {}, title));
    if (!series.length || !isFinite(y0)) {
      fig.appendChild(el("p", { class: "muted" }, "no data yet"));
      return;
    }
    if (y0 === y1) [y0, y1] = flatRange(y0);
    const svg = el("svg:svg", { class: "chart", viewBox: "0 0 " + W + " " + H, role: "img" });
    svg.appendChild(el("svg:title", {}, title));
    const [sx, sy] = frame(svg, x0, x1, y0, y1);
    const legend = el("div", { class: "legend" });
    for (const s of series) {
      const cls = "s" + (runs.length > 1 ? s.run.i : s.si) % 8;
      const dash = runs.length > 1 && s.si > 0 ? " dash" : "";
      const p = el("svg:path", { class: "line " + cls + dash, d: pathOf(thin(s.xs, s.ys, x0, x1), sx, sy) });
      p.dataset.series = s.name;
      svg.appendChild(p);
      let latest = null;
      for (let j = s.run.m.n - 1; j >= 0; j--) if (s.ys[j] !== null) { latest = s.ys[j]; break; }
      const item = el("span", {});
      item.appendChild(el("span", { class: "swatch " + cls }));
      item.appendChild(document.createTextNode(
        (runs.length > 1 ? s.run.name + " · " : "") + s.name + " " + fmt(latest)));
      legend.appendChild(item);
    }
    fig.appendChild(svg);
    fig.appendChild(legend);
  }

  function drawRewardDist(fig, run) {
    const r = run.r;
    fig.textContent = "";
    fig.appendChild(el("figcaption", {}, runs.length > 1 ? run.name : "rewards per step"));
    const idx = [];
    for (let j = 0; j < r.steps.length; j++) if (r.q[j]) idx.push(j);
    if (!idx.length) {
      fig.appendChild(el("p", { class: "muted" }, "no rewards recorded yet (rollouts.jsonl)"));
      return;
    }
    let y0 = Infinity, y1 = -Infinity;
    for (const j of idx) { y0 = Math.min(y0, r.q[j][0]); y1 = Math.max(y1, r.q[j][4]); }
    if (y0 === y1) [y0, y1] = flatRange(y0);
    const x0 = r.steps[idx[0]], x1 = r.steps[idx[idx.length - 1]];
    const svg = el("svg:svg", { class: "chart", viewBox: "0 0 " + W + " " + H, role: "img" });
    svg.appendChild(el("svg:title", {}, "reward distribution per step"));
    const [sx, sy] = frame(svg, x0, x1, y0, y1);
    const step = Math.max(1, Math.floor(idx.length / 600));  // at most ~600 band points
    const pick = idx.filter((_, k) => k % step === 0 || k === idx.length - 1);
    const band = (a, b, cls) => {
      const top = pick.map((j) => [r.steps[j], r.q[j][b]]);
      const bottom = pick.map((j) => [r.steps[j], r.q[j][a]]).reverse();
      svg.appendChild(el("svg:path", { class: "band " + cls, d: pathOf(top.concat(bottom), sx, sy) + "Z" }));
    };
    band(0, 4, "outer");
    band(1, 3, "inner");
    svg.appendChild(el("svg:path", {
      class: "line s" + (run.i % 8), d: pathOf(pick.map((j) => [r.steps[j], r.q[j][2]]), sx, sy),
    }));
    fig.appendChild(svg);
    const last = idx[idx.length - 1];
    fig.appendChild(el("div", { class: "legend" },
      "step " + r.steps[last] + ": " + r.n[last] + " rollouts, median " + fmt(r.q[last][2]) +
      " (min " + fmt(r.q[last][0]) + ", max " + fmt(r.q[last][4]) + ")"));
  }

  const figures = new Map();
  function figure(container, key) {
    let f = figures.get(key);
    if (!f) { f = el("figure", { id: "chart-" + key.replace(/[^a-z0-9]+/gi, "-") }); container.appendChild(f); figures.set(key, f); }
    return f;
  }

  function render() {
    dirty = false;
    const charts = document.getElementById("charts");
    for (const [title, want] of CHARTS) drawChart(figure(charts, title), title, seriesOf(want));
    const dist = document.getElementById("reward-dist");
    for (const run of runs) drawRewardDist(figure(dist, "dist-" + run.i), run);
    let total = 0;
    for (const run of runs) {
      total += run.m.n;
      run.tr.querySelector(".steps-done").textContent = String(run.m.n);
      const badge = run.tr.querySelector(".run-status");
      badge.textContent = run.status;
      badge.className = "badge run-status" + (run.status === "completed" ? " good" : run.status === "running" ? "" : " warn");
    }
    root.dataset.rows = String(total);
    if (single) { drawCheckpoints(runs[0].checkpoints || []); updateRollouts(); }
  }

  function drawCheckpoints(list) {
    const body = document.querySelector("#checkpoints tbody");
    if (!body) return;
    body.textContent = "";
    if (!list.length) {
      const tr = el("tr", {});
      tr.appendChild(el("td", { colspan: 3, class: "muted" }, "no checkpoints yet"));
      body.appendChild(tr);
    }
    for (const c of list) {
      const tr = el("tr", { class: "checkpoint" });
      tr.appendChild(el("td", { class: "mono" }, "step_" + c.step));
      tr.appendChild(el("td", { class: "num" }, c.step));
      const td = el("td", {});
      td.appendChild(el("span", { class: c.complete ? "badge good" : "badge warn" }, c.complete ? "yes" : "being written"));
      tr.appendChild(td);
      body.appendChild(tr);
    }
  }

  // ------------------------------------------------------------------ sample rollouts

  let shownStep = null;
  async function updateRollouts() {
    const run = runs[0];
    const input = document.getElementById("step-input");
    const follow = document.getElementById("follow");
    let step = null;
    if (follow.checked) {
      for (let j = run.r.steps.length - 1; j >= 0; j--) if (run.r.samples[j] || run.r.n[j]) { step = run.r.steps[j]; break; }
      if (step !== null) input.value = String(step);
    } else if (input.value !== "") {
      step = parseInt(input.value, 10);
    }
    if (step === null || step === shownStep || !isFinite(step)) return;
    shownStep = step;
    const box = document.getElementById("step-rollouts");
    let d;
    try {
      d = await getJSON(run.base + "/-/step/" + step);
    } catch (e) {
      box.textContent = "";
      box.appendChild(el("p", { class: "muted" }, "no rollouts kept for step " + step));
      return;
    }
    if (shownStep !== step) return;
    box.textContent = "";
    box.appendChild(el("p", { class: "muted", id: "step-caption" },
      "step " + d.step + ": " + d.rewards.length + " rewards, " + d.rollouts.length + " sample rollouts" +
      (d.rollouts_dropped ? " (" + d.rollouts_dropped + " not kept: rollouts.jsonl reached its size limit)" : "")));
    drawHistogram(document.getElementById("step-hist"), d.rewards);
    for (const ro of d.rollouts) {
      const div = el("div", { class: "msg sample-rollout" });
      div.appendChild(el("div", { class: "role" },
        "reward " + fmt(ro.reward) + " · example " + ro.example_id + " · group " + ro.group +
        (ro.used ? " · trained on" : " · not trained on") + (ro.task && ro.task !== "default" ? " · " + ro.task : "")));
      if (ro.error) div.appendChild(el("pre", { class: "error" }, ro.error));
      for (const part of ["prompt", "completion"]) {
        for (const m of ro[part] || []) {
          const pre = el("pre", { class: part });
          pre.appendChild(el("strong", {}, (m.role || "?") + ": "));
          pre.appendChild(document.createTextNode(m.content || ""));
          div.appendChild(pre);
        }
      }
      box.appendChild(div);
    }
  }

  function drawHistogram(box, values) {
    box.textContent = "";
    const finite = values.filter((v) => isFinite(v));
    if (!finite.length) return;
    let lo = Math.min(0, ...finite), hi = Math.max(1, ...finite);
    const bins = 20, width = (hi - lo) / bins || 1;
    const counts = new Array(bins).fill(0);
    for (const v of finite) counts[Math.min(bins - 1, Math.floor((v - lo) / width))]++;
    const top = Math.max(...counts);
    const svg = el("svg:svg", { class: "chart", viewBox: "0 0 " + W + " " + (H - 40), role: "img" });
    svg.appendChild(el("svg:title", {}, "reward distribution of this step"));
    const ph = H - 40 - B - T, bw = (W - L - R) / bins;
    counts.forEach((c, k) => {
      const h = ph * c / top;
      const rect = el("svg:rect", { class: "bar", x: (L + k * bw + 1).toFixed(1), y: (H - 40 - B - h).toFixed(1), width: Math.max(bw - 2, 1).toFixed(1), height: h.toFixed(1) });
      rect.appendChild(el("svg:title", {}, "[" + fmt(lo + k * width) + ", " + fmt(lo + (k + 1) * width) + "): " + c));
      svg.appendChild(rect);
    });
    svg.appendChild(el("svg:line", { class: "axis", x1: L, y1: H - 40 - B, x2: W - R, y2: H - 40 - B }));
    svg.appendChild(el("svg:text", { x: L, y: H - 40 - 6 }, fmt(lo)));
    svg.appendChild(el("svg:text", { x: W - R, y: H - 40 - 6, "text-anchor": "end" }, fmt(hi)));
    svg.appendChild(el("svg:text", { x: L - 4, y: T + 9, "text-anchor": "end" }, String(top)));
    box.appendChild(svg);
  }

  // ------------------------------------------------------------------ the poll loop

  const state = document.getElementById("live-state");
  async function tick() {
    let wait = SLOW_MS;
    try {
      for (const run of runs) await pollMetrics(run);
      if (dirty) render();  // the curves first
      for (const run of runs) await pollRewards(run);
      if (dirty) render();
      dirty = false;
      const live = runs.some((r) => r.status === "running");
      wait = live ? FAST_MS : SLOW_MS;
      root.dataset.caughtUp = "yes";
      const written = runs.map((r) => r.updatedAt).filter((t) => t).sort().pop();
      state.textContent = (live ? "live: new steps appear as they are written (checked every " +
        FAST_MS / 1000 + " s)" : "not running: checked every " + SLOW_MS / 1000 + " s") +
        (written ? " · the run last wrote " + new Date(written).toLocaleString() : "") +
        " · checked " + new Date().toLocaleTimeString();
    } catch (e) {
      state.textContent = "cannot read the run: " + e.message + " (retrying)";
    }
    setTimeout(tick, wait);
  }
  if (single) {
    document.getElementById("step-input").addEventListener("change", () => {
      document.getElementById("follow").checked = false;
      updateRollouts();
    });
    document.getElementById("follow").addEventListener("change", () => { shownStep = null; updateRollouts(); });
    document.getElementById("step-form").addEventListener("submit", (e) => e.preventDefault());
  }
  tick();
})();
