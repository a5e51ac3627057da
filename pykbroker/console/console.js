// The pykbroker console page: hash routes (#/, #/topics, #/topic/<name>/<tab>, #/groups, #/group/<id>,
// #/security), each view rendered from the JSON API. No framework, no build step.
"use strict";
const $ = (id) => document.getElementById(id);
const open = new Set();  // <details> kept open across refreshes
let session = null;      // {principal, login_required, write_enabled}
let last = null;         // the last /api/overview
let timer = null;        // the current view's polling timer
let tailing = null;      // {topic, positions} while the live tail runs
let shown = [];          // the records on the page (re-rendered when the decoding changes)
let flash = "";          // what the status bar says on the next page (a deletion's result, after leaving its page)

// -- helpers ------------------------------------------------------------------------------------------------
function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}
function num(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
// Remote (tiered) size of partitions: bytes where this broker's remote log metadata knows them, plus the
// records the leaders of the others say are remote (no Kafka request answers their remote bytes).
function remoteSize(parts) {
  const known = (v) => v !== null && v !== undefined;
  const sized = parts.filter((p) => known(p.remote_size)), counted = parts.filter((p) => !known(p.remote_size) && known(p.remote_records));
  if (!sized.length && !counted.length) return "–";
  const out = [];
  if (sized.length) out.push(bytes(sized.reduce((s, p) => s + p.remote_size, 0)));
  if (counted.length) out.push(`${num(counted.reduce((s, p) => s + p.remote_records, 0))} records`);
  return out.join(" + ");
}
function details(id, summary, body) {
  return `<details data-id="${esc(id)}"${open.has(id) ? " open" : ""}><summary>${summary}</summary>${body}</details>`;
}
function status(text, ok) {
  const s = $("status");
  s.hidden = !text; s.textContent = text || ""; s.className = ok ? "ok" : "";
}
function lines(text) {  // "a=b" lines -> [[a, b]]
  return text.split("\n").map((l) => l.trim()).filter(Boolean).map((l) => {
    const i = l.indexOf("="); return i < 0 ? [l, ""] : [l.slice(0, i).trim(), l.slice(i + 1)];
  });
}
class ApiError extends Error { constructor(status, body) { super(body.error || ("HTTP " + status)); this.status = status; this.body = body; } }
async function api(path, body) {
  const init = body === undefined ? {cache: "no-store"}
    : {method: "POST", cache: "no-store", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)};
  const r = await fetch("api/" + path, init);
  const data = r.headers.get("Content-Type") === "application/json" ? await r.json() : {error: await r.text()};
  if (r.status === 401 && session && session.login_required && path !== "login") { session.principal = null; route(); }
  if (!r.ok) throw new ApiError(r.status, data || {});
  return data;
}
// Run a write from a form: the answer or Kafka's refusal in ``where`` (or the status bar).
async function act(fn, where, done) {
  const out = where ? $(where) : null;
  if (out) { out.textContent = "…"; out.className = "muted"; }
  try {
    const result = await fn();
    if (out) { out.textContent = done ? done(result) : "done"; out.className = "okc"; } else status(done ? done(result) : "done", true);
    return result;
  } catch (e) {
    if (out) { out.textContent = e.message; out.className = "bad"; } else status(e.message);
    return undefined;
  }
}

// -- records: decoding for display ----------------------------------------------------------------------------
function b64bytes(s) { const bin = atob(s); const a = new Uint8Array(bin.length); for (let i = 0; i < bin.length; i++) a[i] = bin.charCodeAt(i); return a; }
const hex = (data) => esc(Array.from(data, (b) => b.toString(16).padStart(2, "0")).join(" "));
// Valid JSON text laid out again (compact, or indented as JSON.stringify(v, null, 2) does) with its strings and
// number literals as they are: parsing would round integers past 2^53 (an int64 id) and rewrite 1.0 as 1.
function jsonText(text, indented) {
  let out = "", depth = 0, i = 0;
  const line = () => (indented ? "\n" + "  ".repeat(depth) : "");
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1); i = j + 1;
    } else if (c === "{" || c === "[") {
      let j = i + 1;
      while (/\s/.test(text[j])) j++;
      if (text[j] === (c === "{" ? "}" : "]")) { out += c + text[j]; i = j + 1; continue; }
      depth++; out += c + line(); i++;
    } else if (c === "}" || c === "]") { depth--; out += line() + c; i++; }
    else if (c === ",") { out += "," + line(); i++; }
    else if (c === ":") { out += indented ? ": " : ":"; i++; }
    else { if (!/\s/.test(c)) out += c; i++; }
  }
  return out;
}
function decode(b64, mode) {
  if (b64 === null || b64 === undefined) return '<span class="muted">null</span>';
  const data = b64bytes(b64);
  if (mode === "hex") return hex(data);
  if (mode === "json" && data.length > 5 && data[0] === 0) {
    // Confluent's framing (magic byte 0, 4-byte schema id) without a registry to decode it (registryValue):
    // JSON Schema payloads are shown as JSON; Avro and Protobuf ones as bytes
    const id = new DataView(data.buffer, data.byteOffset).getInt32(1);
    const payload = data.subarray(5), tag = `<span class="tag schema">schema ${id}</span> `;
    try {
      const t = new TextDecoder("utf-8", {fatal: true}).decode(payload);
      JSON.parse(t);  // JSON, or shown as bytes
      return `<details><summary>${tag}${esc(jsonText(t, false))}</summary><pre>${esc(jsonText(t, true))}</pre></details>`;
    } catch (e) { return tag + hex(payload); }
  }
  const text = new TextDecoder("utf-8").decode(data);
  if (mode === "json") {
    try {
      JSON.parse(text);  // JSON, or shown as text
      return `<details><summary>${esc(jsonText(text, false))}</summary><pre>${esc(jsonText(text, true))}</pre></details>`;
    } catch (e) { /* not JSON: text */ }
  }
  return esc(text);
}
// A value the broker decoded through the schema registry (Avro, Protobuf, JSON Schema), or why it could not.
// The JSON text comes from the broker: exact where the browser's numbers are not (int64).
function registryValue(r, mode, field = "value") {
  if (mode !== "json") return null;
  const d = field === "key" ? r.key_decoded : r.decoded, error = field === "key" ? r.key_decode_error : r.decode_error;
  if (d) {
    const tag = `<span class="tag schema">schema ${d.schema_id} ${esc(d.schema_type)}</span> `;
    return `<details><summary>${tag}${esc(d.json)}</summary><pre>${esc(d.pretty)}</pre></details>`;
  }
  if (error && field === "value") return `<span class="tag bad" title="${esc(error)}">not decoded</span> ${decode(r[field], mode)}<div class="muted small decode-error">${esc(error)}</div>`;
  return null;
}
function recordRows(records, fresh) {
  const mode = $("decode").value;
  return records.map((r) => `<tr class="record${fresh ? " new" : ""}" data-partition="${r.partition}" data-offset="${r.offset}">
    <td class="num">${r.partition}</td><td class="num">${num(r.offset)}</td><td>${esc(new Date(r.timestamp).toISOString())}</td>
    <td class="value key">${registryValue(r, mode, "key") ?? decode(r.key, mode === "json" ? "text" : mode)}</td><td class="value val">${registryValue(r, mode) ?? decode(r.value, mode)}</td>
    <td class="value">${r.headers.map(([k, v]) => `${esc(k)}=${decode(v, "text")}`).join("<br>")}</td></tr>`).join("");
}
const RECORD_HEAD = '<tr><th class="num">partition</th><th class="num">offset</th><th>timestamp</th><th>key</th><th>value</th><th>headers</th></tr>';

// -- overview -------------------------------------------------------------------------------------------------
function renderBrokers(d) {
  const rows = d.brokers.map((b) => `<tr><td>${b.node_id}${b.this ? ' <span class="tag">this</span>' : ""}${b.controller ? ' <span class="tag ok">controller</span>' : ""}${(d.unavailable || []).includes(b.node_id) ? ' <span class="tag bad">not answering</span>' : ""}</td>
    <td>${b.endpoints.map(esc).join("<br>")}</td><td>${esc(b.rack ?? "–")}</td></tr>`).join("");
  $("brokers").innerHTML = `<tr><th>node id</th><th>endpoints</th><th>rack</th></tr>${rows}`;
}
function renderTopics(d) {
  const showInternal = $("internal").checked;
  const rows = d.topics.filter((t) => showInternal || !t.internal).map((t) => {
    const underReplicated = t.partitions.filter((p) => p.isr.length < p.replicas.length).length;
    const parts = `<table><tr><th class="num">partition</th><th class="num">leader</th><th>replicas</th><th>isr</th>
      <th class="num">log start</th><th class="num">log end</th><th class="num">high watermark</th><th class="num">size</th></tr>` +
      t.partitions.map((p) => `<tr><td class="num">${p.partition}</td><td class="num">${p.leader}</td><td>${p.replicas.join(", ")}</td>
      <td>${p.isr.join(", ")}${p.isr.length < p.replicas.length ? ' <span class="tag bad">under-replicated</span>' : ""}</td>
      <td class="num">${num(p.log_start_offset)}</td><td class="num">${num(p.log_end_offset)}</td><td class="num">${num(p.high_watermark)}</td>
      <td class="num">${bytes(p.size)}</td></tr>`).join("") + "</table>";
    const configs = Object.keys(t.configs).length
      ? "<table><tr><th>config (set on the topic)</th><th>value</th></tr>" +
        Object.entries(t.configs).map(([k, v]) => `<tr><td>${esc(k)}</td><td>${esc(v)}</td></tr>`).join("") + "</table>"
      : '<p class="muted">no configs set on the topic (broker defaults apply)</p>';
    return `<tr class="topic" data-topic="${esc(t.name)}"><td>${details("t:" + t.name, esc(t.name), `<p><a href="#/topic/${encodeURIComponent(t.name)}/messages">messages, partitions, configs →</a></p>` + parts + configs)}</td>
      <td class="num">${t.partitions.length}</td><td class="num messages">${num(t.messages)}</td><td class="num">${bytes(t.size)}</td>
      <td>${underReplicated ? `<span class="tag bad">${underReplicated} under-replicated</span>` : '<span class="tag ok">in sync</span>'}</td></tr>`;
  }).join("");
  $("topics").innerHTML = `<tr><th>topic</th><th class="num">partitions</th><th class="num">messages</th><th class="num">size</th><th>replicas</th></tr>${rows}`;
}
function renderIceberg(d) {
  if (!d.iceberg || !d.iceberg.length) { $("iceberg").innerHTML = '<tr><td class="muted">no topic is written into an Iceberg table by this broker</td></tr>'; return; }
  const rows = d.iceberg.map((t) => {
    const parts = "<table><tr><th class=\"num\">partition</th><th class=\"num\">lag (records)</th><th class=\"num\">lag (s)</th></tr>" +
      t.partitions.map((p) => `<tr><td class="num">${p.partition}</td><td class="num">${num(p.lag_records)}</td>
      <td class="num">${p.lag_seconds.toFixed(1)}</td></tr>`).join("") + "</table>";
    return `<tr class="table" data-topic="${esc(t.topic)}"><td>${details("i:" + t.topic, esc(t.table), parts)}</td><td>${esc(t.mode)}</td>
      <td class="num">${num(t.commits)}</td><td class="num table-lag">${num(t.lag_records)}</td><td class="num">${t.lag_seconds.toFixed(1)}</td></tr>`;
  }).join("");
  $("iceberg").innerHTML = `<tr><th>table</th><th>mode</th><th class="num">commits</th><th class="num">lag (records)</th><th class="num">lag (s)</th></tr>${rows}`;
}

function renderGroups(d) {
  if (!d.groups.length) { $("groups").innerHTML = '<tr><td class="muted">no consumer groups on this broker</td></tr>'; return; }
  const rows = d.groups.map((g) => {
    const members = g.members.length
      ? "<table><tr><th>member</th><th>client id</th><th>host</th></tr>" + g.members.map((m) =>
        `<tr><td>${esc(m.member_id)}</td><td>${esc(m.client_id)}</td><td>${esc(m.client_host)}</td></tr>`).join("") + "</table>"
      : '<p class="muted">no members</p>';
    const offsets = "<table><tr><th>topic</th><th class=\"num\">partition</th><th class=\"num\">committed</th><th class=\"num\">lag</th></tr>" +
      g.offsets.map((o) => `<tr><td>${esc(o.topic)}</td><td class="num">${o.partition}</td><td class="num">${num(o.committed)}</td>
      <td class="num lag">${num(o.lag)}</td></tr>`).join("") + "</table>";
    return `<tr class="group" data-group="${esc(g.group_id)}"><td>${details("g:" + g.group_id, esc(g.group_id), `<p><a href="#/group/${encodeURIComponent(g.group_id)}?type=${esc(g.type)}">members, lag, reset →</a></p>` + members + offsets)}</td>
      <td>${esc(g.type)}</td><td><span class="tag ${g.state === "Stable" ? "ok" : ""}">${esc(g.state)}</span></td>
      <td class="num">${g.members.length}</td><td class="num group-lag">${num(g.lag)}</td></tr>`;
  }).join("");
  $("groups").innerHTML = `<tr><th>group</th><th>type</th><th>state</th><th class="num">members</th><th class="num">lag</th></tr>${rows}`;
}
function drawChart(canvas, series) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  ctx.strokeStyle = "#e3e6ec"; ctx.beginPath(); ctx.moveTo(0, h - 0.5); ctx.lineTo(w, h - 0.5); ctx.stroke();
  for (const s of series) {
    const n = s.values.length;
    if (n < 2) continue;
    ctx.strokeStyle = s.color; ctx.lineWidth = 1.5; ctx.beginPath();
    s.values.forEach((v, i) => {
      const x = (i / (n - 1)) * (w - 2) + 1, y = h - 2 - (v / max) * (h - 6);
      i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
    });
    ctx.stroke();
  }
}
function renderCharts(d) {
  const showInternal = $("internal").checked;
  const topics = Object.entries(d.throughput.topics).filter(([t]) => showInternal || !t.startsWith("__")).sort();
  if (!topics.length) { $("charts").innerHTML = '<p class="muted">no traffic sampled yet</p>'; return; }
  $("charts").innerHTML = topics.map(([t, s]) => {
    const lastIn = s.bytes_in.at(-1) ?? 0, lastOut = s.bytes_out.at(-1) ?? 0, lastMsgs = s.messages_in.at(-1) ?? 0;
    return `<div class="chart"><div class="name">${esc(t)}</div>
      <div class="now">in ${bytes(Math.round(lastIn))}/s · out ${bytes(Math.round(lastOut))}/s · ${num(Math.round(lastMsgs))} msg/s</div>
      <canvas width="280" height="56" data-topic="${esc(t)}"></canvas></div>`;
  }).join("");
  for (const canvas of $("charts").querySelectorAll("canvas")) {
    const s = d.throughput.topics[canvas.dataset.topic];
    drawChart(canvas, [{values: s.bytes_in, color: "#2f6fde"}, {values: s.bytes_out, color: "#e8590c"}]);
  }
}
function renderOverview(d) {
  $("mode").textContent = d.mode;
  $("controller").textContent = d.controller_id;
  renderBrokers(d); renderCharts(d); renderTopics(d); renderGroups(d); renderIceberg(d);
  const pre = $("log"), atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.textContent = d.log.join("\n");
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}
async function refreshOverview(then) {
  try {
    last = await api("overview");
    $("cluster").textContent = last.cluster_id;
    $("node").textContent = last.node_id;
    $("updated").textContent = "updated " + new Date(last.now * 1000).toLocaleTimeString();
    $("error").textContent = "";
    then(last);
    document.body.dataset.loaded = "true";
  } catch (e) {
    $("error").textContent = "cannot reach the broker: " + e.message;
  }
}

// -- topics ---------------------------------------------------------------------------------------------------
function renderTopicList(d) {
  const showInternal = $("topics-internal").checked;
  $("topic-list").innerHTML = '<tr><th>topic</th><th class="num">partitions</th><th class="num">messages</th><th class="num">size (local)</th><th class="num">size (remote)</th></tr>' +
    d.topics.filter((t) => showInternal || !t.internal).map((t) => {
      const remote = remoteSize(t.partitions);
      return `<tr class="topic-row" data-topic="${esc(t.name)}"><td><a href="#/topic/${encodeURIComponent(t.name)}/messages">${esc(t.name)}</a></td>
      <td class="num">${t.partitions.length}</td><td class="num">${num(t.messages)}</td><td class="num">${bytes(t.size)}</td><td class="num">${remote}</td></tr>`;
    }).join("");
}
let topic = null;  // the open topic's /api/topic answer
async function showTopic(name, tab) {
  $("topic-name").textContent = name;
  for (const a of $("topic-tabs").querySelectorAll("a")) {
    a.href = `#/topic/${encodeURIComponent(name)}/${a.dataset.tab}`;
    a.classList.toggle("active", a.dataset.tab === tab);
  }
  for (const t of ["messages", "partitions", "configs", "actions"]) $("tab-" + t).hidden = t !== tab;
  if (!topic || topic.name !== name) {
    stopTail();
    $("messages").innerHTML = ""; shown = []; $("messages-info").textContent = ""; $("search-progress").textContent = "";
    $("produce-result").textContent = ""; $("configs-error").textContent = ""; $("configs-result").textContent = "";
  }
  try { topic = await api("topic?name=" + encodeURIComponent(name)); } catch (e) {
    for (const t of ["messages", "partitions", "configs", "actions"]) $("tab-" + t).hidden = true;
    topic = null; status(e.message); return;
  }
  const options = topic.partitions.map((p) => `<option value="${p.partition}">${p.partition}</option>`).join("");
  const keep = $("browse-partition").value;
  $("browse-partition").innerHTML = '<option value="">all</option>' + options;
  $("browse-partition").value = keep && topic.partitions.some((p) => String(p.partition) === keep) ? keep : "";
  $("produce-partition").innerHTML = options;
  $("partitions-count").value = topic.partitions.length + 1;
  if (tab === "messages" && !$("messages").innerHTML) browse();
  if (tab === "partitions") await renderPartitions();
  if (tab === "configs") renderConfigs();
  document.body.dataset.view = "topic-" + tab;
}
async function renderPartitions() {
  const d = last = await api("overview");  // sizes now (local and remote), not those of the last overview seen
  const local = Object.fromEntries(((d.topics.find((t) => t.name === topic.name) || {}).partitions || []).map((p) => [p.partition, p]));
  $("partitions").innerHTML = '<tr><th class="num">partition</th><th class="num">leader</th><th>replicas</th><th>isr</th><th class="num">log start</th><th class="num">high watermark</th><th class="num">messages</th><th class="num">size (local)</th><th class="num">size (remote)</th></tr>' +
    topic.partitions.map((p) => {
      const l = local[p.partition] || {};
      return `<tr class="partition" data-partition="${p.partition}"><td class="num">${p.partition}</td><td class="num">${p.leader}</td><td>${p.replicas.join(", ")}</td>
      <td>${p.isr.join(", ")}${p.isr.length < p.replicas.length ? ' <span class="tag bad">under-replicated</span>' : ""}</td>
      <td class="num">${num(p.log_start_offset)}</td><td class="num">${num(p.high_watermark)}</td><td class="num">${num(p.high_watermark - p.log_start_offset)}</td>
      <td class="num">${bytes(l.size)}</td><td class="num">${remoteSize([l])}</td></tr>`;
    }).join("");
}
function renderConfigs() {
  if (topic.configs.length && topic.configs[0].error) { $("configs").innerHTML = `<tr><td class="bad">${esc(topic.configs[0].error)}</td></tr>`; return; }
  $("configs").innerHTML = '<tr><th>config</th><th>value</th><th>source</th></tr>' + topic.configs.map((c) =>
    `<tr class="${c.source === "DYNAMIC_TOPIC_CONFIG" ? "set" : ""}"><td>${esc(c.name)}</td>
     <td>${c.read_only || c.sensitive || !session.write_enabled ? esc(c.sensitive ? "(sensitive)" : c.value)
       : `<input class="config-value" data-name="${esc(c.name)}" data-original="${esc(c.value ?? "")}" data-set="${c.source === "DYNAMIC_TOPIC_CONFIG"}" value="${esc(c.value ?? "")}">`}</td>
     <td class="muted">${esc(c.source)}</td></tr>`).join("");
  for (const input of $("configs").querySelectorAll("input.config-value")) {
    input.addEventListener("input", () => input.classList.toggle("changed", input.value !== input.dataset.original));
  }
}
async function saveConfigs() {
  const set = {}, del = [];
  for (const input of $("configs").querySelectorAll("input.config-value.changed")) {
    if (input.value === "" && input.dataset.set === "true") del.push(input.dataset.name); else set[input.dataset.name] = input.value;
  }
  if (!Object.keys(set).length && !del.length) { $("configs-result").textContent = "nothing changed"; return; }
  $("configs-error").textContent = "";
  const ok = await act(() => api("topic/configs", {name: topic.name, set, delete: del}), "configs-result", () => "saved");
  if (ok === undefined) { $("configs-error").textContent = $("configs-result").textContent; $("configs-result").textContent = ""; return; }
  topic = await api("topic?name=" + encodeURIComponent(topic.name));
  renderConfigs();
}

// -- messages -------------------------------------------------------------------------------------------------
async function browse() {
  stopTail();
  const q = new URLSearchParams({topic: topic.name, start: $("browse-start").value, value: $("browse-value").value,
                                 order: $("browse-order").value, limit: $("browse-limit").value});
  if ($("browse-partition").value !== "") q.set("partition", $("browse-partition").value);
  $("messages-info").textContent = "loading…";
  const started = performance.now();
  try {
    const d = await api("messages?" + q);
    shown = d.records;
    $("messages").innerHTML = RECORD_HEAD + recordRows(d.records);
    $("messages-info").textContent = `${d.records.length} records (${$("browse-order").value} first) in ${Math.round(performance.now() - started)} ms`;
    document.body.dataset.browsed = String(d.records.length);
  } catch (e) { $("messages-info").textContent = e.message; $("messages-info").className = "bad"; return; }
  $("messages-info").className = "muted";
}
async function search() {
  stopTail();
  const body = {topic: topic.name, filter: $("search-filter").value, max_scan: Number($("search-max").value),
                start: $("browse-start").value === "end" ? "beginning" : $("browse-start").value, value: $("browse-value").value,
                partition: $("browse-partition").value === "" ? null : Number($("browse-partition").value)};
  document.body.dataset.searched = "";
  let p;
  try { p = await api("search", body); } catch (e) { $("search-progress").textContent = e.message; $("search-progress").className = "bad"; return; }
  $("search-bar").hidden = false;
  while (true) {
    $("search-progress").className = "muted";
    $("search-progress").textContent = `scanned ${num(p.scanned)} of ${num(p.total)} records, ${p.matches.length} matching` + (p.done ? ` (done in ${p.elapsed_s} s)` : "…");
    $("search-bar").max = Math.max(p.total, 1); $("search-bar").value = p.scanned;
    if (p.done) break;
    await new Promise((r) => setTimeout(r, 300));
    p = await api("search");
  }
  if (p.error) { $("search-progress").textContent = p.error; $("search-progress").className = "bad"; }
  shown = p.matches;
  $("messages").innerHTML = RECORD_HEAD + recordRows(p.matches);
  $("messages-info").textContent = `${num(p.matches.length)} record${p.matches.length === 1 ? "" : "s"} matching “${body.filter}”` +
    (p.truncated ? " (the first ones only)" : "");
  document.body.dataset.searched = String(p.matches.length);
}
function stopTail() { tailing = null; $("tail-toggle").checked = false; }
async function tailLoop() {
  const me = {topic: topic.name, positions: null};
  tailing = me;
  $("messages").innerHTML = RECORD_HEAD;
  shown = [];
  $("messages-info").textContent = "tailing: new records appear at the top";
  delete document.body.dataset.tailPositions;
  while (tailing === me) {
    try {
      const q = new URLSearchParams({topic: me.topic});
      if (me.positions) q.set("positions", JSON.stringify(me.positions));
      const d = await api("tail?" + q);
      if (tailing !== me) break;
      me.positions = d.positions;
      document.body.dataset.tailPositions = JSON.stringify(d.positions);  // where the tail reads from now
      if (d.records.length) {
        const head = $("messages").querySelector("tr");
        d.records.reverse();
        shown = d.records.concat(shown).slice(0, 500);
        head.insertAdjacentHTML("afterend", recordRows(d.records, true));
        const rows = $("messages").querySelectorAll("tr.record");
        for (let i = 500; i < rows.length; i++) rows[i].remove();  // the page keeps the newest 500
        if (d.skipped) $("messages-info").textContent = `tailing: new records appear at the top (${num(d.skipped)} skipped to keep up)`;
        await new Promise((r) => setTimeout(r, 1000));  // at most one poll a second while records flow
      }
    } catch (e) { $("messages-info").textContent = "tail stopped: " + e.message; tailing = null; $("tail-toggle").checked = false; }
  }
}
async function produce() {
  const body = {topic: topic.name, partition: Number($("produce-partition").value || 0), key: $("produce-key").value || null,
                value: $("produce-value").value, headers: lines($("produce-headers").value)};
  await act(() => api("produce", body), "produce-result", (r) => `produced to partition ${r.partition} at offset ${r.offset}`);
}

// -- groups ---------------------------------------------------------------------------------------------------
async function showGroups() {
  try {
    const groups = await api("groups");
    $("group-list").innerHTML = groups.length ? '<tr><th>group</th><th>type</th><th>state</th><th>protocol</th><th class="num">coordinator</th></tr>' + groups.map((g) =>
      `<tr class="group-row" data-group="${esc(g.group_id)}"><td><a href="#/group/${encodeURIComponent(g.group_id)}?type=${esc(g.type)}">${esc(g.group_id)}</a></td><td>${esc(g.type)}</td>
       <td><span class="tag ${g.state === "Stable" ? "ok" : ""}">${esc(g.state)}</span></td><td>${esc(g.protocol_type)}</td><td class="num">${g.coordinator}</td></tr>`).join("")
      : '<tr><td class="muted">no groups you may describe</td></tr>';
  } catch (e) { status(e.message); }
}
const lagHistory = new Map();  // group (or group, topic, partition) -> lag samples while the page is open
async function showGroup(id, type) {
  $("group-name").textContent = id;
  let g;
  try { g = await api(`group?id=${encodeURIComponent(id)}&type=${encodeURIComponent(type)}`); } catch (e) { status(e.message); return; }
  $("group-state").textContent = g.state; $("group-state").className = "tag " + (g.state === "Stable" ? "ok" : "");
  $("group-lag").textContent = num(g.lag);
  // Lag over time: this broker's samples of the last minutes (when it coordinates the group) and now, or else
  // what this page saw since it opened.
  const server = g.history && g.history.lag.length ? g.history : null;
  const hist = server ? [...server.lag, g.lag] : (lagHistory.get(id) || []);
  if (!server) { hist.push(g.lag); if (hist.length > 120) hist.shift(); lagHistory.set(id, hist); }
  drawChart($("group-lag-chart"), [{values: hist, color: "#e8590c"}]);
  $("group-lag-span").textContent = server ? `last ${Math.round((Date.now() / 1000 - server.times[0]) / 60) || "<1"} min` : "since this page opened";
  document.body.dataset.lagSamples = String(hist.length);
  if (g.type === "streams") renderStreams(g);
  else $("group-members").innerHTML = g.members.length ? '<tr><th>member</th><th>client id</th><th>host</th><th>assignment</th></tr>' + g.members.map((m) =>
    `<tr><td>${esc(m.member_id)}${m.instance_id ? ` <span class="tag">${esc(m.instance_id)}</span>` : ""}</td><td>${esc(m.client_id)}</td><td>${esc(m.client_host)}</td>
     <td>${m.assignment.map((a) => `${esc(a.topic)}: ${a.partitions.join(", ")}`).join("<br>")}</td></tr>`).join("") : '<tr><td class="muted">no members</td></tr>';
  $("group-topology-section").hidden = g.type !== "streams";
  const serverParts = new Map((server ? server.partitions : []).map(([t, p, lags]) => [`${t}\u0000${p}`, lags]));
  for (const o of g.offsets) {  // lag of each partition over time
    const key = `${id}\u0000${o.topic}\u0000${o.partition}`, known = serverParts.get(`${o.topic}\u0000${o.partition}`);
    if (known) { lagHistory.set(key, [...known.map((v) => v ?? 0), o.lag ?? 0]); continue; }
    const h = lagHistory.get(key) || [];
    h.push(o.lag ?? 0); if (h.length > 120) h.shift(); lagHistory.set(key, h);
  }
  $("group-offsets").innerHTML = '<tr><th>topic</th><th class="num">partition</th><th class="num">committed</th><th class="num">end</th><th class="num">lag</th><th>lag over time</th></tr>' +
    g.offsets.map((o) => `<tr class="offset" data-topic="${esc(o.topic)}" data-partition="${o.partition}"><td>${esc(o.topic)}</td><td class="num">${o.partition}</td>
      <td class="num committed">${num(o.committed)}</td><td class="num">${num(o.end)}</td><td class="num lag">${num(o.lag)}</td>
      <td><canvas class="spark" width="160" height="22"></canvas></td></tr>`).join("");
  for (const row of $("group-offsets").querySelectorAll("tr.offset")) {
    const h = lagHistory.get(`${id}\u0000${row.dataset.topic}\u0000${row.dataset.partition}`) || [];
    drawChart(row.querySelector("canvas"), [{values: h, color: "#e8590c"}]);
  }
  if (!$("reset-topic").value && g.offsets.length) $("reset-topic").value = g.offsets[0].topic;
  document.body.dataset.groupLag = String(g.lag);
}
// A streams group: members by process with their tasks (subtopology_partition), the topology and its status.
function taskList(tasks) { return tasks.flatMap((t) => t.partitions.map((p) => `${t.subtopology}_${p}`)).join(", ") || "–"; }
function renderStreams(g) {
  $("group-members").innerHTML = g.members.length ? '<tr><th>process</th><th>member</th><th>client id</th><th>host</th><th class="num">epoch</th><th class="num">topology epoch</th>' +
    '<th>active tasks</th><th>standby tasks</th><th>warm-up tasks</th><th title="changelog end offset minus the member offset in it, as members report them">changelog lag</th></tr>' + g.members.map((m) => {
      const target = ["active", "standby", "warmup"].some((k) => taskList(m.target[k]) !== taskList(m.tasks[k]))
        ? `<br><span class="muted">target: ${["active", "standby", "warmup"].map((k) => `${k} ${taskList(m.target[k])}`).join("; ")}</span>` : "";
      const lag = m.task_lag.length ? m.task_lag.map((t) => `${esc(t.subtopology)}_${t.partition}: ${num(t.lag)}`).join("<br>") : '<span class="muted">not reported</span>';
      return `<tr class="streams-member" data-process="${esc(m.process_id)}"><td>${esc(m.process_id)}${m.endpoint ? ` <span class="tag">${esc(m.endpoint)}</span>` : ""}</td>
       <td>${esc(m.member_id)}${m.instance_id ? ` <span class="tag">${esc(m.instance_id)}</span>` : ""}</td><td>${esc(m.client_id)}</td><td>${esc(m.client_host)}</td>
       <td class="num">${m.member_epoch}</td><td class="num">${m.topology_epoch}</td><td class="active-tasks">${esc(taskList(m.tasks.active))}${target}</td>
       <td class="standby-tasks">${esc(taskList(m.tasks.standby))}</td><td class="warmup-tasks">${esc(taskList(m.tasks.warmup))}</td><td>${lag}</td></tr>`;
    }).join("") : '<tr><td class="muted">no members</td></tr>';
  const t = g.topology;
  $("group-topology-status").textContent = t.status; $("group-topology-status").className = "tag " + (t.ready ? "ok" : "bad");
  $("group-topology-epoch").textContent = t.epoch ?? "–";
  const names = (ts) => ts.map((x) => esc(x.name ?? x)).join("<br>") || "–";
  $("group-topology").innerHTML = '<tr><th>subtopology</th><th>source topics</th><th>repartition sink topics</th><th>changelog topics</th><th>repartition source topics</th></tr>' +
    t.subtopologies.map((s) => `<tr class="subtopology" data-id="${esc(s.id)}"><td>${esc(s.id)}</td><td>${names(s.source_topics)}</td><td>${names(s.repartition_sink_topics)}</td>
      <td>${names(s.changelog_topics)}</td><td>${names(s.repartition_source_topics)}</td></tr>`).join("");
}
function resetBody() {
  const [, id, type] = location.hash.match(/^#\/group\/([^?]*)(?:\?type=(\w+))?/) || [];
  return {group: decodeURIComponent(id || ""), type: type || "classic", topic: $("reset-topic").value, to: $("reset-to").value,
          value: $("reset-value").value};
}
function renderReset(rows) {
  $("reset-table").innerHTML = '<tr><th>topic</th><th class="num">partition</th><th class="num">current</th><th class="num">new</th><th class="num">lag after</th></tr>' +
    rows.map((r) => `<tr><td>${esc(r.topic)}</td><td class="num">${r.partition}</td><td class="num">${num(r.current)}</td><td class="num">${num(r.new)}</td><td class="num">${num(r.lag_after)}</td></tr>`).join("");
}

// -- security -------------------------------------------------------------------------------------------------
async function showSecurity() {
  try {
    const acls = await api("acls");
    $("acls-error").textContent = "";
    $("acls").innerHTML = '<tr><th>resource</th><th>name</th><th>pattern</th><th>principal</th><th>host</th><th>operation</th><th>permission</th><th></th></tr>' +
      acls.map((a, i) => `<tr><td>${esc(a.resource_type)}</td><td>${esc(a.resource_name)}</td><td>${esc(a.pattern_type)}</td><td>${esc(a.principal)}</td>
        <td>${esc(a.host)}</td><td>${esc(a.operation)}</td><td>${esc(a.permission_type)}</td>
        <td class="write"><button class="small danger" data-acl="${i}">delete</button></td></tr>`).join("");
    for (const b of $("acls").querySelectorAll("button[data-acl]")) {
      b.onclick = () => confirm("Delete this ACL?") && act(() => api("acl/delete", acls[Number(b.dataset.acl)])).then(showSecurity);
    }
  } catch (e) { $("acls").innerHTML = ""; $("acls-error").textContent = e.message; }
  try {
    const users = await api("users");
    $("users-error").textContent = "";
    $("users").innerHTML = users.length ? '<tr><th>user</th><th>mechanism</th><th class="num">iterations</th><th></th></tr>' + users.flatMap((u) => u.mechanisms.map((m) =>
      `<tr><td>${esc(u.user)}</td><td>${esc(m.mechanism)}</td><td class="num">${m.iterations}</td>
       <td class="write"><button class="small danger" data-user="${esc(u.user)}" data-mechanism="${esc(m.mechanism)}">delete</button></td></tr>`)).join("")
      : '<tr><td class="muted">no SCRAM users</td></tr>';
    for (const b of $("users").querySelectorAll("button[data-user]")) {
      b.onclick = () => confirm(`Delete ${b.dataset.mechanism} of ${b.dataset.user}?`) &&
        act(() => api("user/delete", {user: b.dataset.user, mechanism: b.dataset.mechanism})).then(showSecurity);
    }
  } catch (e) { $("users").innerHTML = ""; $("users-error").textContent = e.message; }
}

// -- routing --------------------------------------------------------------------------------------------------
const NAV = {overview: "overview", topics: "topics", topic: "topics", groups: "groups", group: "groups", security: "security"};
function show(view) {
  for (const v of document.querySelectorAll(".view")) v.hidden = v.id !== "view-" + view;
  for (const a of $("nav").querySelectorAll("a")) a.classList.toggle("active", a.dataset.view === NAV[view]);
  document.body.dataset.view = view;
}
let refreshView = () => {};  // the current view's refresh, polled every ``ms``
function poll(fn, ms) { clearInterval(timer); timer = null; refreshView = fn; fn(); if (ms) timer = setInterval(fn, ms); }
async function route() {
  if (!session) session = await api("session");
  document.body.classList.toggle("readonly", !session.write_enabled);
  if (session.cluster_id) { $("cluster").textContent = session.cluster_id; $("node").textContent = session.node_id; }
  $("who").innerHTML = session.principal ? `${esc(session.principal)}${session.write_enabled ? "" : ' <span class="tag">read-only</span>'}` +
    (session.login_required ? ' <button class="small" id="logout">log out</button>' : "") : "";
  if ($("logout")) $("logout").onclick = async () => { await api("logout", {}); session = null; location.hash = "#/"; route(); };
  if (session.login_required && !session.principal) { clearInterval(timer); stopTail(); show("login"); return; }
  const hash = location.hash || "#/";
  let m;
  status(flash, true); flash = "";
  if ((m = hash.match(/^#\/topic\/([^/]+)\/?(\w*)/))) {
    show("topic"); clearInterval(timer);
    const name = decodeURIComponent(m[1]), tab = m[2] || "messages";
    await showTopic(name, tab);
    if (tab === "partitions") timer = setInterval(() => showTopic(name, tab), 2000);  // sizes and offsets move
  } else if (hash.startsWith("#/topics")) {
    show("topics"); stopTail(); poll(() => refreshOverview(renderTopicList), 5000);
  } else if ((m = hash.match(/^#\/group\/([^?]+)(?:\?type=(\w+))?/))) {
    show("group"); stopTail(); $("reset-table").innerHTML = ""; $("reset-result").textContent = ""; $("reset-apply").disabled = true;
    const id = decodeURIComponent(m[1]), type = m[2] || "classic";
    poll(() => showGroup(id, type), 3000);
  } else if (hash.startsWith("#/groups")) {
    show("groups"); stopTail(); poll(showGroups, 5000);
  } else if (hash.startsWith("#/security")) {
    show("security"); stopTail(); poll(showSecurity, 0);
  } else {
    show("overview"); stopTail(); poll(() => refreshOverview(renderOverview), 2000);
  }
}

// -- wiring ---------------------------------------------------------------------------------------------------
document.addEventListener("toggle", (e) => {
  const id = e.target.dataset && e.target.dataset.id;
  if (id) e.target.open ? open.add(id) : open.delete(id);
}, true);
$("internal").addEventListener("change", () => last && renderOverview(last));
$("topics-internal").addEventListener("change", () => last && renderTopicList(last));
$("login-form").onsubmit = async (e) => {
  e.preventDefault();
  $("login-error").textContent = "";
  try {
    await api("login", {username: $("login-user").value, password: $("login-password").value});
    session = null; $("login-password").value = ""; await route();
  } catch (err) { $("login-error").textContent = err.message; }
};
$("create-form").onsubmit = async (e) => {
  e.preventDefault();
  const name = $("create-name").value;
  const ok = await act(() => api("topic/create", {name, partitions: Number($("create-partitions").value), replication_factor: Number($("create-rf").value),
                                                  configs: Object.fromEntries(lines($("create-configs").value))}), null, () => `created topic ${name}`);
  if (ok !== undefined) refreshOverview(renderTopicList);
};
$("browse-form").onsubmit = (e) => { e.preventDefault(); browse(); };
$("decode").onchange = () => { $("messages").innerHTML = RECORD_HEAD + recordRows(shown); };
$("search-form").onsubmit = (e) => { e.preventDefault(); search(); };
$("tail-toggle").onchange = () => { if ($("tail-toggle").checked) tailLoop(); else tailing = null; };
$("produce-form").onsubmit = (e) => { e.preventDefault(); produce(); };
$("configs-save").onclick = saveConfigs;
$("partitions-form").onsubmit = async (e) => {
  e.preventDefault();
  const count = Number($("partitions-count").value);
  if (await act(() => api("topic/partitions", {name: topic.name, count}), null, () => `${topic.name} now has ${count} partitions`) !== undefined) showTopic(topic.name, "actions");
};
$("delete-records-form").onsubmit = async (e) => {
  e.preventDefault();
  const partition = Number($("dr-partition").value), offset = Number($("dr-offset").value);
  if (!confirm(`Delete the records of ${topic.name}-${partition} before offset ${offset}?`)) return;
  await act(() => api("topic/delete-records", {name: topic.name, partition, offset}), null, (low) => `log start offset of ${topic.name}-${partition} is now ${low}`);
};
$("delete-topic-form").onsubmit = async (e) => {
  e.preventDefault();
  const name = topic.name;
  if (await act(() => api("topic/delete", {name, confirm: $("delete-confirm").value}), null, () => `deleted topic ${name}`) !== undefined) {
    $("delete-confirm").value = ""; topic = null; flash = `deleted topic ${name}`; location.hash = "#/topics";
  }
};
$("reset-form").onsubmit = async (e) => {
  e.preventDefault();
  $("reset-result").textContent = "";
  const rows = await act(() => api("group/reset-preview", resetBody()), "reset-result", () => "preview: nothing changed yet");
  if (rows !== undefined) { renderReset(rows); $("reset-apply").disabled = false; }
};
$("reset-apply").onclick = async () => {
  const body = resetBody();
  const rows = await act(() => api("group/reset", body), "reset-result", () => "offsets reset");
  if (rows !== undefined) { renderReset(rows); $("reset-apply").disabled = true; refreshView(); }
};
$("group-delete").onclick = async () => {
  const {group} = resetBody();
  if (!confirm(`Delete group ${group}?`)) return;
  if (await act(() => api("group/delete", {group}), null, () => `deleted group ${group}`) !== undefined) {
    flash = `deleted group ${group}`; location.hash = "#/groups";
  }
};
$("acl-form").onsubmit = async (e) => {
  e.preventDefault();
  await act(() => api("acl/create", {resource_type: $("acl-type").value, resource_name: $("acl-name").value, pattern_type: $("acl-pattern").value,
    principal: $("acl-principal").value, host: $("acl-host").value, operation: $("acl-operation").value, permission_type: $("acl-permission").value}), null, () => "ACL added");
  showSecurity();
};
$("user-form").onsubmit = async (e) => {
  e.preventDefault();
  await act(() => api("user/upsert", {user: $("user-name").value, mechanism: $("user-mechanism").value, password: $("user-password").value}), null, () => "credential set");
  $("user-password").value = ""; showSecurity();
};
window.addEventListener("hashchange", route);
route().catch((e) => { $("error").textContent = "cannot reach the broker: " + e.message; });
