// The report's page, first part: its data. The page's data and what the script draws with
// (analyzer/src/report/drawing.rs: the chain layout's measures, how each kind of step is drawn,
// the colours), parsed; the embedded rows, decoded on first use; small helpers. The parts
// (data.js, chain.js, timeline.js, page.js) run in that order as one function's body, in one
// scope (analyzer/src/report/html.rs puts them together). Plain JavaScript, no library, nothing
// fetched.
const draw = JSON.parse(document.getElementById("draw-data").textContent);
const page = JSON.parse(document.getElementById("page-data").textContent);
const KIND = {};
page.kinds.forEach((k, i) => { KIND[k] = i; });
const HAS = { task: 1, event: 2, aggregate: 4, attempt: 8, broker_seq: 16, store_rev: 32,
  amount: 64, counter: 128 };

// ---- small helpers ------------------------------------------------------------------------
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== undefined && k !== null) e.append(k);
  return e;
}
const xml = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
  .replace(/"/g, "&quot;");
const fmtInt = (n) => n === null || n === undefined ? "-" : String(n);
const scenarioName = (i) => page.scenarios[i].scenario;

// ---- the embedded rows, decoded on first use ------------------------------------------------
const decoded = [];
// Integers as analyzer/src/report/page.rs (Ints) writes them: zigzagged 5-bit digits, lowest first.
const DIGIT = new Int8Array(128).fill(-1);
[..."ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"].forEach((c, i) => { DIGIT[c.charCodeAt(0)] = i; });
function ints(text) {
  const out = new Float64Array(text.length);
  let n = 0, acc = 0, scale = 1;
  for (let i = 0; i < text.length; i++) {
    const d = DIGIT[text.charCodeAt(i)];
    if (d >= 32) { acc += (d - 32) * scale; scale *= 32; continue; }
    acc += d * scale;
    out[n++] = acc % 2 === 1 ? -(acc + 1) / 2 : acc / 2;
    acc = 0; scale = 1;
  }
  return out.subarray(0, n);
}
function rowsOf(si) {
  if (decoded[si] !== undefined) return decoded[si];
  const node = document.getElementById("rows-" + si);
  if (!node) { decoded[si] = null; return null; }
  const r = JSON.parse(node.textContent);
  const life = ints(r.life), shape = ints(r.shape);
  const n = life.length;
  const S = { n, si, lives: r.lives, seq: new Float64Array(n), ts: new Float64Array(n),
    kind: new Uint8Array(n), life: Int32Array.from(life),
    task: new Int32Array(n).fill(-1), event: new Int32Array(n).fill(-1),
    aggregate: new Int32Array(n).fill(-1), attempt: new Float64Array(n).fill(NaN),
    broker_seq: new Float64Array(n).fill(NaN), store_rev: new Float64Array(n).fill(NaN),
    amount: new Float64Array(n).fill(NaN), counter: new Float64Array(n).fill(NaN),
    notes: new Map(r.notes), partition: new Map(r.partitions || []),
    entryIds: r.entry_ids || [], lifeFirst: new Int32Array(r.lives.length).fill(-1),
    lifeLast: new Int32Array(r.lives.length).fill(-1) };
  const cols = Object.keys(HAS);
  const values = {}, at = {}, last = {};
  for (const c of cols) { values[c] = ints(r[c]); at[c] = 0; last[c] = 0; }
  const dseq = ints(r.seq), dts = ints(r.ts);
  let seq = 0, ts = 0;
  for (let i = 0; i < n; i++) {
    seq += dseq[i]; ts += dts[i];
    S.seq[i] = seq; S.ts[i] = ts;
    const [kind, bits] = r.shapes[shape[i]];
    S.kind[i] = kind;
    if (bits) {
      for (const c of cols) {
        if (bits & HAS[c]) { last[c] += values[c][at[c]++]; S[c][i] = last[c]; }
      }
    }
    const l = S.life[i];
    if (S.lifeFirst[l] < 0) S.lifeFirst[l] = i;
    S.lifeLast[l] = i;
  }
  decoded[si] = S;
  return S;
}
let nameIndex = null;
function nameId(name) {
  if (!nameIndex) { nameIndex = new Map(); page.names.forEach((n, i) => nameIndex.set(n, i)); }
  const i = nameIndex.get(name);
  return i === undefined ? -1 : i;
}
const actorOf = (S, i) => page.names[S.lives[S.life[i]][0]];
const incOf = (S, i) => S.lives[S.life[i]][1];
const num = (v) => (Number.isNaN(v) ? null : v);
// A broker position: below zero, a Redis Stream entry id kept aside (see page.rs); within its
// partition `pP:` before it, where the row has one.
const position = (S, i) => {
  const v = num(S.broker_seq[i]);
  const at = v !== null && v < 0 ? S.entryIds[-1 - v] : v;
  const p = S.partition.get(i);
  return at === null || p === undefined ? at : `p${p}:${at}`;
};
