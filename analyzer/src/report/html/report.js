// The report's page: lists, chains and the timeline from the embedded data. Plain JavaScript, no
// library, nothing fetched. Chains not drawn in advance are laid out and drawn here exactly as
// analyzer/src/render/layout.rs and render/mod.rs (chain_figure) do; keep the two in step.
"use strict";
(function () {
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
      notes: new Map(r.notes), entryIds: r.entry_ids || [], lifeFirst: new Int32Array(r.lives.length).fill(-1),
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
  // A broker position: below zero, a Redis Stream entry id kept aside (see page.rs).
  const position = (S, i) => { const v = num(S.broker_seq[i]); return v !== null && v < 0 ? S.entryIds[-1 - v] : v; };

  // ---- chains: selection (as analyzer/src/views/chain.rs) ---------------------------------------------
  const NOT_DRAWN = new Set([KIND.observed, KIND.run_start, KIND.run_end]);
  function withLives(S, rows) {
    const set = new Set(rows);
    const lives = new Set(rows.map((i) => S.life[i]));
    for (const l of lives) {
      for (const i of [S.lifeFirst[l], S.lifeLast[l]]) {
        if (i >= 0 && (S.kind[i] === KIND.crash || S.kind[i] === KIND.restart)) set.add(i);
      }
    }
    return [...set].sort((a, b) => a - b);
  }
  // The rows carrying `id` in column `key`, with (for tasks and aggregates) every row of their
  // events; null when none does.
  function chainOf(S, key, id, what) {
    const col = S[key];
    const own = [];
    for (let i = 0; i < S.n; i++) if (col[i] === id) own.push(i);
    if (!own.length) return null;
    let rows = own;
    if (key !== "event") {
      const events = new Set();
      for (const i of own) if (S.event[i] >= 0) events.add(S.event[i]);
      if (events.size) {
        const set = new Set(own);
        for (let i = 0; i < S.n; i++) if (events.has(S.event[i])) set.add(i);
        rows = [...set].sort((a, b) => a - b);
      }
    }
    rows = rows.filter((i) => !NOT_DRAWN.has(S.kind[i]));
    return { S, title: `${scenarioName(S.si)} · ${what} ${page.names[id]}`, rows: withLives(S, rows),
      marked: new Set(), note: null };
  }

  // ---- chains: layout (as analyzer/src/render/layout.rs) ----------------------------------------
  const MAX_STEPS = 40, LANE_GAP = 200, LEFT = 140, RIGHT = 280, ROW = 30, GAP_ROW = 36, TOP = 96;
  const GAP_NS = 500000000, CHAR_W = 7;
  function role(actor) {
    const at = actor.lastIndexOf("-");
    if (at >= 0 && /^[0-9]*$/.test(actor.slice(at + 1))) return actor.slice(0, at);
    return actor;
  }
  function rank(actor) {
    const r = { api: 0, relay: 1, broker: 2, worker: 3, receiver: 4 }[role(actor)];
    return r === undefined ? 5 : r;
  }
  function fit(text, px) {
    const max = Math.max(Math.trunc(px / CHAR_W), 4);
    const chars = [...text];
    if (chars.length <= max) return text;
    return chars.slice(0, max - 1).join("") + "…";
  }
  const opt = (prefix, v) => (v === null ? "" : prefix + v);
  const signed = (v) => (v === null ? "" : (v < 0 ? " " : " +") + v);
  const secs = (ns) => (ns / 1e9).toFixed(2) + " s";
  function describe(S, i, own, broker, api, receiver) {
    const arrow = (from, to) => ({ arrow: true, from, to });
    const note = { note: own };
    const rev = opt(" · rev ", num(S.store_rev[i]));
    const bseq = opt(" seq ", position(S, i));
    const attempt = num(S.attempt[i]);
    const att = opt(" #", attempt);
    const point = (p) => { const at = p.indexOf(":"); return at >= 0 ? p.slice(at + 1) : p; };
    switch (S.kind[i]) {
      case KIND.task_accepted: return [note, "task accepted" + rev, "plain"];
      case KIND.intent_recorded: return [note, "intent recorded" + rev, "plain"];
      case KIND.publish_attempt:
        return [arrow(own, broker), "publish" + att, (attempt === null ? 1 : attempt) > 1 ? "retry" : "plain"];
      case KIND.publish_acked: return [arrow(broker, own), "publish ACK" + bseq + att, "plain"];
      case KIND.publish_unacked: return [arrow(broker, own), "publish ACK lost" + att, "loss"];
      case KIND.publish_failed: return [arrow(own, broker), "publish failed", "loss"];
      case KIND.outbox_marked: return [arrow(own, api), "mark published" + rev, "plain"];
      case KIND.delivered: return [arrow(broker, own), "deliver" + bseq + opt(" · count ", attempt), "plain"];
      case KIND.redelivered: return [arrow(broker, own), "redeliver" + bseq + opt(" · count ", attempt), "retry"];
      case KIND.effect_committed:
        return [arrow(own, api), "commit" + rev + opt(" · counter ", num(S.counter[i])) +
          signed(num(S.amount[i])), "effect"];
      case KIND.duplicate_suppressed: return [arrow(own, api), "dedup key found: suppressed", "absorbed"];
      case KIND.commit_conflict: return [arrow(own, api), "commit conflict: retry", "loss"];
      case KIND.acked: return [arrow(own, broker), "ACK" + bseq, "plain"];
      case KIND.external_request: return [arrow(own, receiver), "call, key = event" + att, "plain"];
      case KIND.external_applied: return [note, "applied: paid", "effect"];
      case KIND.external_replayed: return [note, "key seen: replayed, not paid", "absorbed"];
      case KIND.crash: {
        const p = S.notes.get(i) || "?";
        return [{ crash: own }, `crash #${incOf(S, i)}: ${point(p || "?")}`, "loss"];
      }
      case KIND.restart: return [{ restart: own }, `restart: ${actorOf(S, i)}#${incOf(S, i)}`, "retry"];
      case KIND.fault: return [{ note: broker }, "fault: " + (S.notes.get(i) || "?"), "loss"];
      default: return [note, page.kinds[S.kind[i]], "plain"];
    }
  }
  function gapLabel(chain, p, next) {
    const S = chain.S;
    const quiet = secs(S.ts[next] - S.ts[p]);
    if (S.kind[next] !== KIND.redelivered) return quiet + " pass";
    const ms = page.scenarios[S.si].ack_wait_ms;
    const wait = ms === null || ms === undefined ? "" : `AckWait ${ms} ms: `;
    const isDelivery = (i) => S.kind[i] === KIND.delivered || S.kind[i] === KIND.redelivered;
    let d = -1;
    for (let k = chain.rows.length - 1; k >= 0; k--) {
      const r = chain.rows[k];
      if (S.seq[r] < S.seq[next] && isDelivery(r) && S.event[r] === S.event[next] &&
        Object.is(S.broker_seq[r], S.broker_seq[next])) { d = r; break; }
    }
    if (d >= 0) return `${wait}no ACK, redelivered ${secs(S.ts[next] - S.ts[d])} after the delivery (${quiet} quiet)`;
    return `${wait}no ACK, redelivered after ${quiet} quiet`;
  }
  function layout(chain) {
    const S = chain.S;
    const receiverName = page.scenarios[S.si].receiver;
    const keys = new Map();
    const add = (r, k) => keys.set(r + "\u0000" + k, [r, k]);
    for (const a of ["api", "relay", "broker", "worker"]) add(rank(a), a);
    for (const i of chain.rows) {
      add(rank(actorOf(S, i)), actorOf(S, i));
      if (S.kind[i] === KIND.external_request) add(4, receiverName);
    }
    const order = [...keys.values()].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    const lanesKeys = order.map((x) => x[1]);
    const laneOf = (actor) => Math.max(0, lanesKeys.indexOf(actor));
    const broker = laneOf("broker"), api = laneOf("api"), receiver = laneOf(receiverName);
    const lanes = lanesKeys.map((k, i) => ({ key: k, title: k === "api" ? "api + store" : k,
      x: LEFT + i * LANE_GAP, segments: [] }));
    const shown = Math.min(chain.rows.length, MAX_STEPS);
    const steps = [], gaps = [];
    let y = TOP, prev = -1;
    for (let k = 0; k < shown; k++) {
      const i = chain.rows[k];
      if (prev >= 0 && S.ts[i] - S.ts[prev] >= GAP_NS) {
        gaps.push({ y0: y - ROW / 2, y1: y - ROW / 2 + GAP_ROW, label: gapLabel(chain, prev, i) });
        y += GAP_ROW;
      }
      const [shape, label, tone] = describe(S, i, laneOf(actorOf(S, i)), broker, api, receiver);
      steps.push({ row: i, seq: S.seq[i], ms: Math.floor(S.ts[i] / 1e6), y, shape, label, tone,
        marked: chain.marked.has(S.seq[i]) });
      prev = i;
      y += ROW;
    }
    const bottom = y;
    // Lanes wide enough apart for every arrow's label, a canvas for every mark's (as layout.rs).
    const px = (label) => [...label].length * CHAR_W;
    let gap = LANE_GAP;
    for (const s of steps) {
      if (!s.shape.arrow) continue;
      const span = Math.max(1, Math.abs(s.shape.from - s.shape.to));
      gap = Math.max(gap, Math.floor((px(s.label) + 12 + span - 1) / span));
    }
    lanes.forEach((lane, i) => { lane.x = LEFT + i * gap; });
    const yOf = new Map(steps.map((s) => [s.row, s.y]));
    for (const lane of lanes) {
      const lives = [...new Set(chain.rows.filter((i) => actorOf(S, i) === lane.key && yOf.has(i))
        .map((i) => incOf(S, i)))].sort((a, b) => a - b);
      if (!lives.length) { lane.segments.push({ inc: 0, y0: TOP - 20, y1: bottom }); continue; }
      for (const inc of lives) {
        const ofLife = (kind) => {
          const i = chain.rows.find((r) => actorOf(S, r) === lane.key && incOf(S, r) === inc && S.kind[r] === kind);
          return i === undefined ? undefined : yOf.get(i);
        };
        const restart = ofLife(KIND.restart), crash = ofLife(KIND.crash);
        lane.segments.push({ inc, y0: restart === undefined ? TOP - 20 : restart,
          y1: crash === undefined ? bottom : crash });
      }
    }
    let width = LEFT + (lanes.length - 1) * gap + RIGHT;
    for (const s of steps) {
      if (s.shape.arrow) continue;
      width = Math.max(width, lanes[s.shape.note ?? s.shape.crash ?? s.shape.restart].x + 24 + px(s.label));
    }
    for (const s of steps) {
      const room = s.shape.arrow ? Math.abs(lanes[s.shape.from].x - lanes[s.shape.to].x) - 12
        : width - lanes[s.shape.note ?? s.shape.crash ?? s.shape.restart].x - 24;
      s.fitted = fit(s.label, room);
    }
    for (const g of gaps) g.label = fit(g.label, width - LEFT);
    return { title: fit(chain.title, width - 40), fullTitle: chain.title,
      note: chain.note === null ? null : fit(chain.note, width * 2 - 40), width,
      height: bottom + (chain.rows.length > shown ? 40 : 16), lanes, steps, gaps,
      hidden: chain.rows.length - shown };
  }

  // ---- chains: drawing (as chain_figure in analyzer/src/render/mod.rs) --------------------------
  const RGB = { ink: "#1E1E1E", grey: "#969696", pale: "#EEEEEE", green: "#148232", blue: "#1E5AC8",
    orange: "#CD6E00", red: "#C81E1E", highlight: "#FFECA0" };
  const TONE = { plain: RGB.ink, effect: RGB.green, absorbed: RGB.blue, retry: RGB.orange, loss: RGB.red };
  function svgOf(l) {
    const out = [];
    const text = (x, y, t, size, color, anchor) => out.push(
      `<text x="${x}" y="${y}" dy="0.5ex" text-anchor="${anchor || "start"}" font-family="sans-serif" ` +
      `font-size="${(size * 0.806).toFixed(2)}" fill="${color}">${xml(t)}</text>`);
    const line = (x0, y0, x1, y1, color, w, dashed) => out.push(
      `<polyline fill="none" stroke="${color}" stroke-width="${w}"${dashed ? ' stroke-dasharray="6 6"' : ""} ` +
      `points="${x0},${y0} ${x1},${y1}"/>`);
    const rect = (x0, y0, x1, y1, fill, stroke) => out.push(
      `<rect x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" fill="${fill}"` +
      `${stroke ? ` stroke="${stroke}" stroke-width="2"` : ' stroke="none"'}/>`);
    rect(0, 0, l.width, l.height, "#FFFFFF");
    text(20, 20, l.title, 16, RGB.ink);
    if (l.note !== null) text(20, 42, l.note, 11, RGB.red);
    for (const s of l.steps) if (s.marked) rect(4, s.y - ROW / 2, l.width - 4, s.y + ROW / 2, RGB.highlight);
    for (const g of l.gaps) {
      rect(4, g.y0 + 3, l.width - 4, g.y1 - 3, RGB.pale);
      text(LEFT - 30, Math.trunc((g.y0 + g.y1) / 2), g.label, 11, RGB.orange);
    }
    for (const lane of l.lanes) {
      text(lane.x, 66, lane.title, 13, RGB.ink, "middle");
      for (const seg of lane.segments) {
        line(lane.x, seg.y0, lane.x, seg.y1, RGB.grey, 2, false);
        if (seg.inc > 0 || lane.segments.length > 1) text(lane.x + 4, seg.y0 + 8, "#" + seg.inc, 10, RGB.grey);
      }
    }
    for (const s of l.steps) {
      const color = TONE[s.tone];
      const ms = s.ms;
      // As Rust's format!("{:>5}  {} s", seq, seconds(ms)): the sign before the whole.
      const abs = Math.abs(ms);
      const stamp = String(s.seq).padStart(5, " ") + "  " + (ms < 0 ? "-" : "") +
        String(Math.trunc(abs / 1000)) + "." + String(abs % 1000).padStart(3, "0") + " s";
      text(8, s.y, stamp, 10, RGB.grey);
      const sh = s.shape;
      if (sh.arrow) {
        const x0 = l.lanes[sh.from].x, x1 = l.lanes[sh.to].x, y = s.y + 6;
        line(x0, y, x1, y, color, 2, s.tone === "loss");
        const d = x1 >= x0 ? -9 : 9;
        out.push(`<polygon fill="${color}" points="${x1},${y} ${x1 + d},${y - 5} ${x1 + d},${y + 5}"/>`);
        text(Math.trunc((x0 + x1) / 2), s.y - 5, s.fitted, 12, color, "middle");
      } else if (sh.note !== undefined) {
        const x = l.lanes[sh.note].x;
        rect(x - 5, s.y - 5, x + 5, s.y + 5, "#FFFFFF", color);
        text(x + 10, s.y, s.fitted, 12, color);
      } else if (sh.crash !== undefined) {
        const x = l.lanes[sh.crash].x;
        line(x - 8, s.y - 8, x + 8, s.y + 8, RGB.red, 3, false);
        line(x - 8, s.y + 8, x + 8, s.y - 8, RGB.red, 3, false);
        text(x + 12, s.y, s.fitted, 12, RGB.red);
      } else {
        const x = l.lanes[sh.restart].x;
        line(x - 10, s.y, x + 10, s.y, RGB.orange, 3, false);
        text(x + 12, s.y, s.fitted, 12, RGB.orange);
      }
    }
    if (l.hidden > 0) text(Math.trunc(l.width / 2), l.height - 20, `${l.hidden} more events not shown`, 12, RGB.red, "middle");
    return `<svg width="${l.width}" height="${l.height}" viewBox="0 0 ${l.width} ${l.height}" ` +
      `xmlns="http://www.w3.org/2000/svg"><title>${xml(l.fullTitle)}</title>${out.join("")}</svg>`;
  }
  // A chain drawn in advance, with its whole title as the picture's <title>.
  function drawnSvg(d) {
    const at = d.svg.indexOf(">", d.svg.indexOf("<svg"));
    return d.svg.slice(0, at + 1) + `<title>${xml(d.title)}</title>` + d.svg.slice(at + 1);
  }

  // ---- the chain view ----------------------------------------------------------------------------
  const chainView = document.getElementById("chain");
  const status = document.getElementById("chain-status");
  function show(figures, message) {
    chainView.replaceChildren(...figures);
    status.textContent = message;
  }
  function figureOf(svg, caption, extra) {
    const f = el("figure");
    f.innerHTML = svg;
    f.append(el("figcaption", {}, caption));
    if (extra) f.append(extra);
    return f;
  }
  function showViolation(n) {
    const v = page.violations[n - 1];
    if (!v) { show([], `There is no violation ${n}: the check kept ${page.violations.length}.`); return; }
    for (const li of document.querySelectorAll("#violations li")) {
      const current = li.dataset.violation === String(n);
      li.classList.toggle("current", current);
      if (current) {
        const list = document.getElementById("violations-section");
        list.scrollTop = li.offsetTop - list.offsetTop - 40;
      }
    }
    const d = page.drawn[v.drawn];
    const witness = el("pre", {}, "witness rows (marked):\n" + v.witness.join("\n"));
    show([figureOf(drawnSvg(d), `violation ${n}: ${v.invariant} in ${scenarioName(v.scene)} — ${v.text}`, witness)],
      `Violation ${n}: the witness chain of ${v.event || v.task || "the run"}, witness rows marked.`);
  }
  // Every chain of `name` (task, event or aggregate id) in every scenario: drawn in advance when it
  // was, else laid out here from the embedded rows.
  function chainsOf(name) {
    const figures = [];
    const id = nameId(name);
    page.scenarios.forEach((sc, si) => {
      const pre = page.drawn.find((d) => d.scene === si && d.what === "task" && d.id === name);
      if (pre) { figures.push(figureOf(drawnSvg(pre), `${sc.scenario}: task ${name} (drawn in advance)`)); return; }
      if (id < 0) return;
      const S = rowsOf(si);
      if (!S) return;
      for (const [key, what] of [["task", "task"], ["event", "event"], ["aggregate", "aggregate"]]) {
        const c = chainOf(S, key, id, what);
        if (c) { figures.push(figureOf(svgOf(layout(c)), `${sc.scenario}: ${what} ${name} (${c.rows.length} rows)`)); return; }
      }
    });
    return figures;
  }
  function showId(name) {
    const figures = chainsOf(name);
    if (figures.length) show(figures, `The chain of ${name}` + (figures.length > 1 ? ` in ${figures.length} scenarios.` : "."));
    else show([], `No task, event or aggregate is named ${name}.` + (page.caps.rows_embedded < page.caps.rows_total
      ? " (Some scenarios' rows are not embedded: see below.)" : ""));
    return figures.length > 0;
  }

  // ---- the filter ---------------------------------------------------------------------------------
  const filter = document.getElementById("filter");
  const suggest = document.getElementById("suggest");
  function suggestions(text) {
    suggest.replaceChildren();
    if (!text) return;
    const out = [];
    for (const n of page.names) {
      if (n.startsWith(text) && n !== text) { out.push(n); if (out.length === 8) break; }
    }
    for (const n of out) {
      suggest.append(el("button", { type: "button", onclick: () => { filter.value = n; apply(true); } }, n));
    }
  }
  function apply(commit) {
    const text = filter.value.trim();
    if (!text) { suggest.replaceChildren(); return; }
    const found = showId(text);
    suggestions(found ? "" : text);
    if (found && commit) history.replaceState(null, "", "#id=" + encodeURIComponent(text));
  }
  filter.addEventListener("input", () => apply(false));
  filter.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(true); });

  // ---- scenarios and violations -----------------------------------------------------------------
  function summary() {
    document.getElementById("traces").textContent = "Trace: " + page.traces.join(", ");
    const figs = [["tasks", "tasks"], ["publish_attempts", "publish attempts"], ["publish_acks_lost", "publish ACKs lost"],
      ["stream_copies", "stream copies"], ["stream_messages", "stream messages"], ["deliveries", "deliveries"],
      ["redeliveries", "redeliveries"], ["suppressions", "suppressions"], ["effects", "effects"], ["acks", "ACKs"],
      ["crashes", "crashes"], ["conflicts", "conflicts"], ["counter", "counter"], ["results", "results"],
      ["dedup_keys", "dedup keys"], ["outbox_pending", "outbox pending"]];
    const brief = ["tasks", "effects", "redeliveries", "suppressions", "crashes", "counter"];
    const table = el("table", {}, el("tr", {}, ...["scenario", "run", "backend", "verdict", "not passed", "events", ...brief]
      .map((h) => el("th", {}, h))));
    const details = document.getElementById("details");
    page.scenarios.forEach((s, si) => {
      const off = s.invariants.filter((i) => i.verdict !== "pass")
        .map((i) => el("span", { class: "verdict-" + i.verdict }, `${i.id} (${i.verdict}) `));
      table.append(el("tr", {}, el("td", {}, el("a", { href: "#scenario-" + si, onclick: () => { box.open = true; } }, s.scenario)),
        el("td", {}, s.run_id), el("td", {}, s.backend + (s.protocol ? " · " + s.protocol : "")),
        el("td", { class: "verdict-" + s.verdict }, s.verdict), el("td", {}, ...(off.length ? off : ["-"])),
        el("td", { class: "num" }, String(s.rows)), ...brief.map((k) => el("td", { class: "num" }, fmtInt(s.figures[k])))));
      const inv = el("table", {}, el("tr", {}, el("th", {}, "invariant"), el("th", {}, "class"),
        el("th", {}, "verdict"), el("th", {}, "violations"), el("th", {}, "reason")));
      for (const i of s.invariants) {
        inv.append(el("tr", {}, el("td", {}, i.id), el("td", {}, i.class),
          el("td", { class: "verdict-" + i.verdict }, i.verdict), el("td", { class: "num" }, String(i.violations)),
          el("td", {}, i.reason || "")));
      }
      const fig = el("table", {}, el("tr", {}, el("th", {}, "figure"), el("th", {}, "value")));
      for (const [k, name] of figs) {
        const v = s.figures[k];
        if (v === null || v === undefined) continue;
        fig.append(el("tr", {}, el("td", {}, name), el("td", { class: "num" }, fmtInt(v))));
      }
      const box = el("details", { class: "scenario", id: "scenario-" + si },
        el("summary", {}, `${s.scenario} `, el("span", { class: "verdict-" + s.verdict }, s.verdict),
          el("span", { class: "muted" }, ` · run ${s.run_id} · ${s.backend}` + (s.protocol ? ` · protocol ${s.protocol}` : "") +
            ` · ${s.rows} events` + (s.recovered === null ? "" : s.recovered ? " · recovered" : " · not recovered"))),
        el("div", { class: "tables" }, inv, fig));
      details.append(box);
    });
    document.getElementById("scenarios").append(table);
  }
  function violationList() {
    const list = document.getElementById("violations");
    const note = document.getElementById("violations-note");
    if (!page.violations.length) { note.textContent = "No invariant failed: no violation to show."; return; }
    note.textContent = `${page.violations.length} violation(s), numbered as analyzer chain --violation N numbers them.` +
      " Click one to see its witness chain.";
    for (const v of page.violations) {
      list.append(el("li", { "data-violation": String(v.number),
        "data-event": v.event, "data-task": v.task,
        onclick: () => { location.hash = "violation-" + v.number; showViolation(v.number); } },
      el("div", { class: "head" }, `${v.number}. ${v.invariant} `, el("span", { class: "muted" }, "in " + scenarioName(v.scene))),
      el("div", { class: "who" }, [v.event ? "event " + v.event : null, v.task ? "task " + v.task : null].filter(Boolean).join(" · ")),
      el("div", { class: "text" }, v.text)));
    }
  }
  function caps() {
    const c = page.caps;
    const items = [
      `Chains drawn in advance: the witness chain of every violation kept, and the ${c.eventful} most eventful tasks of each scenario. Any other task, event or aggregate is drawn here from the embedded rows.`,
      `A chain shows at most ${c.steps} steps; the rest are counted ("N more events not shown").`,
      `The check keeps ${c.examples} violations per invariant and scenario` +
        (c.violations_not_kept ? `; ${c.violations_not_kept} more were counted but not kept.` : "; none was left out here."),
      c.rows_embedded < c.rows_total
        ? `Rows embedded: ${c.rows_embedded} of ${c.rows_total} (at most ${c.max_rows}). Without their rows, ` +
          page.scenarios.map((s, i) => (document.getElementById("rows-" + i) ? null : `${s.scenario} (run ${s.run_id})`))
            .filter(Boolean).join(", ") + " show only the chains drawn in advance and no timeline."
        : `Rows embedded: all ${c.rows_total}.`,
    ];
    if (c.scenarios_embedded < c.scenarios_total) {
      items.push(`Scenarios embedded: the first ${c.scenarios_embedded} of ${c.scenarios_total} (at most ${c.max_scenarios}); ` +
        `the others are left out here; analyzer check lists every scenario.`);
    }
    document.getElementById("caps").replaceChildren(...items.map((t) => el("li", {}, t)));
  }

  // ---- the timeline -------------------------------------------------------------------------------
  const TL = { W: 1200, L: 70, R: 900, T: 40, B: 300, LEGEND: 925, BUCKETS: 120 };
  const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
    "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#b5cf6b", "#e7ba52",
    "#d6616b", "#ce6dbd", "#6b6ecf"];
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
    const n = TL.BUCKETS;
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
      out.push(`<line class="${c.crash ? "crash" : "fault"}" x1="${c.x}" x2="${c.x}" y1="${TL.T}" y2="${TL.B}" stroke="${c.crash ? RGB.red : "#8232BE"}" stroke-width="2"><title>${xml((c.crash ? "crash: " : "fault: ") + c.labels.join("; ") + more)}</title></line>`);
    }
    for (const ki of series) {
      const pts = [];
      counts[ki].forEach((c, b) => pts.push(`${(TL.L + ((b + 0.5) / n) * (TL.R - TL.L)).toFixed(1)},${yOf(c).toFixed(1)}`));
      out.push(`<polyline fill="none" stroke="${PALETTE[ki % PALETTE.length]}" stroke-width="2" points="${pts.join(" ")}"/>`);
    }
    let y = TL.T;
    for (const ki of series) {
      out.push(`<line x1="${TL.LEGEND}" x2="${TL.LEGEND + 22}" y1="${y}" y2="${y}" stroke="${PALETTE[ki % PALETTE.length]}" stroke-width="3"/>`);
      text(TL.LEGEND + 28, y, `${page.kinds[ki]}  ${totals[ki]}`, 11, RGB.ink);
      y += 16;
    }
    const crashes = markers.filter((m) => m.crash).length;
    tl.crashes = crashes;
    text(TL.LEGEND + 28, y + 6, `crash  ${crashes}`, 11, RGB.red);
    text(TL.LEGEND + 28, y + 22, `fault  ${markers.length - crashes}`, 11, "#8232BE");
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

  // ---- hooks for the browser test -----------------------------------------------------------------
  const textsOf = (svg) => [...new DOMParser().parseFromString(svg, "image/svg+xml").querySelectorAll("text")]
    .map((t) => t.textContent.trim());
  window.outboxReport = {
    // Milliseconds from navigation: lists built, timeline drawn (read by scripts/bench-html.sh).
    marks: {},
    // Draws every task chain drawn in advance again from the embedded rows and compares the texts.
    compareDrawn() {
      let compared = 0;
      const differ = [];
      for (const d of page.drawn.filter((x) => x.what === "task")) {
        const S = rowsOf(d.scene);
        if (!S) continue;
        const c = chainOf(S, "task", nameId(d.id), "task");
        const [a, b] = [textsOf(d.svg), textsOf(svgOf(layout(c)))];
        compared++;
        const at = a.findIndex((t, i) => t !== b[i]);
        if (at >= 0 || a.length !== b.length) {
          const i = at >= 0 ? at : Math.min(a.length, b.length);
          differ.push({ title: d.title, first: `text ${i}: analyzer ${JSON.stringify(a[i])}, page ${JSON.stringify(b[i])}` });
        }
      }
      return { compared, differ };
    },
    // Crashes on the timeline of the whole first run, and the figures' count for its scenarios.
    timelineCrashes() {
      zoom(tl.start, tl.end);
      return { shown: tl.crashes, figures: tl.run.scenes.reduce((n, si) => n + page.scenarios[si].figures.crashes, 0) };
    },
  };

  // ---- start ----------------------------------------------------------------------------------------
  function fromHash() {
    const h = decodeURIComponent(location.hash.slice(1));
    const m = /^violation-(\d+)$/.exec(h);
    if (m) { showViolation(Number(m[1])); return; }
    if (h.startsWith("id=")) { filter.value = h.slice(3); apply(false); }
  }
  summary();
  violationList();
  caps();
  window.addEventListener("hashchange", fromHash);
  fromHash();
  window.outboxReport.marks.lists = performance.now();
  // The timeline reads every row: draw it after the lists' first paint.
  requestAnimationFrame(() => setTimeout(() => {
    timeline();
    window.outboxReport.marks.timeline = performance.now();
  }, 0));
})();
