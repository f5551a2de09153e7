// The report's page: chains. A chain not drawn in advance is selected from the embedded rows,
// laid out and drawn here as analyzer/src/views/chain.rs, render/layout.rs and render/mod.rs
// (chain_figure) do, with their measures, step looks and colours from `draw`; the browser test
// (compareDrawn) holds the two to the same texts.

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
const { max_steps: MAX_STEPS, lane_gap: LANE_GAP, left: LEFT, right: RIGHT, row: ROW, gap_row: GAP_ROW,
  top: TOP, gap_ns: GAP_NS, char_w: CHAR_W } = draw.layout;
function role(actor) {
  const at = actor.lastIndexOf("-");
  if (at >= 0 && /^[0-9]*$/.test(actor.slice(at + 1))) return actor.slice(0, at);
  return actor;
}
function rank(actor) {
  const r = draw.lane_order.indexOf(role(actor));
  return r < 0 ? draw.lane_order.length : r;
}
function fit(text, px) {
  const max = Math.max(Math.trunc(px / CHAR_W), 4);
  const chars = [...text];
  if (chars.length <= max) return text;
  return chars.slice(0, max - 1).join("") + "…";
}
const secs = (ns) => (ns / 1e9).toFixed(2) + " s";
// The values a label shows after its words (Shown in render/steps.rs), null where the row has none.
const SHOWN = { rev: (S, i) => num(S.store_rev[i]), position, attempt: (S, i) => num(S.attempt[i]),
  count: (S, i) => num(S.attempt[i]), counter: (S, i) => num(S.counter[i]), amount: (S, i) => num(S.amount[i]) };
const PREFIX = Object.fromEntries(draw.shown);
// Row i's step as its kind's look says, on the lanes of `parties` ({ own, broker, api, receiver }):
// [shape, label, tone]. A crash, restart or fault is labelled from its row.
function describe(S, i, parties) {
  const look = draw.steps[S.kind[i]], form = look.form;
  const shape = form === "crash" ? { crash: parties.own } : form === "restart" ? { restart: parties.own }
    : form.note !== undefined ? { note: parties[form.note] }
      : { arrow: true, from: parties[form.arrow[0]], to: parties[form.arrow[1]] };
  const note = S.notes.get(i) || "?";
  let label = look.words;
  switch (S.kind[i]) {
    case KIND.crash: label = `crash #${incOf(S, i)}: ${note.slice(note.indexOf(":") + 1)}`; break;
    case KIND.restart: label = `restart: ${actorOf(S, i)}#${incOf(S, i)}`; break;
    case KIND.fault: label = "fault: " + note; break;
    default:
      for (const c of look.shown) {
        const v = SHOWN[c](S, i);
        if (v !== null) label += PREFIX[c] + (c === "amount" && v >= 0 ? "+" : "") + v;
      }
  }
  const retry = S.kind[i] === KIND.publish_attempt && (num(S.attempt[i]) ?? 1) > 1;
  return [shape, label, retry ? "retry" : look.tone];
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
      Object.is(S.broker_seq[r], S.broker_seq[next]) && S.partition.get(r) === S.partition.get(next)) {
      d = r; break;
    }
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
    const [shape, label, tone] = describe(S, i, { own: laneOf(actorOf(S, i)), broker, api, receiver });
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
const RGB = draw.colors, TONE = draw.tones;
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
