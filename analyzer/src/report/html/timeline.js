// The report's page: the timeline of a run, events per kind over time with crashes and faults,
// zoomable by dragging across it or by typing a time range.

// ---- the timeline -------------------------------------------------------------------------------
const TL = { W: 1200, L: 70, R: 900, T: 40, B: 300, LEGEND: 925 };
const NOT_SERIES = new Set([KIND.run_start, KIND.run_end, KIND.observed, KIND.crash, KIND.restart, KIND.fault]);
const runs = [];
page.scenarios.forEach((s, i) => {
  let r = runs.find((x) => x.id === s.run_id);
  if (!r) { r = { id: s.run_id, scenes: [] }; runs.push(r); }
  r.scenes.push(i);
});
let tl = null; // { run, start, end, from, to }
function nice(x) {
  if (x <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  for (const m of [1, 2, 5, 10]) if (m * p >= x * 0.999999) return m * p;
  return 10 * p;
}
function drawTimeline() {
  const host = document.getElementById("timeline");
  const note = document.getElementById("timeline-note");
  const scenes = tl.run.scenes.map(rowsOf).filter(Boolean);
  if (!scenes.length) { host.replaceChildren(); note.textContent = "This run's rows are not embedded."; return; }
  const from = tl.from, to = tl.to, span = Math.max(to - from, 1);
  const n = draw.buckets;
  const counts = page.kinds.map(() => new Uint32Array(n));
  const totals = new Float64Array(page.kinds.length);
  const markers = [];
  let events = 0;
  for (const S of scenes) {
    for (let i = 0; i < S.n; i++) {
      const t = S.ts[i];
      if (t < from || t > to) continue;
      events++;
      const b = Math.min(n - 1, Math.floor((t - from) * n / (span + 1)));
      counts[S.kind[i]][b]++;
      totals[S.kind[i]]++;
      if (S.kind[i] === KIND.crash) markers.push({ t, crash: true, label: `${actorOf(S, i)}#${incOf(S, i)} at ${S.notes.get(i) || "?"}`, si: S.si });
      else if (S.kind[i] === KIND.fault) markers.push({ t, crash: false, label: `${actorOf(S, i)}: ${S.notes.get(i) || "?"}`, si: S.si });
    }
  }
  const series = [];
  page.kinds.forEach((k, ki) => { if (totals[ki] > 0 && !NOT_SERIES.has(ki)) series.push(ki); });
  let peak = 1;
  for (const ki of series) for (const c of counts[ki]) peak = Math.max(peak, c);
  const step = nice(peak / 5), ymax = Math.ceil(peak / step) * step;
  const xOf = (t) => TL.L + ((t - from) / span) * (TL.R - TL.L);
  const yOf = (v) => TL.B - (v / ymax) * (TL.B - TL.T);
  const H = Math.max(TL.B + 50, TL.T + series.length * 16 + 60);
  const out = [`<rect x="0" y="0" width="${TL.W}" height="${H}" fill="#fff"/>`];
  const text = (x, y, t, size, color, anchor) => out.push(`<text x="${x}" y="${y}" dy="0.5ex" font-family="sans-serif" font-size="${size}" fill="${color}" text-anchor="${anchor || "start"}">${xml(t)}</text>`);
  for (let k = 0; k * step <= ymax * 1.000001; k++) {
    const v = Number((k * step).toPrecision(6));
    out.push(`<line x1="${TL.L}" x2="${TL.R}" y1="${yOf(v)}" y2="${yOf(v)}" stroke="#eee"/>`);
    text(TL.L - 6, yOf(v), String(v), 11, RGB.ink, "end");
  }
  const tstep = nice(span / 8);
  const decimals = tstep >= 1e9 ? 0 : tstep >= 1e8 ? 1 : tstep >= 1e7 ? 2 : tstep >= 1e6 ? 3 : 6;
  for (let k = Math.ceil(from / tstep); k * tstep <= to; k++) {
    const t = k * tstep;
    out.push(`<line x1="${xOf(t)}" x2="${xOf(t)}" y1="${TL.B}" y2="${TL.B + 5}" stroke="${RGB.ink}"/>`);
    text(xOf(t), TL.B + 16, (t / 1e9).toFixed(decimals), 11, RGB.ink, "middle");
  }
  text((TL.L + TL.R) / 2, TL.B + 36, "seconds since the run started", 12, RGB.ink, "middle");
  out.push(`<line x1="${TL.L}" x2="${TL.R}" y1="${TL.B}" y2="${TL.B}" stroke="${RGB.ink}"/>`);
  out.push(`<line x1="${TL.L}" x2="${TL.L}" y1="${TL.T}" y2="${TL.B}" stroke="${RGB.ink}"/>`);
  if (tl.run.scenes.length > 1) {
    for (const si of tl.run.scenes) {
      const S = rowsOf(si);
      if (!S || !S.n) continue;
      let first = Infinity;
      for (let i = 0; i < S.n; i++) first = Math.min(first, S.ts[i]);
      if (first < from || first > to) continue;
      out.push(`<line x1="${xOf(first)}" x2="${xOf(first)}" y1="${TL.T - 14}" y2="${TL.B}" stroke="${RGB.grey}"/>`);
      text(xOf(first) + 3, TL.T - 8, scenarioName(si), 10, RGB.grey);
    }
  }
  const columns = new Map();
  for (const m of markers) {
    const key = Math.round(xOf(m.t)) + (m.crash ? "c" : "f");
    const c = columns.get(key) || { x: Math.round(xOf(m.t)), crash: m.crash, labels: [] };
    if (c.labels.length < 5) c.labels.push(`${scenarioName(m.si)}: ${m.label}`);
    c.labels.more = (c.labels.more || 0) + 1;
    columns.set(key, c);
  }
  for (const c of columns.values()) {
    const more = c.labels.more > c.labels.length ? ` (and ${c.labels.more - c.labels.length} more)` : "";
    out.push(`<line class="${c.crash ? "crash" : "fault"}" x1="${c.x}" x2="${c.x}" y1="${TL.T}" y2="${TL.B}" stroke="${c.crash ? RGB.red : draw.fault}" stroke-width="2"><title>${xml((c.crash ? "crash: " : "fault: ") + c.labels.join("; ") + more)}</title></line>`);
  }
  for (const ki of series) {
    const pts = [];
    counts[ki].forEach((c, b) => pts.push(`${(TL.L + ((b + 0.5) / n) * (TL.R - TL.L)).toFixed(1)},${yOf(c).toFixed(1)}`));
    out.push(`<polyline fill="none" stroke="${draw.kind_colors[ki]}" stroke-width="2" points="${pts.join(" ")}"/>`);
  }
  let y = TL.T;
  for (const ki of series) {
    out.push(`<line x1="${TL.LEGEND}" x2="${TL.LEGEND + 22}" y1="${y}" y2="${y}" stroke="${draw.kind_colors[ki]}" stroke-width="3"/>`);
    text(TL.LEGEND + 28, y, `${page.kinds[ki]}  ${totals[ki]}`, 11, RGB.ink);
    y += 16;
  }
  const crashes = markers.filter((m) => m.crash).length;
  tl.crashes = crashes;
  text(TL.LEGEND + 28, y + 6, `crash  ${crashes}`, 11, RGB.red);
  text(TL.LEGEND + 28, y + 22, `fault  ${markers.length - crashes}`, 11, draw.fault);
  out.push(`<rect id="brush" x="0" y="${TL.T}" width="0" height="${TL.B - TL.T}" fill="rgba(30,90,200,0.15)" stroke="none"/>`);
  host.innerHTML = `<svg width="${TL.W}" height="${H}" viewBox="0 0 ${TL.W} ${H}" xmlns="http://www.w3.org/2000/svg">${out.join("")}</svg>`;
  note.textContent = `${events} events from ${(from / 1e9).toFixed(3)} s to ${(to / 1e9).toFixed(3)} s, ` +
    `${n} buckets of ${(span / n / 1e6).toFixed(3)} ms; crashes: ${crashes}, faults: ${markers.length - crashes}. ` +
    "Drag across the plot to zoom into a time range; hover a red or purple rule for its crash or fault.";
  document.getElementById("tl-from").value = (from / 1e9).toFixed(6);
  document.getElementById("tl-to").value = (to / 1e9).toFixed(6);
  brush(host.querySelector("svg"));
}
function brush(svg) {
  const rect = svg.querySelector("#brush");
  let x0 = null;
  const xAt = (e) => { const b = svg.getBoundingClientRect(); return Math.min(TL.R, Math.max(TL.L, (e.clientX - b.left) * TL.W / b.width)); };
  svg.addEventListener("mousedown", (e) => { x0 = xAt(e); rect.setAttribute("x", x0); rect.setAttribute("width", 0); });
  svg.addEventListener("mousemove", (e) => {
    if (x0 === null) return;
    const x1 = xAt(e);
    rect.setAttribute("x", Math.min(x0, x1)); rect.setAttribute("width", Math.abs(x1 - x0));
  });
  svg.addEventListener("mouseup", (e) => {
    if (x0 === null) return;
    const x1 = xAt(e), a = Math.min(x0, x1), b = Math.max(x0, x1);
    x0 = null;
    if (b - a < 3) { rect.setAttribute("width", 0); return; }
    const t = (x) => tl.from + (x - TL.L) / (TL.R - TL.L) * (tl.to - tl.from);
    zoom(t(a), t(b));
  });
}
function zoom(from, to) {
  tl.from = Math.max(tl.start, Math.min(from, to));
  tl.to = Math.min(tl.end, Math.max(from, to));
  if (tl.to <= tl.from) tl.to = tl.from + 1;
  drawTimeline();
}
function timeline() {
  const controls = document.getElementById("timeline-controls");
  const pick = el("select", { id: "tl-run", onchange: () => openRun(runs[Number(pick.value)]) },
    ...runs.map((r, i) => el("option", { value: String(i) }, `run ${r.id} (${r.scenes.length} scenario(s))`)));
  const from = el("input", { id: "tl-from", type: "number", step: "any" });
  const to = el("input", { id: "tl-to", type: "number", step: "any" });
  controls.append(pick, " from ", from, " s to ", to, " s ",
    el("button", { type: "button", id: "tl-zoom", onclick: () => zoom(Number(from.value) * 1e9, Number(to.value) * 1e9) }, "zoom"),
    el("button", { type: "button", id: "tl-reset", onclick: () => zoom(tl.start, tl.end) }, "whole run"));
  if (runs.length) openRun(runs[0]);
}
function openRun(run) {
  let start = Infinity, end = -Infinity;
  for (const si of run.scenes) {
    const S = rowsOf(si);
    if (!S) continue;
    for (let i = 0; i < S.n; i++) { const t = S.ts[i]; if (t < start) start = t; if (t > end) end = t; }
  }
  if (start === Infinity) { start = 0; end = 1; }
  tl = { run, start, end, from: start, to: end };
  drawTimeline();
}
