// localmem memory browser: one page, hash routes, plain DOM and SVG, no third-party code.
"use strict";

const COLOURS = {
  RELATES_TO: "#7f8c8d", LEADS_TO: "#2e86de", OCCURRED_BEFORE: "#8e44ad", PREFERS_OVER: "#d35400",
  EXEMPLIFIES: "#16a085", CONTRADICTS: "#c0392b", REINFORCES: "#27ae60", INVALIDATED_BY: "#e67e22",
  EVOLVED_INTO: "#f1c40f", DERIVED_FROM: "#1abc9c", PART_OF: "#3867d6", SIMILAR_TO: "#a55eea",
  PRECEDED_BY: "#778ca3", DISCOVERED: "#eb3b5a",
};
const COMPONENTS = {
  vector: "#2e86de", keyword: "#e67e22", metadata: "#8e44ad", relation: "#16a085", tag: "#f1c40f",
  importance: "#c0392b", confidence: "#7f8c8d", recency: "#27ae60", exact: "#eb3b5a", context: "#3867d6",
  learned: "#6c5ce7",
};
let vocabulary = {memory_types: [], relation_types: [], authorable_relation_types: [], state_modes: []};

// -- small helpers ------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "style") el.style.cssText = value;  // CSSOM: allowed by the page's CSP, unlike the attribute
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value);
  }
  for (const child of children.flat()) el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return el;
}

class ApiError extends Error {}

async function api(path, options = {}) {
  const init = {method: options.method || "GET", headers: {Accept: "application/json"}};
  if (options.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch("/ui/api/" + path, init);
  if (response.status === 401) { location.href = "/ui/login"; throw new ApiError("Please sign in"); }
  const body = await response.json().catch(() => ({message: response.statusText}));
  if (!response.ok) throw new ApiError(body.message || `HTTP ${response.status}`);
  return body;
}

function query(params) {
  const out = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) value.forEach((v) => out.append(key, v));
    else if (value !== "" && value !== null && value !== undefined) out.set(key, value);
  }
  return out.toString();
}

function say(message, kind = "error") {
  const status = document.getElementById("status");
  status.textContent = message;
  status.className = kind === "info" ? "info" : "";
  status.hidden = !message;
}

function short(id) { return id ? id.slice(0, 8) : ""; }
// "1 memory", "2 memories": the count with the word in its number (localmem/text.py's plural).
function plural(count, word, many) { return `${count} ${count === 1 ? word : (many || word + "s")}`; }
const STATE_NAMES = {current: "current", superseded: "superseded", expired: "expired", archived: "archived",
                     not_yet_valid: "not yet valid"};
function stateName(status) { return STATE_NAMES[status] || status || ""; }
function when(ts) { return ts ? ts.replace("T", " ").slice(0, 16) + " UTC" : "—"; }
function memoryLink(id, text) { return h("a", {href: `#/memory/${id}`, "data-memory-id": id}, text || short(id)); }
function tagLink(tag) { return h("a", {class: "tag", href: `#/browse?${query({tag})}`}, tag); }

// Highlight the words recall matched (its keywords are stems, so a word that starts with one counts).
function highlighted(text, keywords) {
  const words = (keywords || []).filter((k) => k && k.length > 1)
    .map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  if (!words.length) return [text];
  const pattern = new RegExp(`\\b(?:${words.join("|")})[\\p{L}\\p{N}_]*`, "giu");
  const parts = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    parts.push(text.slice(last, match.index), h("mark", {}, match[0]));
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts;
}

function scoreBar(result) {
  const components = result.score_components || {};
  const names = Object.keys(COMPONENTS).filter((n) => typeof components[n] === "number" && components[n] > 0);
  const total = names.reduce((sum, n) => sum + components[n], 0) || 1;
  const width = Math.max(0, Math.min(1, result.final_score || 0)) * 100;
  const detail = names.map((n) => `${n} ${components[n].toFixed(2)}`).join(" · ");
  return h("div", {class: "row small"},
    h("span", {class: "scorebar", title: detail, role: "img", "aria-label": `score ${(result.final_score || 0).toFixed(3)}: ${detail}`},
      h("span", {style: `width:${width}%;display:flex`},
        names.map((n) => h("span", {style: `width:${(components[n] / total) * 100}%;background:${COMPONENTS[n]}`})))),
    h("span", {class: "mono"}, (result.final_score || 0).toFixed(3)),
    h("span", {class: "muted"}, detail));
}

function memoryCard(memory, extra = {}) {
  return h("article", {class: "card", "data-memory-id": memory.id},
    h("div", {class: "content"}, h("a", {href: `#/memory/${memory.id}`},
      extra.keywords ? highlighted(memory.content, extra.keywords) : memory.content)),
    h("div", {class: "meta"},
      memory.state && !memory.state.current ? h("span", {class: "pill state"}, stateName(memory.state.status)) : null,
      h("span", {class: "pill"}, memory.type),
      (memory.tags || []).map(tagLink),
      h("span", {}, `made ${when(memory.timestamp)}`),
      memory.updated_at !== memory.timestamp ? h("span", {}, `updated ${when(memory.updated_at)}`) : null,
      h("span", {}, `importance ${memory.importance}`),
      memory.context && memory.context !== "default" ? h("span", {}, `context ${memory.context}`) : null,
      memory.t_invalid ? h("span", {}, `invalid from ${when(memory.t_invalid)}`) : null),
    extra.after || null);
}

function setView(name, ...children) {
  document.querySelectorAll("nav a").forEach((a) =>
    a.toggleAttribute("aria-current", a.dataset.view === name) && a.setAttribute("aria-current", "page"));
  const view = document.getElementById("view");
  view.replaceChildren(...children.flat(2).filter((c) => c !== null && c !== undefined && c !== false));
  view.dataset.view = name;
}

function field(label, input) {
  const id = input.id || `f-${label.toLowerCase().replace(/\W+/g, "-")}`;
  input.id = id;
  return h("div", {class: input.dataset.wide ? "wide" : null}, h("label", {for: id}, label), input);
}

function select(name, options, value, blank) {
  return h("select", {name, id: `f-${name}`},
    blank !== undefined ? h("option", {value: ""}, blank) : null,
    options.map((o) => h("option", {value: o, selected: o === value}, o)));
}

// -- search -------------------------------------------------------------------

async function tagCompletion(input, list) {
  const last = input.value.split(",").pop().trim();
  if (!last) { list.replaceChildren(); return; }
  const found = await api(`tags?${query({prefix: last, limit: 12})}`).catch(() => ({tags: []}));
  const head = input.value.includes(",") ? input.value.slice(0, input.value.lastIndexOf(",") + 1) + " " : "";
  list.replaceChildren(...found.tags.map((t) => h("option", {value: head + t.tag}, `${t.tag} (${t.count})`)));
}

async function showSearch(params) {
  const contexts = await api("contexts").catch(() => ({contexts: []}));
  const tagList = h("datalist", {id: "tag-options"});
  const tags = h("input", {name: "tags", id: "f-tags", list: "tag-options", autocomplete: "off",
                          placeholder: "project, person:alice", value: params.get("tags") || ""});
  tags.addEventListener("input", () => tagCompletion(tags, tagList));
  const q = h("input", {name: "query", id: "f-query", type: "search", value: params.get("query") || "",
                       placeholder: "What do you remember about…", "data-wide": "1"});
  const form = h("form", {class: "filters", role: "search", onsubmit: (event) => {
    event.preventDefault();
    const data = new FormData(form);
    location.hash = "#/search?" + query(Object.fromEntries([...data.entries()].filter(([, v]) => v !== "")));
  }},
    field("Search", q),
    field("Tags (prefix)", tags), tagList,
    field("Time window", h("input", {name: "time_query", id: "f-time", placeholder: "last week, yesterday…",
                                      value: params.get("time_query") || ""})),
    field("Type", select("type", vocabulary.memory_types, params.get("type"), "any type")),
    // recall's context is the spec's ranking hint, not a filter (the browse page filters by context)
    field("Rank a context first", select("context", contexts.contexts.map((c) => c.context), params.get("context"),
                                         "no preference")),
    field("State", select("state_mode", vocabulary.state_modes, params.get("state_mode") || "current")),
    field("Follow relations", select("expand_relations", ["false", "true"], params.get("expand_relations") || "false")),
    field("Limit", h("input", {name: "limit", id: "f-limit", type: "number", min: 1, max: 50,
                                value: params.get("limit") || 10})),
    h("div", {}, h("button", {type: "submit", id: "search-go"}, "Search")));
  const results = h("section", {id: "results", "aria-live": "polite"});
  setView("search", h("h1", {}, "Search"), form, results);
  if (![...params.keys()].length) { q.focus(); results.append(h("p", {class: "muted"}, "Type a query, or filter by tags, time or type. A context ranks its memories first; Browse keeps to one.")); return; }
  const answer = await api("search?" + params.toString());
  const legend = h("div", {class: "legend"}, Object.entries(COMPONENTS).map(([n, c]) => h("span", {}, h("i", {style: `background:${c}`}), n)));
  results.replaceChildren(h("div", {},
    h("p", {class: "muted", id: "result-count"}, plural(answer.count, "result"),
      answer.state_filter && answer.state_filter.suppressed_count ? ` · ${answer.state_filter.suppressed_count} not current hidden` : "",
      answer.time_window ? ` · ${answer.time_window.expression || "window"}: ${when(answer.time_window.start)} → ${when(answer.time_window.end)}` : "",
      (answer.warnings || []).map((w) => ` · ${typeof w === "string" ? w : w.message || JSON.stringify(w)}`)),
    answer.count ? legend : null,
    answer.results.map((r) => memoryCard(r.memory, {keywords: answer.keywords, after: why(r)}))));
}

function why(r) {
  // A result reached through the graph names the edge it came by (``from``); others list their own edges.
  const via = (r.relations || []).map((rel) => rel.from
    ? h("span", {class: "via"}, "came via ", rel.type, " from ", memoryLink(rel.from))
    : h("span", {}, rel.type, " → ", rel.memory && rel.memory.id ? memoryLink(rel.memory.id, short(rel.memory.id)) : "?"));
  return h("div", {class: "why"}, scoreBar(r),
    h("div", {class: "meta"}, h("span", {}, `matched by ${r.match_type}`), via));
}

// -- browse -------------------------------------------------------------------

function treeList(nodes) {
  return h("ul", {class: "tree"}, nodes.map((n) => h("li", {},
    h("a", {href: `#/browse?${query({tag: n.tag})}`, title: n.tag}, n.name), h("span", {class: "count"}, n.count),
    n.children.length ? treeList(n.children) : null)));
}

// The chart's time axis: days for a short span, then weeks, months or years, so that a bar's
// place says when and a gap says nothing was stored then (the server counts per day).
const DAY_MS = 86400000;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

function binStart(t, unit) {
  const d = new Date(t);
  if (unit === "day") return t;
  if (unit === "week") return t - ((d.getUTCDay() + 6) % 7) * DAY_MS;  // its Monday
  if (unit === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  return Date.UTC(d.getUTCFullYear(), 0, 1);
}

function nextBin(t, unit) {
  const d = new Date(t);
  if (unit === "day") return t + DAY_MS;
  if (unit === "week") return t + 7 * DAY_MS;
  if (unit === "month") return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Date.UTC(d.getUTCFullYear() + 1, 0, 1);
}

function binLabel(t, unit, withYear) {
  const d = new Date(t);
  if (unit === "year") return String(d.getUTCFullYear());
  if (unit === "month") return `${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  return `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]}${withYear ? " " + d.getUTCFullYear() : ""}`;
}

function timeAxis(buckets) {
  const days = buckets.map((b) => Date.parse(b.start + "T00:00:00Z")).filter((t) => !Number.isNaN(t));
  const first = Math.min(...days), last = Math.max(...days);
  const span = (last - first) / DAY_MS + 1;
  const unit = span <= 62 ? "day" : span <= 3 * 365 ? "week" : span <= 30 * 365 ? "month" : "year";
  const bins = new Map();
  for (let t = binStart(first, unit); t <= last; t = nextBin(t, unit)) bins.set(t, 0);
  buckets.forEach((b, i) => { const k = binStart(days[i], unit); bins.set(k, (bins.get(k) || 0) + b.count); });
  return {unit, bins: [...bins.entries()].map(([start, count]) => ({start, end: nextBin(start, unit), count}))};
}

function timelineChart(buckets) {
  if (!buckets.length) return [null, h("p", {class: "muted"}, "No memories yet.")];
  const {unit, bins} = timeAxis(buckets);
  const width = 600, height = 170, left = 30, right = 10, top = 12, bottom = 24;
  const plotW = width - left - right, plotH = height - top - bottom;
  const from = bins[0].start, to = bins[bins.length - 1].end;
  const x = (t) => left + ((t - from) / (to - from)) * plotW;
  const max = Math.max(...bins.map((b) => b.count));
  const withYear = new Date(from).getUTCFullYear() !== new Date(to - 1).getUTCFullYear();
  const ticks = Math.min(bins.length, 6);
  const tickBins = [...new Set(Array.from({length: ticks}, (_, i) =>
    bins[Math.round((i * (bins.length - 1)) / Math.max(1, ticks - 1))]))];
  const chart = svg("svg", {class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", id: "timeline",
                            "data-unit": unit, "aria-label": `memories per ${unit}, ${binLabel(from, unit, true)} to ${binLabel(bins[bins.length - 1].start, unit, true)}`},
    svg("line", {class: "axis", x1: left, y1: top + plotH, x2: left + plotW, y2: top + plotH}),
    bins.filter((b) => b.count).map((b) => {
      const tall = Math.max(1, (plotH * b.count) / max), x0 = x(b.start), w = Math.max(1, x(b.end) - x0 - 1);
      return svg("rect", {x: x0, y: top + plotH - tall, width: w, height: tall},
        svg("title", {}, `${unit === "day" ? "" : unit + " of "}${binLabel(b.start, unit, true)}: ${plural(b.count, "memory", "memories")}`));
    }),
    tickBins.flatMap((b, i) => [
      svg("line", {class: "tick", x1: x(b.start), y1: top + plotH, x2: x(b.start), y2: top + plotH + 4}),
      svg("text", {x: x(b.start), y: height - 6,
                   "text-anchor": i === 0 ? "start" : i === tickBins.length - 1 ? "end" : "middle"},
          binLabel(b.start, unit, i === 0 || (withYear && i === tickBins.length - 1)))]),
    svg("text", {x: left - 4, y: top + 8, "text-anchor": "end"}, String(max)),
    svg("text", {x: left - 4, y: top + plotH, "text-anchor": "end"}, "0"));
  return [unit, chart];
}

async function showBrowse(params) {
  const limit = 20, offset = Number(params.get("offset") || 0);
  const filters = {tag: params.get("tag") || "", context: params.get("context") || ""};
  const [page, tree, contexts, timeline] = await Promise.all([
    api(`memories?${query({...filters, limit, offset})}`), api("tag-tree"), api("contexts"), api("timeline?unit=day")]);
  const here = (extra) => `#/browse?${query({...filters, ...extra})}`;
  const [unit, chart] = timelineChart(timeline.buckets);
  const title = filters.tag ? `Tag ${filters.tag}` : filters.context ? `Context ${filters.context}` : "Recent memories";
  setView("browse", h("h1", {}, title),
    h("div", {class: "columns"},
      h("aside", {},
        h("h2", {}, "Tags"), tree.tree.length ? treeList(tree.tree) : h("p", {class: "muted"}, "No tags."),
        h("h2", {}, "Contexts"), h("ul", {class: "plain"}, contexts.contexts.map((c) => h("li", {},
          h("a", {href: `#/browse?${query({context: c.context})}`}, c.context), h("span", {class: "count"}, c.count))))),
      h("section", {},
        h("h2", {}, unit ? `Memories per ${unit}` : "Memories over time"),
        chart,
        filters.tag || filters.context ? h("p", {}, h("a", {href: "#/browse"}, "← all memories")) : null,
        h("div", {id: "memory-list"}, page.memories.map((m) => memoryCard(m))),
        h("div", {class: "row"},
          offset > 0 ? h("a", {href: here({offset: Math.max(0, offset - limit)}), id: "prev-page"}, "← newer") : null,
          h("span", {class: "muted"}, page.total !== undefined ? `${offset + 1}–${offset + page.count} of ${page.total}`
                                                              : `${offset + 1}–${offset + page.count}`),
          page.has_more ? h("a", {href: here({offset: offset + limit}), id: "next-page"}, "older →") : null))));
}

// -- a memory's page ----------------------------------------------------------

function edgeList(edges, direction, memoryId, reload) {
  if (!edges.length) return h("p", {class: "muted"}, "none");
  return h("ul", {class: "plain", id: `edges-${direction}`}, edges.map((e) => {
    const [from, to] = direction === "outgoing" ? [memoryId, e.memory_id] : [e.memory_id, memoryId];
    return h("li", {class: "row"},
      h("span", {class: "pill", style: `border-left:4px solid ${COLOURS[e.type] || "#888"}`}, e.type),
      h("span", {class: "muted small"}, e.strength.toFixed(2)),
      memoryLink(e.memory_id, e.summary), h("span", {class: "muted small mono"}, short(e.memory_id)),
      h("button", {type: "button", class: "quiet small", title: "remove this edge", onclick: async () => {
        await act(() => api("links", {method: "DELETE", body: {memory1_id: from, memory2_id: to, type: e.type}}),
                  "Edge removed", reload);
      }}, "unlink"));
  }));
}

async function act(work, done, then) {
  try { await work(); if (then) await then(); say(done, "info"); }
  catch (error) { say(error.message); }
}

async function showMemory(id) {
  const page = await api(`memories/${encodeURIComponent(id)}`);
  const m = page.memory;
  const reload = () => route();
  const state = m.state || {};
  const content = h("textarea", {name: "content", id: "edit-content"}, m.content);
  const tags = h("input", {name: "tags", id: "edit-tags", value: (m.tags || []).join(", ")});
  const importance = h("input", {name: "importance", id: "edit-importance", type: "number", step: "0.05", value: m.importance});
  const type = select("type", vocabulary.memory_types, m.type);
  type.id = "edit-type";
  const edit = h("form", {id: "edit", class: "filters", onsubmit: (event) => {
    event.preventDefault();
    act(() => api(`memories/${m.id}`, {method: "PATCH", body: {
      content: content.value, type: type.value, importance: Number(importance.value),
      tags: tags.value.split(",").map((t) => t.trim()).filter(Boolean)}}), "Saved", reload);
  }}, h("div", {class: "wide"}, h("label", {for: "edit-content"}, "Content"), content),
    field("Tags (comma-separated)", tags), field("Importance (0–1)", importance), field("Type", type),
    h("div", {}, h("button", {type: "submit", id: "save"}, "Save")));
  const successor = h("textarea", {id: "supersede-content", placeholder: "The new version, or an existing memory's id"});
  const supersede = h("form", {id: "supersede", onsubmit: (event) => {
    event.preventDefault();
    act(async () => { const r = await api("supersede", {method: "POST", body: {old_id: m.id, new_content: successor.value}});
                      location.hash = `#/memory/${r.new_id || r.memory_id || m.id}`; }, "Superseded");
  }}, h("label", {for: "supersede-content"}, "Replace with"), successor, h("button", {type: "submit"}, "Supersede"));
  const target = h("input", {id: "link-target", placeholder: "other memory's id"});
  const relation = select("relation", vocabulary.authorable_relation_types, "RELATES_TO");
  relation.id = "link-type";
  const strength = h("input", {id: "link-strength", type: "number", step: "0.05", min: 0, max: 1, value: 0.5});
  const link = h("form", {id: "link", class: "filters", onsubmit: (event) => {
    event.preventDefault();
    act(() => api("links", {method: "POST", body: {memory1_id: m.id, memory2_id: target.value.trim(),
                                                   type: relation.value, strength: Number(strength.value)}}), "Linked", reload);
  }}, field("Link to", target), field("Relation", relation), field("Strength", strength),
    h("div", {}, h("button", {type: "submit"}, "Link")));
  const confirmBox = h("div", {class: "confirm", hidden: true, id: "confirm-delete"},
    h("p", {}, "Delete this memory with its edges? This cannot be undone."),
    h("div", {class: "row"},
      h("button", {type: "button", class: "danger", id: "delete-yes", onclick: () =>
        act(async () => { await api(`memories/${m.id}`, {method: "DELETE"}); location.hash = "#/browse"; }, "Deleted")}, "Yes, delete"),
      h("button", {type: "button", class: "quiet", onclick: () => { confirmBox.hidden = true; }}, "Cancel")));
  const metadata = Object.entries(m.metadata || {});
  setView("memory",
    h("h1", {}, "Memory ", h("span", {class: "mono muted"}, short(m.id)), " ",
      h("span", {class: `pill ${state.current ? "current" : ""}`, id: "state"}, stateName(state.status))),
    h("article", {class: "card"}, h("div", {class: "content", id: "memory-content"}, m.content),
      h("div", {class: "meta"}, h("span", {class: "pill"}, m.type), (m.tags || []).map(tagLink))),
    state.superseded_by ? h("p", {}, state.status === "superseded" ? "Superseded: recall shows " : "Recall shows ",
      memoryLink(state.superseded_by), " in its place.") : null,
    h("table", {}, h("tbody", {},
      [["id", h("span", {class: "mono"}, m.id)], ["made", when(m.timestamp)], ["updated", when(m.updated_at)],
       ["last accessed", when(m.last_accessed)], ["valid", `${when(m.t_valid)} → ${m.t_invalid ? when(m.t_invalid) : "open"}`],
       ["importance", m.importance], ["confidence", m.confidence], ["context", m.context], ["archived", m.archived ? "yes" : "no"],
       ...metadata.map(([k, v]) => [`metadata.${k}`, typeof v === "string" ? v : JSON.stringify(v)])]
        .map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))))),
    h("p", {}, h("a", {href: `#/graph/${m.id}`, id: "open-graph"}, "Show its neighbourhood as a graph →")),
    h("h2", {}, "Supersession chain"),
    page.chain.length ? h("ol", {class: "chain", id: "chain"}, page.chain.map((c) => h("li", {
      class: [c.this ? "this" : "", c.current ? "current-version" : ""].join(" ")},
      c.this ? c.summary : memoryLink(c.id, c.summary), " ",
      h("span", {class: `pill ${c.current ? "current" : ""}`}, c.current ? "current" : stateName(c.status)), " ",
      h("span", {class: "muted small"}, when(c.timestamp)))))
      : h("p", {class: "muted", id: "chain"}, "No older or newer versions."),
    h("h2", {}, "Edges out"), edgeList(m.edges.outgoing, "outgoing", m.id, reload),
    h("h2", {}, "Edges in"), edgeList(m.edges.incoming, "incoming", m.id, reload),
    h("h2", {}, "Most similar"),
    page.similar.length ? h("ul", {class: "plain", id: "similar"}, page.similar.map((s) => h("li", {},
      memoryLink(s.id, s.summary), h("span", {class: "muted small"}, ` ${s.type} · ${s.score.toFixed(3)}`))))
      : h("p", {class: "muted"}, "Nothing similar."),
    h("h2", {}, "Change it"),
    h("details", {open: true}, h("summary", {}, "Edit"), edit),
    h("details", {}, h("summary", {}, "Supersede"), supersede),
    h("details", {}, h("summary", {}, "Link"), link),
    h("p", {}, h("button", {type: "button", class: "danger", id: "delete", onclick: () => {
      confirmBox.hidden = false; document.getElementById("delete-yes").focus(); }}, "Delete…")),
    confirmBox);
}

// -- graph --------------------------------------------------------------------

function layout(nodes, edges, width, height) {
  // A small force simulation: repulsion between nodes, springs along edges, a pull to the middle.
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  nodes.forEach((n, i) => {
    const angle = (2 * Math.PI * i) / nodes.length, radius = 40 + 60 * (n.depth || 0) + (i % 3) * 10;
    n.x = width / 2 + radius * Math.cos(angle); n.y = height / 2 + radius * Math.sin(angle);
  });
  if (nodes.length === 1) return;
  const links = edges.map((e) => [index.get(e.source), index.get(e.target)]).filter(([a, b]) => a !== undefined && b !== undefined);
  for (let step = 0; step < 300; step++) {
    const cool = 1 - step / 300;
    for (let i = 0; i < nodes.length; i++) {
      for (let j = i + 1; j < nodes.length; j++) {
        const a = nodes[i], b = nodes[j];
        let dx = a.x - b.x, dy = a.y - b.y; const d2 = Math.max(dx * dx + dy * dy, 1);
        const force = 6000 / d2; const d = Math.sqrt(d2); dx /= d; dy /= d;
        a.x += dx * force * cool; a.y += dy * force * cool; b.x -= dx * force * cool; b.y -= dy * force * cool;
      }
    }
    for (const [i, j] of links) {
      const a = nodes[i], b = nodes[j];
      const dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1, pull = (d - 140) * 0.05 * cool;
      a.x += (dx / d) * pull; a.y += (dy / d) * pull; b.x -= (dx / d) * pull; b.y -= (dy / d) * pull;
    }
    for (const n of nodes) {
      n.x += (width / 2 - n.x) * 0.01 * cool; n.y += (height / 2 - n.y) * 0.01 * cool;
      n.x = Math.min(width - 20, Math.max(20, n.x)); n.y = Math.min(height - 20, Math.max(20, n.y));
    }
  }
}

const LABEL_CHARS = 24, LABEL_CHAR_W = 6.2, LABEL_H = 13;  // 11px text, measured roughly

// Labels that do not cover one another: each node's (the centre's first, then by importance)
// goes below, above, right or left of it, wherever it overlaps no label or node placed so
// far; a node with no free place keeps its name in its tooltip only.
function placeLabels(nodes, center) {
  const boxes = nodes.map((n) => ({x: n.x - n.r, y: n.y - n.r, w: 2 * n.r, h: 2 * n.r}));
  const clear = (b) => boxes.every((o) => b.x + b.w <= o.x || o.x + o.w <= b.x || b.y + b.h <= o.y || o.y + o.h <= b.y);
  const order = [...nodes].sort((a, b) => (b.id === center) - (a.id === center) || (b.importance || 0) - (a.importance || 0));
  for (const n of order) {
    const w = n.label.textContent.length * LABEL_CHAR_W;
    const spots = [[n.x, n.y + n.r + 12, "middle", -w / 2], [n.x, n.y - n.r - 4, "middle", -w / 2],
                   [n.x + n.r + 4, n.y + 4, "start", 0], [n.x - n.r - 4, n.y + 4, "end", -w]];
    const spot = spots.find(([x, y, , dx]) => clear({x: x + dx, y: y - LABEL_H + 3, w, h: LABEL_H}));
    n.label.style.display = spot ? "" : "none";
    if (!spot) continue;
    const [x, y, anchor, dx] = spot;
    n.label.setAttribute("x", x); n.label.setAttribute("y", y); n.label.setAttribute("text-anchor", anchor);
    boxes.push({x: x + dx, y: y - LABEL_H + 3, w, h: LABEL_H});
  }
}

function graphView(nodes, edges, center) {
  const width = 800, height = 460;
  layout(nodes, edges, width, height);
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const used = [...new Set(edges.map((e) => e.type))].sort();
  // One arrowhead per edge colour: an edge points from memory1 to memory2 (A -[LEADS_TO]-> B).
  const defs = svg("defs", {}, used.map((t) => svg("marker", {id: `arrow-${t}`, viewBox: "0 0 10 10", refX: 10, refY: 5,
                                                              markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"},
    svg("path", {d: "M0,0 L10,5 L0,10 z", fill: COLOURS[t] || "#888"}))));
  const lines = edges.map((e) => ({e, el: svg("line", {stroke: COLOURS[e.type] || "#888", "marker-end": `url(#arrow-${e.type})`,
                                                      "data-source": e.source, "data-target": e.target},
    svg("title", {}, `${(byId.get(e.source) || {}).summary || "?"} -[${e.type}]-> ${(byId.get(e.target) || {}).summary || "?"}`))}));
  const place = () => {
    for (const {e, el} of lines) {
      const a = byId.get(e.source), b = byId.get(e.target);
      const dx = b.x - a.x, dy = b.y - a.y, d = Math.sqrt(dx * dx + dy * dy) || 1;
      // from the edge of one circle to the edge of the other, so the arrowhead shows
      el.setAttribute("x1", a.x + (dx / d) * a.r); el.setAttribute("y1", a.y + (dy / d) * a.r);
      el.setAttribute("x2", b.x - (dx / d) * (b.r + 2)); el.setAttribute("y2", b.y - (dy / d) * (b.r + 2));
    }
    for (const n of nodes) { n.circle.setAttribute("cx", n.x); n.circle.setAttribute("cy", n.y); }
    placeLabels(nodes, center);
  };
  const root = svg("svg", {class: "graph", viewBox: `0 0 ${width} ${height}`, id: "graph", role: "img",
                           "aria-label": `${plural(nodes.length, "memory", "memories")}, ${plural(edges.length, "edge")}`});
  let dragging = null, moved = false;
  const point = (event) => { const box = root.getBoundingClientRect();
    return [((event.clientX - box.left) / box.width) * width, ((event.clientY - box.top) / box.height) * height]; };
  for (const n of nodes) {
    n.r = 6 + 8 * (n.importance || 0.5);
    n.circle = svg("circle", {r: n.r, class: n.id === center ? "center" : "", tabindex: 0, "data-memory-id": n.id,
                              role: "link", "aria-label": n.summary},
      svg("title", {}, `${n.summary} (${n.type})`));
    n.circle.addEventListener("pointerdown", (event) => { dragging = n; moved = false; root.setPointerCapture(event.pointerId); });
    n.circle.addEventListener("keydown", (event) => { if (event.key === "Enter") location.hash = `#/memory/${n.id}`; });
    n.label = svg("text", {"text-anchor": "middle", "data-memory-id": n.id},
      n.summary.length > LABEL_CHARS ? n.summary.slice(0, LABEL_CHARS - 1) + "…" : n.summary);
  }
  root.addEventListener("pointermove", (event) => { if (!dragging) return; moved = true; [dragging.x, dragging.y] = point(event); place(); });
  // The pointer is captured by the drawing, so a click (press and release without moving) opens the node here.
  root.addEventListener("pointerup", () => { if (dragging && !moved) location.hash = `#/memory/${dragging.id}`; dragging = null; });
  root.append(defs, ...lines.map((l) => l.el), ...nodes.map((n) => n.circle), ...nodes.map((n) => n.label));
  place();
  return [root, h("div", {class: "legend"}, used.map((t) => h("span", {}, h("i", {style: `background:${COLOURS[t] || "#888"}`}), t)),
    edges.length ? h("span", {class: "muted"}, "arrows point from a memory to the one it names (A → LEADS_TO → B)") : null)];
}

async function showGraph(id, params) {
  if (!id) {
    const hubs = await api("hubs?limit=30");
    setView("graph", h("h1", {}, "Most connected memories"),
      hubs.nodes.length ? graphView(hubs.nodes, hubs.edges, null) : h("p", {class: "muted"}, "No edges yet."),
      h("ol", {id: "hubs"}, hubs.nodes.map((n) => h("li", {}, memoryLink(n.id, n.summary), h("span", {class: "count"}, plural(n.degree, "edge"))))));
    return;
  }
  const depth = Number(params.get("depth") || 1);
  const graph = await api(`graph/${encodeURIComponent(id)}?depth=${depth}`);
  const depthSelect = select("depth", ["1", "2", "3"], String(depth));
  depthSelect.addEventListener("change", () => { location.hash = `#/graph/${id}?depth=${depthSelect.value}`; });
  setView("graph", h("h1", {}, "Neighbourhood of ", memoryLink(id)),
    h("div", {class: "row"}, h("label", {for: "f-depth"}, "Depth"), depthSelect,
      h("span", {class: "muted small"}, `${plural(graph.nodes.length, "memory", "memories")}, ${plural(graph.edges.length, "edge")} · drag to move, click to open`,
        (graph.warnings || []).map((w) => ` · ${w}`))),
    graphView(graph.nodes, graph.edges, id));
}

// -- health -------------------------------------------------------------------

async function showHealth() {
  const report = await api("health");
  const s = report.stats;
  const counts = (o) => Object.entries(o || {}).map(([k, v]) => `${k} ${v}`).join(", ") || "—";
  const rows = [
    ["database", `${s.path} (${(s.file_size_bytes / 1024).toFixed(0)} KiB, schema ${s.schema_version}/${s.latest_schema_version})`],
    ["embedder", `${s.embedder.name}${s.embedder.dimensions ? `, ${s.embedder.dimensions} dimensions` : ""}${s.embedder.error ? ` — ${s.embedder.error}` : ""}`],
    ["memories", `${s.memory_count} (${s.state_counts.current} current, ${s.state_counts.not_current} hidden by recall)`],
    ["indexes", `${s.fts_count} full-text, ${s.embedding_count} embeddings, ${s.vector_count} vectors — ${s.indexes_agree ? "agree" : "DISAGREE"}`],
    ["edges", `${s.edge_count} (${counts(s.edge_types)})`], ["types", counts(s.types)], ["contexts", counts(s.contexts)],
    ["time span", s.oldest ? `${when(s.oldest)} → ${when(s.newest)}` : "—"],
    ["top tags", s.top_tags.map((t) => `${t.tag} ${t.count}`).join(", ") || "—"],
  ];
  setView("health", h("h1", {}, "Health"),
    h("table", {id: "stats"}, h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v))))),
    h("h2", {}, `Doctor: ${report.problem_count ? plural(report.problem_count, "problem") : "no problems"}`),
    h("ul", {class: "plain", id: "checks"}, report.checks.map((c) => h("li", {},
      h("span", {class: c.skipped ? "muted" : c.ok ? "check-ok" : `check-${c.severity}`},
        c.skipped ? "skipped " : c.ok ? "ok " : `${c.severity} `), c.ok ? c.description : c.message || c.description))));
}

// -- routing and keys ---------------------------------------------------------

async function route() {
  const [path, search] = (location.hash.slice(1) || "/search").split("?");
  const params = new URLSearchParams(search || "");
  const parts = path.split("/").filter(Boolean);
  say("");
  try {
    if (parts[0] === "browse") await showBrowse(params);
    else if (parts[0] === "memory" && parts[1]) await showMemory(parts[1]);
    else if (parts[0] === "graph") await showGraph(parts[1], params);
    else if (parts[0] === "health") await showHealth();
    else await showSearch(params);
  } catch (error) {
    say(error.message);
  }
  document.body.dataset.ready = location.hash;  // tests wait for this
}

function setTheme(theme) {
  document.documentElement.dataset.theme = theme;
  try { localStorage.setItem("localmem-theme", theme); } catch (_) { /* private mode */ }
}

document.addEventListener("keydown", (event) => {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName);
  if (event.key === "Escape") { say(""); if (typing) event.target.blur(); return; }
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "/") { event.preventDefault(); if (!document.getElementById("f-query")) location.hash = "#/search"; else document.getElementById("f-query").focus(); }
  if (event.key === "t") document.getElementById("theme").click();
});

document.addEventListener("DOMContentLoaded", async () => {
  let saved = null;
  try { saved = localStorage.getItem("localmem-theme"); } catch (_) { /* private mode */ }
  if (saved) document.documentElement.dataset.theme = saved;
  document.getElementById("theme").addEventListener("click", () => {
    const dark = document.documentElement.dataset.theme === "dark" ||
      (!document.documentElement.dataset.theme && matchMedia("(prefers-color-scheme: dark)").matches);
    setTheme(dark ? "light" : "dark");
  });
  vocabulary = await api("vocabulary").catch((error) => { say(error.message); return vocabulary; });
  window.addEventListener("hashchange", route);
  route();
});
